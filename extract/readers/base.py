"""The reader port: pages of a PDF in, their Markdown out, each page naming who read it.

A reader runs its CPU work through ``ctx.cpu`` (a process that can be killed at a time limit)
and its network work on the event loop; it raises the pipeline's errors (``extract.errors``) so
the handler sorts retries and failures the same way for every reader.

A reader takes a ``ReaderContext``: the few things it uses of the handler's context (the CPU
runner, the event sink, the settings, the unit being read), stated here as protocols so that the
readers do not import ``extract.context`` (which imports the readers to resolve its chain).
``extract.context.HandlerContext`` and its ``ReadScope`` satisfy them.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from extract.errors import TerminalError
from lake.layout import page_key

__all__ = ["ReaderUnavailable", "page_object", "PageText", "Envelope", "ReaderScope", "ReaderContext",
           "PageReader", "ReaderChain"]

if TYPE_CHECKING:
    from extract.config import ExtractConfig
    from extract.ports import CpuRunner, EventSink


class ReaderUnavailable(TerminalError):
    """The chosen reader cannot run here (no engine installed, no API key)."""

    error_type = "reader_unavailable"


def page_object(document_id: str, job_id: str, number: int, text: str,
                reader: str) -> tuple[str, bytes, dict[str, str]]:
    """A page as the object store keeps it: its key, its Markdown in UTF-8, and the metadata a
    redelivery reads back instead of reading the page again (``extract.handlers.stored_pages``):
    the reader that made it and its characters. One shape for every stage that stores pages."""
    return (page_key(document_id, job_id, number), text.encode("utf-8"),
            {"reader": reader, "chars": str(len(text))})


@dataclass(frozen=True)
class PageText:
    number: int
    text: str
    reader: str
    duration_ms: float | None = None
    stored: bool = False
    """Stored already, durably, by the worker process that read it: the handler stores only
    the pages without this flag."""

    @property
    def usable(self) -> bool:
        """Enough text that a later reader need not try: any non-blank character."""
        return bool(self.text.strip())


class Envelope(Protocol):
    """Whose reading this is, for the reader's ledger rows (``extract.context.Delivery``)."""

    @property
    def document_id(self) -> str | None: ...
    @property
    def job_id(self) -> str | None: ...
    @property
    def attempt(self) -> int: ...
    @property
    def worker(self) -> str: ...


class ReaderScope(Protocol):
    """The unit being read (``extract.context.ReadScope``): its envelope, ``save_page``, which
    stores one page the moment it is read, and ``answered``, called once every paid call of
    the unit is answered (what is left only waits: the handler frees the unit's slot)."""

    @property
    def delivery(self) -> Envelope: ...
    @property
    def unit_id(self) -> str: ...
    @property
    def save_page(self) -> Callable[[PageText], Awaitable[None]]: ...
    @property
    def answered(self) -> Callable[[], None]: ...


class ReaderContext(Protocol):
    """What a reader uses of the handler's context (``extract.context.HandlerContext``)."""

    @property
    def cpu(self) -> CpuRunner: ...
    @property
    def sink(self) -> EventSink: ...
    @property
    def config(self) -> ExtractConfig: ...
    @property
    def scope(self) -> ReaderScope | None: ...


class PageReader(Protocol):
    name: str

    async def read(self, ctx: ReaderContext, path: Path,
                   pages: Sequence[int]) -> list[PageText]: ...


def _not_last(ctx: ReaderContext) -> ReaderContext:
    """``ctx`` whose read scope's ``answered`` does nothing (a reader before the chain's last)."""
    scope = getattr(ctx, "scope", None)
    if scope is None or not dataclasses.is_dataclass(ctx):
        return ctx
    return dataclasses.replace(ctx, scope=dataclasses.replace(scope, answered=lambda: None))


class ReaderChain:
    """Readers tried in order; each later one reads only the pages still without text."""

    def __init__(self, readers: Sequence[PageReader]):
        self.readers = list(readers)

    async def read(self, ctx: ReaderContext, path: Path, pages: Sequence[int]) -> list[PageText]:
        results: dict[int, PageText] = {}
        wanted = list(pages)
        for position, reader in enumerate(self.readers):
            if not wanted:
                break
            # Only the last reader may say that the unit's costly work is over (its scope's
            # ``answered``): a later reader would read the pages left without text.
            reader_ctx = ctx if position == len(self.readers) - 1 else _not_last(ctx)
            for page in await reader.read(reader_ctx, path, wanted):
                results[page.number] = page
            wanted = [n for n in wanted if not results[n].usable]
        return [results[n] for n in pages]

    async def prepare(self, ctx: ReaderContext) -> None:
        """Make what the readers make on first use (a model client), before the first unit
        needs it: a runtime calls this when it starts, so a burst's first units do not each
        wait for it inside their slots. A reader that cannot be prepared (no API key) says so
        when a unit reaches it, as without this call."""
        for reader in self.readers:
            prepare = getattr(reader, "prepare", None)
            if prepare is not None:
                with contextlib.suppress(Exception):  # ReaderUnavailable: said at its unit
                    await prepare(ctx)
