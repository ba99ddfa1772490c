"""Offline OCR with tesseract (Debian's tesseract-ocr, through pytesseract): scans, no network.

Measured on 2 cores: about 1.5 s a page with ``OMP_THREAD_LIMIT=1`` and one page per process
(5-11x slower when tesseract's own threads fight the other processes), so each page is one call
in the CPU pool and tesseract is told to stay on one thread.

Rotation: the common page is upright, so OCR runs first as is; only a page whose words come out
few or unsure is checked with tesseract's orientation detection (``--psm 0``, from
``tesseract-ocr-osd``), and turned only when that detection is confident (at least
``MIN_ROTATION_CONFIDENCE``: below it, it turned a chart page wrongly). The turned reading is
kept only if it is better.

Pages are rendered with ``formats.pdf.render_pages`` (the pixel cap applies); a page holding an
image larger than ``max_image_pixels`` is refused before anything is decoded (a 35000 x 35000
JBIG2 image is 1.2 GB once decoded).
"""

from __future__ import annotations

import functools
import io
import os
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from extract.errors import LimitExceeded
from extract.formats.pdf import normalise, open_documents, page_errors, render_pages
from extract.readers.base import PageText, ReaderContext, ReaderUnavailable
from extract.readers.blank import BLANK_READER, ink_runs_of_pages, is_blank

__all__ = ["READER", "MIN_ROTATION_CONFIDENCE", "UNSURE_CONFIDENCE", "FEW_WORDS", "OSD_MAX_SIDE",
           "PAGE_TIMEOUT_S", "tesseract_status", "OcrResult", "ocr_pages", "OcrReader", "look_at_pages"]

READER = "ocr"
MIN_ROTATION_CONFIDENCE = 1.5
UNSURE_CONFIDENCE = 60.0  # mean word confidence below which orientation is checked
FEW_WORDS = 5
OSD_MAX_SIDE = 2000  # orientation needs no more pixels than this; it is the slow pass
PAGE_TIMEOUT_S = 120.0


@functools.cache
def tesseract_status() -> str | None:
    """None when tesseract and its English model are installed, else what is missing."""
    if shutil.which("tesseract") is None:
        return ("tesseract is not installed: apt-get install tesseract-ocr tesseract-ocr-eng "
                "tesseract-ocr-osd")
    import pytesseract

    try:
        languages = pytesseract.get_languages(config="")
    except Exception as error:  # a broken install
        return f"tesseract does not run: {error}"
    if "eng" not in languages:
        return "tesseract has no English model: apt-get install tesseract-ocr-eng"
    return None


@dataclass(frozen=True)
class OcrResult:
    number: int
    text: str
    confidence: float
    rotated: int
    duration_ms: float


def _largest_image(path: Path, number: int, password: str | None) -> int:
    """Pixels of the page's largest image, from its header: nothing is decoded."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    document = open_documents.get(path, password)
    with page_errors(number):
        page = document[number - 1]
        try:
            largest = 0
            for obj in page.get_objects(filter=(raw.FPDF_PAGEOBJ_IMAGE,), max_depth=3):
                if isinstance(obj, pdfium.PdfImage):
                    width, height = obj.get_px_size()
                    largest = max(largest, width * height)
            return largest
        finally:
            page.close()


def _read_data(image, config: str = "") -> tuple[str, float, int]:
    """Text (lines in reading order), mean word confidence and word count in one pass."""
    import pytesseract

    data = pytesseract.image_to_data(image, lang="eng", config=config,
                                     output_type=pytesseract.Output.DICT)
    lines: dict[tuple[int, int, int], list[str]] = {}
    confidences = []
    for i, word in enumerate(data["text"]):
        if not word.strip():
            continue
        key = (data["block_num"][i], data["par_num"][i], data["line_num"][i])
        lines.setdefault(key, []).append(word)
        confidences.append(float(data["conf"][i]))
    paragraphs: list[str] = []
    previous: tuple[int, int] | None = None
    for (block, par, _), words in lines.items():
        if previous is not None and previous != (block, par):
            paragraphs.append("")
        paragraphs.append(" ".join(words))
        previous = (block, par)
    mean = sum(confidences) / len(confidences) if confidences else 0.0
    return "\n".join(paragraphs), mean, len(confidences)


def _orientation(image) -> tuple[int, float]:
    """Degrees to turn the page clockwise, and tesseract's confidence in it."""
    import pytesseract

    small = image
    if max(image.size) > OSD_MAX_SIDE:
        small = image.copy()
        small.thumbnail((OSD_MAX_SIDE, OSD_MAX_SIDE))
    try:
        osd = pytesseract.image_to_osd(small, config="--psm 0",
                                       output_type=pytesseract.Output.DICT)
    except pytesseract.TesseractError:  # too little text to tell
        return 0, 0.0
    return int(osd.get("rotate", 0)), float(osd.get("orientation_conf", 0.0))


