"""The reader port: pages of a PDF in, their Markdown out, each page naming who read it.

A reader runs its CPU work through ``ctx.cpu`` (a process that can be killed at a time limit)
and its network work on the event loop; it raises the pipeline's errors (``extract.errors``) so
the handler sorts retries and failures the same way for every reader.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from extract.errors import TerminalError

if TYPE_CHECKING:
    from extract.context import HandlerContext


class ReaderUnavailable(TerminalError):
    """The chosen reader cannot run here (no engine installed, no API key)."""

    error_type = "reader_unavailable"


@dataclass(frozen=True)
class PageText:
    number: int
    text: str
    reader: str
    duration_ms: float | None = None

    @property
    def usable(self) -> bool:
        """Enough text that a later reader need not try: any non-blank character."""
        return bool(self.text.strip())


class PageReader(Protocol):
    name: str

    async def read(self, ctx: HandlerContext, path: Path,
                   pages: Sequence[int]) -> list[PageText]: ...


class ReaderChain:
    """Readers tried in order; each later one reads only the pages still without text."""

    def __init__(self, readers: Sequence[PageReader]):
        self.readers = list(readers)

    async def read(self, ctx: HandlerContext, path: Path, pages: Sequence[int]) -> list[PageText]:
        results: dict[int, PageText] = {}
        wanted = list(pages)
        for reader in self.readers:
            if not wanted:
                break
            for page in await reader.read(ctx, path, wanted):
                results[page.number] = page
            wanted = [n for n in wanted if not results[n].usable]
        return [results[n] for n in pages]
