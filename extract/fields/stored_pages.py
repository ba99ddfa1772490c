"""A job's stored pages, read where they are used.

The offline rules run in a CPU worker process. Before, the run's own process (whose CPU is the
run's ceiling) read every page's Markdown, and the pool pickled the texts to the worker: 0.7 ms
a document of the coordinator's 5 ms of fields work on the Kleister NDAs. Where the object store
keeps objects as files on this machine (``FolderObjectStore.file_path``), the handler lists the
pages and hands over their paths (``PagesOnDisk``); the worker reads the files itself, on first
use. Anything that needs the text in the handler's process reads it there the same way
(``PagesOnDisk.load``, off the event loop). A store without files (S3) is read as before.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import overload

from extract.errors import TerminalError
from extract.fields.base import PageText

__all__ = ["PagesOnDisk", "portable", "stored_size"]


class PagesOnDisk(Sequence[PageText]):
    """Pages as files: the numbers, the paths and their sizes travel (a pickle of a few hundred
    bytes); the texts are read on first use, by whichever process uses them."""

    __slots__ = ("numbers", "paths", "sizes", "_pages")

    def __init__(self, numbers: Sequence[int], paths: Sequence[str | Path],
                 sizes: Sequence[int]):
        self.numbers = tuple(numbers)
        self.paths = tuple(str(path) for path in paths)
        self.sizes = tuple(sizes)
        self._pages: tuple[PageText, ...] | None = None

    @classmethod
    def of(cls, numbered: Sequence[tuple[int, Path]]) -> PagesOnDisk:
        """Pages from (number, path) pairs, in page order; each file's size read now (``stat``:
        the long-text test needs it before any text is read)."""
        ordered = sorted(numbered)
        return cls([n for n, _ in ordered], [p for _, p in ordered],
                   [os.stat(p).st_size for _, p in ordered])

    def load(self) -> tuple[PageText, ...]:
        """The pages' texts, read once. A file gone since the listing is a terminal error, as a
        page missing at the listing is."""
        if self._pages is None:
            pages = []
            for number, path in zip(self.numbers, self.paths, strict=True):
                try:
                    text = Path(path).read_bytes().decode("utf-8")
                except FileNotFoundError:
                    raise TerminalError(f"page {number} is no longer stored",
                                        error_type="missing_pages") from None
                pages.append(PageText(number, text))
            self._pages = tuple(pages)
        return self._pages

    def __len__(self) -> int:
        return len(self.numbers)

    @overload
    def __getitem__(self, index: int) -> PageText: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[PageText]: ...

    def __getitem__(self, index):
        return self.load()[index]

    def __iter__(self) -> Iterator[PageText]:
        return iter(self.load())

    def __reduce__(self):
        # Only the paths travel; a copy reads the files where it is used.
        return (PagesOnDisk, (self.numbers, self.paths, self.sizes))

    def __repr__(self) -> str:
        return f"PagesOnDisk({len(self.numbers)} pages, {sum(self.sizes)} bytes)"


def portable(pages: Sequence[PageText]) -> Sequence[PageText]:
    """``pages`` as a CPU call takes them: pages on disk as they are (the worker reads them),
    others as a tuple."""
    return pages if isinstance(pages, PagesOnDisk) else tuple(pages)


def stored_size(pages: Sequence[PageText]) -> int:
    """The pages' text length in characters; for pages on disk, their bytes (UTF-8 writes a
    character in one byte or more: an upper bound), read without the texts."""
    if isinstance(pages, PagesOnDisk):
        return sum(pages.sizes)
    return sum(len(page.text) for page in pages)