def ocr_pages(path: Path, page_numbers: Sequence[int], password: str | None, *, dpi: int,
              max_pixels: int, max_image_pixels: int) -> list[OcrResult]:
    """OCR the given pages (1-based); runs in a worker process."""
    os.environ["OMP_THREAD_LIMIT"] = "1"  # read by tesseract, a child of this process
    from PIL import Image

    results = []
    for number in page_numbers:
        started = time.perf_counter()
        largest = _largest_image(path, number, password)
        if largest > max_image_pixels:
            raise LimitExceeded(
                f"page {number} holds an image of {largest} pixels, over the limit of "
                f"{max_image_pixels}: it is not rendered", error_type="page_too_large")
        (rendered,) = render_pages(path, [number], password, dpi=dpi, max_pixels=max_pixels)
        image = Image.open(io.BytesIO(rendered.image))
        text, confidence, words = _read_data(image)
        rotated = 0
        if words < FEW_WORDS or confidence < UNSURE_CONFIDENCE:
            rotate, sure = _orientation(image)
            if rotate and sure >= MIN_ROTATION_CONFIDENCE:
                turned = image.rotate(-rotate, expand=True)
                turned_text, turned_confidence, turned_words = _read_data(turned)
                if (turned_confidence, turned_words) > (confidence, words):
                    text, confidence, rotated = turned_text, turned_confidence, rotate
        results.append(OcrResult(number, normalise(text), confidence, rotated,
                                 (time.perf_counter() - started) * 1000))
    return results


class OcrReader:
    """Reads pages with tesseract, one page a call so both cores work on one unit's pages."""

    name = READER

    async def read(self, ctx: ReaderContext, path: Path,
                   pages: Sequence[int]) -> list[PageText]:
        import asyncio

        config = ctx.config
        looks = await ctx.cpu.run(look_at_pages, path, list(pages), config.password_value,
                                  config.max_image_pixels, timeout_s=config.read_timeout_s)
        # A page with no image has nothing to recognise: it stays as the text layer left it.
        # A page whose image is blank (no runs of ink at a glance) is not worth a tesseract
        # second: it is recorded as read by ``blank``, with no text.
        blank = {n: PageText(n, "", "text", 0.0) for n, (pixels, _, _) in looks.items()
                 if not pixels}
        blank.update({n: PageText(n, "", BLANK_READER, look_ms)
                      for n, (pixels, runs, look_ms) in looks.items()
                      if pixels and runs is not None and is_blank(runs)})
        wanted = [n for n in pages if n not in blank]
        if wanted and (problem := tesseract_status()) is not None:
            raise ReaderUnavailable(f"the OCR reader is unavailable: {problem}")
        calls = [ctx.cpu.run(_ocr_one, path, number, config.password_value, config.ocr_dpi,
                             config.max_render_pixels, config.max_image_pixels,
                             timeout_s=max(config.read_timeout_s, PAGE_TIMEOUT_S))
                 for number in wanted]
        read = {r.number: PageText(r.number, r.text, self.name, r.duration_ms)
                for r in await asyncio.gather(*calls)}
        return [blank.get(n) or read[n] for n in pages]


def look_at_pages(path: Path, page_numbers: Sequence[int], password: str | None,
                  max_image_pixels: int) -> dict[int, tuple[int, int | None, float]]:
    """Each page's largest image in pixels, and for a page with an image within the limit its
    runs of ink at a glance (``extract.readers.blank``) and the milliseconds the look took;
    runs in a worker process. A page over the limit is not rendered here (OCR refuses it)."""
    looks: dict[int, tuple[int, int | None, float]] = {}
    for number in page_numbers:
        started = time.perf_counter()
        largest = _largest_image(path, number, password)
        runs = None
        if 0 < largest <= max_image_pixels:
            runs = ink_runs_of_pages(path, [number], password)[number]
        looks[number] = (largest, runs, (time.perf_counter() - started) * 1000)
    return looks


def _ocr_one(path: Path, number: int, password: str | None, dpi: int, max_pixels: int,
             max_image_pixels: int) -> OcrResult:
    """One page, positional arguments only (the CPU pool passes no keywords)."""
    (result,) = ocr_pages(path, [number], password, dpi=dpi, max_pixels=max_pixels,
                          max_image_pixels=max_image_pixels)
    return result
