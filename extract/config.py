"""The handlers' settings, apart from the context that carries them, so that readers (which
take ``config`` from the context) can name its type without importing ``extract.context``.

``extract.context`` imports ``ExtractConfig`` from here; ``from extract.context import
ExtractConfig`` keeps working.
"""

from __future__ import annotations

from pydantic import BaseModel, Field, SecretStr

from extract.models.config import ModelConfig

__all__ = ["ExtractConfig"]


class ExtractConfig(BaseModel):
    """The handlers' settings; infra builds them from the user's settings."""

    pages_per_unit: int = 5
    text_pages_at_split: int = 20
    """The first pages of a PDF whose text layer the split reads while it has the file open; a
    unit whose every page has text is finished there, without a read message of its own
    (``extract.handlers.split.plan_pdf``). 0: every unit is read by its own message."""
    max_file_bytes: int = 512 * 1024 * 1024
    max_pages: int = 10_000
    split_timeout_s: float = 60.0
    read_timeout_s: float = 120.0
    no_progress_timeout_s: float = 1800.0
    password: SecretStr | None = None
    reader: str = "auto"
    # The formats path's limits; each failure is recorded with its own error_type.
    max_sheet_cells: int = 5_000_000
    """too_many_cells: a sheet's grid (rows x columns from A1) larger than this."""
    max_sheet_chars: int = 50_000_000
    """sheet_too_long: a sheet's text longer than this."""
    max_parse_memory_bytes: int = 2 * 1024**3
    """memory_limit: address space a workbook, CSV or decryption may claim beyond the worker's."""
    convert_timeout_s: float = 120.0
    """conversion_timeout: LibreOffice's whole process tree is killed after this."""
    max_converted_bytes: int = 256 * 1024**2
    """converted_too_large: the PDF LibreOffice made is larger than this."""
    max_inflated_bytes: int = 512 * 1024**2
    """too_large: an Office file's XML parts inflate to more than this (a zip bomb)."""
    max_render_pixels: int = 12_000_000
    """A page is rendered for OCR at a lower resolution rather than past this many pixels."""
    max_image_pixels: int = 250_000_000
    """page_too_large: a page holding an image larger than this is not rendered at all, and an
    image file's frame larger than this is not decoded (Pillow's decompression-bomb limit)."""
    max_image_frames: int = 1000
    """too_many_frames: an image file (a multi-page TIFF) with more frames than this."""
    ocr_dpi: int = 300
    unit_lease_s: float = 60.0
    """A read's claim on its unit lasts this long unless renewed (every third of it)."""
    fields_min_confidence: float = 0.0
    """A field value whose confidence (calibrated, or 0.05 for a flagged LLM value) is below
    this is not reported; 0, the floor chosen from the calibration, keeps every value."""
    models: ModelConfig = Field(default_factory=ModelConfig)

    @property
    def password_value(self) -> str | None:
        return self.password.get_secret_value() if self.password else None
