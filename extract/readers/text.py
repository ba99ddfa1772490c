"""The PDF's own text layer, read by PDFium in a worker process: free, exact, and instant.

Where the handler's context offers the object store to workers (``worker_objects``, locally the
folder store), the worker that reads a page also stores it, durably, before it answers: the
page's text is written by the process that read it, and the main process, which only
coordinates, does no per-page file work. Only pages with text are stored there: an empty page
may still go to the next reader (OCR), and the handler stores whatever that one reads.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pypdfium2 import PdfiumError

from extract.errors import TerminalError
from extract.formats.pdf import count_pages, read_text_layer
from extract.readers.base import PageText, ReaderContext, page_object

__all__ = ["READER", "log", "TextLayerReader", "FirstPagesOf", "count_and_read_first_pages_of_each",
           "read_and_store_text_layer", "count_and_read_first_pages"]

READER = "text"
log = logging.getLogger(__name__)


class TextLayerReader:
    name = READER

    async def read(self, ctx: ReaderContext, path: Path,
                   pages: Sequence[int]) -> list[PageText]:
        store = getattr(ctx, "worker_objects", None)
        scope = ctx.scope
        password = ctx.config.password_value
        if store is not None and scope is not None and scope.delivery.job_id is not None:
            delivery = scope.delivery
            read = await ctx.cpu.run(read_and_store_text_layer, path, list(pages), password,
                                     store, delivery.document_id, delivery.job_id,
                                     timeout_s=ctx.config.read_timeout_s)
        else:
            read = [(number, text, ms, False) for number, text, ms in await ctx.cpu.run(
                read_text_layer, path, list(pages), password,
                timeout_s=ctx.config.read_timeout_s)]
        # Each page's own time, measured in the worker (read_text_layer), not the unit's split
        # evenly: the round trip to the worker and the store are the unit's (units.duration_ms).
        return [PageText(number, text, self.name, ms, stored=stored)
                for number, text, ms, stored in read]


FirstPagesOf = tuple[Path, str | None, int, int, str, str]
"""One document for ``count_and_read_first_pages_of_each``: its path, its password, the pages to
read at the split, the page limit, its document id and its job id."""


def count_and_read_first_pages_of_each(documents: Sequence[FirstPagesOf], store: Any
                                       ) -> list[tuple[int, list[tuple[int, str, float, bool]]]
                                                 | None]:
    """``count_and_read_first_pages`` for several documents in one worker call (the splits of
    PDFs received together), each with nothing stored before. None for a document that raised:
    its own split, handled alone, says why; the others are not disturbed.

    Every document's pages are stored together once all are read (``_StoredTogether``): one
    durable batch of a hundred pages costs a third of sixteen of six (``durable.write_many``).
    A store that fails fails the call, and each message goes back to be split alone."""
    results: list[tuple[int, list[tuple[int, str, float, bool]]] | None] = []
    together = _StoredTogether(store) if store is not None else None
    for path, password, first_pages, max_pages, document_id, job_id in documents:
        try:
            results.append(count_and_read_first_pages(path, password, first_pages, max_pages,
                                                      together, document_id, job_id))
        except Exception as error:  # noqa: BLE001 - reported by the document's own split
            log.info("the split of %s, read with others, failed (%r); it is split alone",
                     path, error)
            results.append(None)
    if together is not None:
        together.store_all()
    return results


class _StoredTogether:
    """An object store's ``put_many`` held back: the objects are written by ``store_all``, in
    one batch, before the caller reports any of them stored."""

    def __init__(self, store: Any):
        self._store = store
        self._objects: list[tuple[str, bytes, dict[str, str] | None]] = []

    def put_many(self, objects: Sequence[tuple[str, bytes, dict[str, str] | None]]) -> None:
        self._objects.extend(objects)

    def store_all(self) -> None:
        if self._objects:
            self._store.put_many(self._objects)
            self._objects = []


def read_and_store_text_layer(path: Path, page_numbers: Sequence[int], password: str | None,
                              store: Any, document_id: str, job_id: str
                              ) -> list[tuple[int, str, float, bool]]:
    """Read the pages' text layer and store the pages that have text, durably, in one batch
    (runs in a worker process); returns (number, text, milliseconds, stored) for every page."""
    texts = read_text_layer(path, page_numbers, password)
    keep = [(number, text) for number, text, _ in texts if text.strip()]
    if keep:
        store.put_many([page_object(document_id, job_id, number, text, READER)
                        for number, text in keep])
    kept = {number for number, _ in keep}
    return [(number, text, ms, number in kept) for number, text, ms in texts]


def count_and_read_first_pages(path: Path, password: str | None, first_pages: int,
                               max_pages: int, store: Any, document_id: str, job_id: str,
                               skip: Sequence[int] = ()
                               ) -> tuple[int, list[tuple[int, str, float, bool]]]:
    """The PDF's page count and the text layer of its first ``first_pages`` pages but ``skip``
    (stored by an earlier delivery: never read or written again), those with text stored (by
    this process when ``store`` is given), in one visit of the open document: what the split
    does for a document whose reader starts with the text layer (runs in a worker). Nothing is
    read from a document over ``max_pages`` (the split refuses it).

    A page that cannot be read (a hostile or damaged page) leaves every page to its unit's own
    read, which fails that unit with its reason as before: reading here only saves messages."""
    pages = count_pages(path, password)
    skipped = set(skip)
    numbers = [n for n in range(1, min(pages, first_pages) + 1) if n not in skipped]
    if pages > max_pages or not numbers:
        return pages, []
    try:
        if store is not None:
            return pages, read_and_store_text_layer(path, numbers, password, store, document_id,
                                                    job_id)
        return pages, [(number, text, ms, False)
                       for number, text, ms in read_text_layer(path, numbers, password)]
    except (TerminalError, PdfiumError) as error:
        log.info("the split's text read of %s stopped (%s); its units read each page", path, error)
        return pages, []
