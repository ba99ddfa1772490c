"""PDF primitives on pypdfium2, meant to run in a worker process.

PDFium is not thread-safe and a hostile file can crash or stall it, so these functions take a
path (not an open document) and return plain data: the caller runs them in a process it can
kill. PDFium's errors, opening the file or reading one of its pages, become our terminal
errors with a clear type: a ``PdfiumError`` is a ``RuntimeError`` and must never leave a worker
as one (the pool would take it for its own breakage).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from extract.errors import CorruptDocument, EmptyDocument, EncryptedDocument

__all__ = ["page_errors", "KEEP_OPEN", "open_documents", "count_pages", "open_pages", "read_text_layer",
           "RenderedPage", "render_pages", "normalise"]


def _open(path: Path, password: str | None):
    import pypdfium2 as pdfium

    try:
        return pdfium.PdfDocument(str(path), password=password)
    except pdfium.PdfiumError as error:
        text = str(error)
        if "password" in text.lower():
            hint = "a wrong password was given" if password else "no password was given"
            raise EncryptedDocument(f"the PDF is encrypted and {hint} ({text})") from None
        raise CorruptDocument(f"PDFium cannot open the file: {text}") from None


@contextlib.contextmanager
def page_errors(number: int, doing: str = "read") -> Iterator[None]:
    """A page PDFium cannot load, or whose text or bitmap it cannot make: a corrupt document.
    PDFium's error is a ``RuntimeError``, which the process pool would otherwise take for a
    broken pool (``worker_crashed``, taken again every run)."""
    import pypdfium2 as pdfium

    try:
        yield
    except pdfium.PdfiumError as error:
        raise CorruptDocument(f"PDFium cannot {doing} page {number}: {error}") from None


class _OpenDocuments(threading.local):
    """The last few documents this worker opened, kept open: a long PDF's units are read by the
    same few processes one after another, and parsing its cross-reference table again for every
    five pages was the cost. Keyed by path, size and mtime, so a changed file is opened afresh;
    per thread, since PDFium must never see one document from two threads."""

    def __init__(self) -> None:
        self.documents: OrderedDict[tuple, Any] = OrderedDict()
        atexit.register(self.close_all)  # closed before PDFium's own exit hook complains

    def close_all(self) -> None:
        while self.documents:
            _, document = self.documents.popitem()
            document.close()

    def get(self, path: Path, password: str | None):
        stat = os.stat(path)
        key = (str(path), stat.st_size, stat.st_mtime_ns, password)
        document = self.documents.pop(key, None)
        if document is None:
            document = _open(path, password)
        self.documents[key] = document
        while len(self.documents) > KEEP_OPEN:
            _, oldest = self.documents.popitem(last=False)
            oldest.close()
        return document

    def forget(self, path: Path) -> None:
        for key in [k for k in self.documents if k[0] == str(path)]:
            self.documents.pop(key).close()


KEEP_OPEN = 8
open_documents = _OpenDocuments()


def _page(document, number: int):
    """Page ``number`` (1-based); a page PDFium cannot load (a page tree with a cycle, or a
    count that lies) is a corrupt document."""
    with page_errors(number, doing="load"):
        return document[number - 1]


def count_pages(path: Path, password: str | None = None) -> int:
    """The number of pages; raises a terminal error for an unreadable or empty PDF."""
    pages = len(open_documents.get(path, password))
    if pages == 0:
        raise EmptyDocument("the PDF has no pages", error_type="no_pages")
    return pages


def open_pages(path: Path, page_numbers: Sequence[int],
               password: str | None = None) -> Iterator[tuple[int, Any]]:
    """Each page (1-based) of the cached document, loaded (``_page``) and closed in turn. An
    error while a page is in hand, the caller's included, makes the document forgotten: a
    document that failed once is not trusted again."""
    document = open_documents.get(path, password)
    try:
        for number in page_numbers:
            page = _page(document, number)
            try:
                yield number, page
            finally:
                page.close()
    except GeneratorExit:  # the caller stopped early: nothing failed
        raise
    except BaseException:
        open_documents.forget(path)
        raise


def read_text_layer(path: Path, page_numbers: Sequence[int],
                    password: str | None = None) -> list[tuple[int, str, float]]:
    """The text layer of the given pages (1-based), in order, each with the milliseconds spent
    on it; an image-only page gives ''.

    Measured page by page (``pages.duration_ms``): a page's time runs from the end of the one
    before, so it holds loading the page (for the first, opening the document too), reading and
    normalising its text; the times add up to the whole read, and a slow page shows as slow."""
    results = []
    started = time.perf_counter()
    for number, page in open_pages(path, page_numbers, password):
        with page_errors(number):
            textpage = page.get_textpage()
            try:
                text = textpage.get_text_bounded()
            finally:
                textpage.close()
        text = normalise(text)
        now = time.perf_counter()
        results.append((number, text, (now - started) * 1000))
        started = now
    return results


@dataclass(frozen=True)
class RenderedPage:
    number: int
    image: bytes  # encoded: PNG or JPEG
    mime_type: str
    width: int
    height: int
    scale: float  # 1.0 = 72 dpi; below the asked scale when the pixel cap applied


def render_pages(path: Path, page_numbers: Sequence[int], password: str | None = None, *,
                 dpi: float = 150, max_pixels: int = 16_000_000, grayscale: bool = True,
                 image_format: str = "png", jpeg_quality: int = 85) -> list[RenderedPage]:
    """Render pages (1-based) to encoded images for OCR or a vision model; runs in a worker.

    The pixel cap is checked from the page's size before anything is rendered: a page that would
    exceed ``max_pixels`` at ``dpi`` is rendered at the largest scale under the cap instead, so a
    35,000-point-wide page never allocates a gigapixel bitmap.
    """
    import io

    pages = []
    for number, page in open_pages(path, page_numbers, password):
        width_pt, height_pt = page.get_size()
        scale = dpi / 72
        area = max(width_pt * height_pt, 1.0)
        if area * scale * scale > max_pixels:
            scale = (max_pixels / area) ** 0.5
        with page_errors(number):
            bitmap = page.render(scale=scale, grayscale=grayscale)
        image = bitmap.to_pil()
        buffer = io.BytesIO()
        if image_format == "jpeg":
            image.convert("L" if grayscale else "RGB").save(
                buffer, format="JPEG", quality=jpeg_quality, optimize=True)
            mime = "image/jpeg"
        else:
            # zlib's fastest level: encoding was three quarters of a page's render for a model
            # (21 of 27 ms on a Kleister page at 150 dpi; 12 ms at level 1) for a quarter more
            # bytes (92 to 117 KiB), and a model bills an image by its pixels, not its bytes.
            image.save(buffer, format="PNG", optimize=False, compress_level=1)
            mime = "image/png"
        pages.append(RenderedPage(number, buffer.getvalue(), mime, image.width, image.height,
                                  scale))
    return pages


def normalise(text: str) -> str:
    """One newline convention, no NULs, no trailing blanks: stable Markdown for every reader."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    text = "\n".join(line.rstrip() for line in text.split("\n")).strip()
    return text + "\n" if text else ""
