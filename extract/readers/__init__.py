"""Readers: how a page's text is obtained, one module a reader (text layer, OCR, vision model).

``resolve`` turns the ``--reader`` choice into a ``ReaderChain``: the readers tried in order for
each page, a later one only for the pages the earlier ones left without usable text. A new reader
is one new module and one entry in ``READERS``.
"""

from __future__ import annotations

from extract.readers.base import PageReader, PageText, ReaderChain, ReaderContext, ReaderUnavailable
from extract.readers.ocr import OcrReader
from extract.readers.text import TextLayerReader
from extract.readers.vision import GeminiReader, SimulatedReader

__all__ = ["READERS", "PageReader", "PageText", "ReaderChain", "ReaderContext", "ReaderUnavailable",
           "resolve"]

# name -> the chain it means. ``auto`` stays offline: the text layer, then OCR (tesseract) for
# the pages left without text.
READERS: dict[str, tuple[type[PageReader], ...]] = {
    "text": (TextLayerReader,),
    "auto": (TextLayerReader, OcrReader),
    "ocr": (OcrReader,),
    # A vision model reads every page (tables, charts, scans alike); a fallback model inside.
    "gemini": (GeminiReader,),
    "simulated": (SimulatedReader,),
}


def resolve(name: str) -> ReaderChain:
    """The chain for a ``--reader`` value; ``ReaderUnavailable`` names the choices otherwise."""
    try:
        classes = READERS[name]
    except KeyError:
        raise ReaderUnavailable(
            f"reader {name!r} is not available; choose one of {', '.join(sorted(READERS))}"
        ) from None
    return ReaderChain([cls() for cls in classes])
