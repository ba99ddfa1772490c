"""Two lanes of CPU processes: short work never waits behind long work.

Measured before: a one-page ``.docx`` took 47.8 s, 47.7 s of it waiting, because the sniff that
starts its conversion queued in the two-process pool behind five-page OCR units of 37 to 46 s.
The calls that take milliseconds and gate a whole document (the sniff of the bytes, counting a
PDF's pages) now run in a lane of their own, one process, which the long calls (OCR, rendering,
reading text layers and sheets) never enter. Each lane is a ``ProcessPoolRunner``: the same
time limits, kills and recoveries.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from infra.local.cpu import ProcessPoolRunner

T = TypeVar("T")

SHORT_CALLS = frozenset({"sniff_file", "count_pages", "run_rules"})
"""Calls that run in the short lane (by function name): the sniff and the page count are bounded
by reading a header or a cross-reference table, never by the number of pages; the offline fields
rules take milliseconds a document (3 to 4 ms on the Kleister NDAs), and a document's result is
published only after them, so they must not queue behind OCR either."""


class LanedCpu:
    """``CpuRunner`` that routes ``SHORT_CALLS`` to a one-process lane, the rest to the pool."""

    def __init__(self, workers: int, short_workers: int = 1):
        self.long = ProcessPoolRunner(workers)
        self.short = ProcessPoolRunner(short_workers)

    def lane(self, fn: Callable[..., Any]) -> ProcessPoolRunner:
        return self.short if fn.__name__ in SHORT_CALLS else self.long

    async def run(self, fn: Callable[..., T], *args: Any, timeout_s: float) -> T:
        return await self.lane(fn).run(fn, *args, timeout_s=timeout_s)

    def warm(self) -> None:
        self.long.warm()
        self.short.warm()

    def close(self) -> None:
        self.long.close()
        self.short.close()
