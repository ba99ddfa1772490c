"""All settings in one object, from ``DOCLAKE_*`` environment variables and the command line.

Built once, in infra, and handed down: the handlers receive the part they need
(``ExtractConfig``), never the environment.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from extract.context import ExtractConfig
from extract.models.config import ModelConfig
from lake.partitions import AFTER_RUN_MIN_FILES

__all__ = ["Settings"]


class Settings(BaseSettings, ModelConfig):
    """The model settings (``ModelConfig``: API key, models, retries, rendering, the simulated
    provider) are inherited, so their defaults live in one place."""

    model_config = SettingsConfigDict(env_prefix="DOCLAKE_", extra="ignore")

    home: Path = Field(Path(".doclake"), description="Where the embedded runtime keeps state.")
    lake_uri: str | None = Field(None, description="Lake root; default <home>/lake.")

    pages_per_unit: int = Field(5, ge=1, description="Pages per unit of work.")
    text_pages_at_split: int = Field(20, ge=0, description="Pages of a PDF whose text layer is "
                                     "read while the split has it open (whole units; 0: none).")
    concurrency: int = Field(64, ge=1, description="Messages handled at once.")
    cpu_workers: int = Field(default_factory=lambda: os.cpu_count() or 1, ge=1,
                             description="Processes for CPU work (parsing) in each of the "
                             "two long lanes, OCR and documents (infra.local.cpu_lanes); "
                             "one more for short calls, and one for a small document's OCR "
                             "page that would wait behind a larger scan's.")
    poll_interval_s: float = Field(5.0, gt=0, description="Poller period.")
    no_progress_timeout_s: float = Field(1800.0, gt=0,
                                         description="A job with no progress this long fails.")
    visibility_timeout_s: float = Field(300.0, gt=0, description="Hide a received message.")
    max_receives: int = Field(5, ge=1, description="Deliveries before the dead-letter queue.")
    event_flush_s: float = Field(0.02, ge=0, description="Average least time between two event "
                                 "flushes once ten went back to back (a quiet run flushes at "
                                 "once; a busy one batches).")
    event_relaxed_flush_s: float = Field(0.1, ge=0, description="Under load, least time between "
                                         "two flush starts while no waiting handler holds a "
                                         "worker slot (fuller batches, fewer files; an idle run "
                                         "flushes at once).")
    event_saturated_flush_s: float = Field(0.3, ge=0, description="The same, the poller's "
                                           "commits included, while every worker slot is taken "
                                           "or CPU calls wait for a process: what those events "
                                           "hold back would wait anyway, so a long run writes "
                                           "fewer, fuller files; the shorter wait is back the "
                                           "moment that ends.")
    compact_after_run_min_files: int = Field(
        AFTER_RUN_MIN_FILES, ge=1, description="A run ends by compacting the lake's partitions "
        "that hold this many event files or more (lake.partitions.AFTER_RUN_MIN_FILES: fewer "
        "cost a query milliseconds; `doclake lake compact` merges any).")
    max_file_bytes: int = Field(512 * 1024 * 1024, ge=1, description="Largest accepted file.")
    max_pages: int = Field(10_000, ge=1, description="Most pages accepted in one document.")
    split_timeout_s: float = Field(60.0, gt=0, description="Time limit to open and count pages.")
    read_timeout_s: float = Field(120.0, gt=0, description="Time limit to read one unit.")
    password: SecretStr | None = Field(None, description="Password for encrypted PDFs.")
    reader: str = Field("auto", description="Who reads pages: auto (text layer, then OCR), "
                        "text, ocr, gemini, simulated.")
    convert_concurrency: int = Field(2, ge=1, description="Office conversions (LibreOffice "
                                     "processes) at once.")
    read_concurrency: int | None = Field(None, ge=1, description="Read messages handled at "
                                         "once (a reserved concurrency for the read stage, as "
                                         "on AWS); default: up to `concurrency`.")
    convert_timeout_s: float = Field(120.0, gt=0, description="Time limit of one Office "
                                     "conversion; its whole process tree is killed after it.")
    max_converted_bytes: int = Field(256 * 1024**2, ge=1,
                                     description="Largest PDF a conversion may produce.")
    max_inflated_bytes: int = Field(512 * 1024**2, ge=1, description="Most bytes an Office "
                                    "file's XML parts may inflate to (too_large past it).")
    allow_hard_links: bool = Field(False, description="Read a file with more than one name "
                                   "(a hard link) when every one of its names is inside the "
                                   "folders given; refused (skipped, said why) by default.")
    max_sheet_cells: int = Field(5_000_000, ge=1, description="Largest sheet grid (rows x "
                                 "columns from A1).")
    max_sheet_chars: int = Field(50_000_000, ge=1, description="Longest text of one sheet.")
    max_parse_memory_bytes: int = Field(2 * 1024**3, ge=16 * 1024**2, description="Memory a "
                                        "workbook, CSV or decryption may take in its worker.")
    max_render_pixels: int = Field(12_000_000, ge=1, description="Most pixels of a page "
                                   "rendered for OCR (rendered smaller rather than larger).")
    max_image_pixels: int = Field(250_000_000, ge=1, description="A page with an image larger "
                                  "than this is not rendered (page_too_large).")
    ocr_dpi: int = Field(300, ge=72, le=600, description="Resolution pages are rendered at "
                         "for OCR.")
    max_image_frames: int = Field(1000, ge=1, description="Most frames (pages) of one image "
                                  "file, a multi-page TIFF (too_many_frames past it).")

    fields_min_confidence: float = Field(0.0, ge=0, le=1, description="Field values whose "
                                         "confidence (the rules' calibrated probability; 0.05 "
                                         "for a flagged LLM value) is below this are not "
                                         "reported; values without one are kept. 0 is the floor "
                                         "chosen from the calibration (`doclake fields cv "
                                         "--calibration`).")

    @property
    def lake(self) -> str:
        return self.lake_uri or str(self.home / "lake")

    def extract_config(self) -> ExtractConfig:
        return ExtractConfig(
            pages_per_unit=self.pages_per_unit,
            text_pages_at_split=self.text_pages_at_split,
            max_file_bytes=self.max_file_bytes,
            max_pages=self.max_pages,
            split_timeout_s=self.split_timeout_s,
            read_timeout_s=self.read_timeout_s,
            no_progress_timeout_s=self.no_progress_timeout_s,
            password=self.password,
            reader=self.reader,
            models=ModelConfig(**{name: getattr(self, name) for name in ModelConfig.model_fields}),
            convert_timeout_s=self.convert_timeout_s,
            max_converted_bytes=self.max_converted_bytes,
            max_inflated_bytes=self.max_inflated_bytes,
            max_sheet_cells=self.max_sheet_cells,
            max_sheet_chars=self.max_sheet_chars,
            max_parse_memory_bytes=self.max_parse_memory_bytes,
            max_render_pixels=self.max_render_pixels,
            max_image_pixels=self.max_image_pixels,
            max_image_frames=self.max_image_frames,
            ocr_dpi=self.ocr_dpi,
            fields_min_confidence=self.fields_min_confidence,
        )
