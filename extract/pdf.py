"""PDF primitives on pypdfium2, meant to run in a worker process.

PDFium is not thread-safe and a hostile file can crash or stall it, so these functions take a
path (not an open document) and return plain data: the caller runs them in a process it can
kill. PDFium's load errors become our terminal errors with a clear type.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from extract.errors import CorruptDocument, EmptyDocument, EncryptedDocument


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


def count_pages(path: Path, password: str | None = None) -> int:
    """The number of pages; raises a terminal error for an unreadable or empty PDF."""
    document = _open(path, password)
    try:
        pages = len(document)
    finally:
        document.close()
    if pages == 0:
        raise EmptyDocument("the PDF has no pages", error_type="no_pages")
    return pages


def read_text_layer(path: Path, page_numbers: Sequence[int],
                    password: str | None = None) -> list[tuple[int, str]]:
    """The text layer of the given pages (1-based), in order; an image-only page gives ''."""
    document = _open(path, password)
    results = []
    try:
        for number in page_numbers:
            page = document[number - 1]
            textpage = page.get_textpage()
            try:
                text = textpage.get_text_bounded()
            finally:
                textpage.close()
                page.close()
            results.append((number, normalise(text)))
    finally:
        document.close()
    return results


def normalise(text: str) -> str:
    """One newline convention, no NULs, no trailing blanks: stable Markdown for every reader."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    text = "\n".join(line.rstrip() for line in text.split("\n")).strip()
    return text + "\n" if text else ""
