"""What the runtime is working on now, in words, for the live progress when the bars stand still.

A run whose bars sat at 32/36 for forty seconds said nothing while a 4-page scan went through
OCR and a one-page file waited behind it. The runtime notes each message it handles here (its
stage and job), ``WatchedCpu`` notes which OCR page a message's CPU call is on and whether the
call waits for a process, and ``describe`` turns that into one line::

    OCR: cardinal_rotated_4p.pdf page 3 of 4; convert: memo.docx; 2 documents waiting for a worker

The board is the event loop's own (no lock): the progress bar reads it from the stop test, which
runs on the same loop.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

from extract.messages import CONVERT_QUEUE, FIELDS_QUEUE, INDEX_QUEUE, READ_QUEUE, SHEET_QUEUE

__all__ = ["CURRENT_WORK", "ActivityBoard", "WatchedCpu", "job_of"]

T = TypeVar("T")

CURRENT_WORK: ContextVar[int | None] = ContextVar("doclake_current_work", default=None)
"""The board entry of the message the current task handles."""

STAGE_WORDS = {CONVERT_QUEUE: "convert", READ_QUEUE: "read", SHEET_QUEUE: "sheet",
               INDEX_QUEUE: "index", FIELDS_QUEUE: "fields"}
"""How each queue's work is named; a split is ``split``."""

OCR_CALLS = frozenset({"_ocr_one"})
"""The OCR reader's call for one page (``extract.readers.ocr``): its second argument is the
page number."""

SHOWN = 2
"""Pieces of work named in the line, the longest-running first."""


def job_of(body: str) -> str | None:
    """The job id a message body names (every message carries one), or None."""
    try:
        value = json.loads(body).get("job_id")
    except (ValueError, AttributeError):
        return None
    return value if isinstance(value, str) else None


@dataclass
class _Work:
    stage: str
    job_id: str | None
    since: float
    page: int | None = None


class ActivityBoard:
    """The work in hand, and a line that names it."""

    def __init__(self, names: Callable[[str], tuple[str, int | None] | None],
                 waiting: Callable[[], int], cpu_waiting: Callable[[], int]):
        """``names(job_id)``: the job's source name and pages (None: unknown); ``waiting()``:
        how many documents have a message no worker has taken yet; ``cpu_waiting()``: calls
        waiting for a CPU process."""
        self._names = names
        self._waiting = waiting
        self._cpu_waiting = cpu_waiting
        self._work: dict[int, _Work] = {}
        self._ids = itertools.count(1)
        self._known: dict[str, tuple[str, int | None]] = {}

    def start(self, queue: str, body: str) -> int:
        entry = next(self._ids)
        self._work[entry] = _Work(queue, job_of(body), time.monotonic())
        return entry

    def end(self, entry: int) -> None:
        self._work.pop(entry, None)

    def in_hand(self, queue: str) -> int:
        """How many deliveries of ``queue`` are being handled now."""
        return sum(1 for work in self._work.values() if work.stage == queue)

    def calling(self, entry: int | None, name: str, args: tuple) -> None:
        """A CPU call of the work ``entry``: an OCR page's number is noted."""
        work = self._work.get(entry) if entry is not None else None
        if work is not None and name in OCR_CALLS and len(args) > 1 and isinstance(args[1], int):
            work.page = args[1]

    def _name(self, job_id: str | None) -> tuple[str, int | None]:
        if job_id is None:
            return "a document", None
        known = self._known.get(job_id)
        if known is None or known[1] is None:
            found = self._names(job_id)
            known = found if found is not None else ("a document", None)
            self._known[job_id] = known
        return known

    def describe(self) -> str:
        """One line: the longest-running work (OCR pages first: the slowest), then what waits."""
        now = time.monotonic()
        parts = []
        ocr = [w for w in self._work.values() if w.page is not None]
        others = [w for w in self._work.values() if w.page is None]
        for work in sorted(ocr, key=lambda w: w.since) + sorted(others, key=lambda w: w.since):
            if len(parts) == SHOWN:
                break
            name, pages = self._name(work.job_id)
            if work.page is not None:
                of = f" of {pages}" if pages else ""
                parts.append(f"OCR: {name} page {work.page}{of}")
            else:
                parts.append(f"{STAGE_WORDS.get(work.stage, 'split')}: {name} "
                             f"({now - work.since:.0f} s)")
        waiting = self._waiting()
        cpu = self._cpu_waiting()
        if waiting:
            parts.append(f"{waiting} document{'s' if waiting != 1 else ''} waiting for a worker")
        if cpu:
            parts.append(f"{cpu} waiting for a CPU process")
        return "; ".join(parts)


class WatchedCpu:
    """A ``CpuRunner`` that tells the board which OCR page the current message is on."""

    def __init__(self, inner: Any, board: ActivityBoard):
        self.inner = inner
        self.board = board

    async def run(self, fn: Callable[..., T], *args: Any, timeout_s: float) -> T:
        self.board.calling(CURRENT_WORK.get(), fn.__name__, args)
        return await self.inner.run(fn, *args, timeout_s=timeout_s)
