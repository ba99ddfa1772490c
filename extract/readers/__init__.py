"""Readers: how a page's text is obtained, one module a reader (text layer, OCR, vision model).

``resolve`` turns the ``--reader`` choice into a ``ReaderChain``: the readers tried in order for
each page, a later one only for the pages the earlier ones left without usable text. A new reader
is one new module and one entry in ``READERS``.
"""

from __future__ import annotations

import pkgutil

from extract.readers.base import PageReader, PageText, ReaderChain, ReaderContext, ReaderUnavailable

__all__ = ["READERS", "PageReader", "PageText", "ReaderChain", "ReaderContext", "ReaderUnavailable",
           "reader_class", "resolve"]

# name -> the chain it means, each reader as "module:class": a chain's modules are imported when
# it is resolved, so a text run never imports OCR's or the vision models' code (the models' own
# package among it). ``auto`` stays offline: the text layer, then OCR (tesseract) for the pages
# left without text.
READERS: dict[str, tuple[str, ...]] = {
    "text": ("extract.readers.text:TextLayerReader",),
    "auto": ("extract.readers.text:TextLayerReader", "extract.readers.ocr:OcrReader"),
    "ocr": ("extract.readers.ocr:OcrReader",),
    # A vision model reads every page (tables, charts, scans alike); a fallback model inside.
    "gemini": ("extract.readers.vision:GeminiReader",),
    "simulated": ("extract.readers.vision:SimulatedReader",),
}


def resolve(name: str) -> ReaderChain:
    """The chain for a ``--reader`` value; ``ReaderUnavailable`` names the choices otherwise."""
    try:
        specs = READERS[name]
    except KeyError:
        raise ReaderUnavailable(
            f"reader {name!r} is not available; choose one of {', '.join(sorted(READERS))}"
        ) from None
    return ReaderChain([reader_class(spec)() for spec in specs])


def reader_class(spec: str) -> type[PageReader]:
    """The class a ``READERS`` entry names ("module:class", the standard library's form)."""
    return pkgutil.resolve_name(spec)
