"""A document's pages joined into one text, with the way back from an offset to its page.

Rules and features read the whole text (a party named on page 1 signs on page 5), while results
record where a value was found as a page number and an offset within that page.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

from extract.fields.base import PageText

__all__ = ["JoinedText"]

_PAGE_BREAK = "\n\n"


@dataclass(frozen=True)
class JoinedText:
    """``text`` is the pages in order, separated by a blank line; ``starts[i]`` is where page
    ``numbers[i]`` begins in it."""

    text: str
    starts: tuple[int, ...]
    numbers: tuple[int, ...]

    @classmethod
    def of(cls, pages: Sequence[PageText]) -> JoinedText:
        # Non-breaking spaces are common in EDGAR HTML exhibits; one space keeps patterns simple
        # and keeps offsets unchanged (one character for one).
        parts, starts, position = [], [], 0
        for page in pages:
            starts.append(position)
            parts.append(page.text.replace("\xa0", " "))
            position += len(page.text) + len(_PAGE_BREAK)
        return cls(_PAGE_BREAK.join(parts), tuple(starts), tuple(p.number for p in pages))

    def locate(self, offset: int) -> tuple[int | None, int | None]:
        """(page number, offset within that page) of a position in ``text``."""
        if not self.starts:
            return None, None
        index = max(bisect.bisect_right(self.starts, offset) - 1, 0)
        return self.numbers[index], offset - self.starts[index]
