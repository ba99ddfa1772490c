"""Five lanes of CPU processes: no call waits in a queue behind work of another kind.

Measured before: a one-page ``.docx`` took 47.8 s, 47.7 s of it waiting (131.9 s on a mixed
folder with 24 scanned pages), because its calls queued in the one pool behind OCR pages of
seconds each. A process pool is first come, first served; a scan drop puts hundreds of OCR
pages in its queue at once, and any call behind them waits for all of them, however short it is.

So the pool is split by how long a call takes and how many of them can queue:

- ``short`` (one process): calls of milliseconds that gate a whole document (``SHORT_CALLS``).
- ``scans`` (``workers`` processes): OCR (``SCAN_CALLS``), seconds a page and hundreds queued
  by one scan drop. Started on its first call: a run without scans never pays for it. Its
  processes (and the tesseract each starts) run at a lower priority (``SCANS_NICE``): OCR takes
  every core nothing else wants, and the moment a conversion, a text layer, a sheet, the rules
  or the run's own process has work, the kernel runs that first. Without it an Office file's
  LibreOffice conversion and reads shared the two cores with the OCR pages, a third of a core
  each, and finished seconds later than alone.
- ``express`` (one process, normal priority): the OCR page of a document that goes before
  every page the scans lane is running and waiting for (``PriorityGate.outranks_every_call``:
  fewer pages left, by the schedule key), taken at once instead of after a running page. Its
  order is the scans lane's; this lane only adds preemption, which a process pool lacks: a
  one-page ``.docx`` with a picture waited 3.5 s in a room for a 4-page scan's running pages
  (1.5 s a page alone, 5 to 10 s under load). Started on its first such page. A scan's own
  pages never go there (the running ones share its key), so it holds one process's worth of
  OCR at normal priority at most.
- ``documents`` (``workers`` processes): the rest, each bounded by its own document: text
  layers, rendering for a model, sheets and workbook plans, CSV and text files, decryption,
  indexing. An Office file's path after LibreOffice (its page count, its text layer, its index,
  its fields) never enters the scans lane.
- ``uploads`` (one process, the file-work lane): ingest's own file work (``UPLOAD_CALLS``:
  hashing each file and storing the new ones, a batch a call), called from ingest's thread
  (``call``). Started on its
  first call. Its own lane so that a drop's first documents are not stored behind the splits
  of those before them, nor a split behind the copy of a large upload; and out of the main
  process, whose CPU is the run's ceiling (2,032 files: 1.7 s of its 2.8 s for ingest). The
  lake's compaction, in the background and after a run, runs there too (``file_work``).

Lanes are separate processes rather than one pool with a cap on OCR's share: with a cap, OCR
leaves a core idle whenever nothing else is queued, and a short call still waits for the OCR
page in front of it; with lanes, OCR keeps every core when it is alone, and when other work
comes the kernel shares the cores between the lanes at once (an Office file's text layer of a
few milliseconds runs beside the OCR pages, not after them). The cost is idle processes
(a forkserver child each) and, while both lanes are busy, more runnable processes than cores.
Each lane is a ``ProcessPoolRunner``: the same time limits, kills and recoveries.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from infra.local.cpu import ProcessPoolRunner
from infra.local.cpu_priority import call_key

if TYPE_CHECKING:
    from pebble import ProcessPool

__all__ = ["T", "SHORT_CALLS", "SPILL_CALLS", "UPLOAD_CALLS", "SCANS_NICE", "SCAN_CALLS",
           "warm_short_lane", "LanedCpu"]

T = TypeVar("T")

SHORT_CALLS = frozenset({"sniff_file", "count_pages", "run_rules", "kind_score",
                         "run_rules_of_kind"})
"""Calls that run in the short lane (by function name): the sniff and the page count are bounded
by reading a header or a cross-reference table, never by the number of pages; the offline fields
rules and the document-kind score before them take milliseconds a document (8 and 1.6 ms on the
Kleister NDAs; ``run_rules_of_kind`` is both in one call), and a document's result is published
only after them, so they must not queue behind OCR either. A long document's rules and score
take seconds (4 s of rules on a 363-page book) and come under other names
(``extract.fields.long_text``): the documents lane's."""

SPILL_CALLS = frozenset({"run_rules", "kind_score", "run_rules_of_kind"})
"""Short calls that may run in the documents lane instead, while that lane has no document's
work and a process idles: the offline fields' rules and kind score, milliseconds each but one a
document, and all of a run's work once its documents are read. In one process they queued
while the documents lane's processes idled: 83 NDAs' last results came 0.35 s after their last
text (the short lane alone on one core of two), and a run asking a folder read before for its
fields used one core of two throughout. A call made then goes to the documents lane at once;
one waiting for the short lane is handed over the moment a documents call ends and leaves the
lane to the rules (``PriorityGate.hand_over``), the first of them in the short lane's order.
Never beside a read or a conversion there: mixed with a room's reads they made those wait
(median job 1.73 s against 1.28). The sniff and the page count stay in the short lane: a
document's first step waits on them. A process that takes its first rules call builds them
then (0.08 s, ``warm_short_lane``'s work)."""

UPLOAD_CALLS = frozenset({"fingerprint_files", "store_uploads"})
"""Ingest's file work (``ingest.fingerprint``), by function name: the ``uploads`` lane's."""

SCANS_NICE = 10
"""Niceness added to the scans lane's processes: a weight of about a tenth of a normal process's
under Linux's scheduler, so short work beside a scan drop runs nearly as fast as alone."""

SCAN_CALLS = frozenset({"_ocr_one"})
"""The OCR of one page (``extract.readers.ocr``; 1.5 s a page alone on a core, 5 to 10 s under
load), by function name. The glance before it (``look_at_pages``: a page's largest image, and
a low-resolution look for ink; milliseconds a page, five pages a unit at most) runs in the
documents lane, ordered by its document like any call there: in the scans lane a one-page
``.pptx`` whose page has no text layer waited 2.5 s behind a scan's OCR pages to learn that it
holds no picture either."""


def warm_short_lane() -> None:
    """The short lane's warm-up: the offline fields rules and the document-kind model built
    (their imports beyond the fork server's preload, the two models loaded: 0.08 s of CPU in a
    forked worker), so the first document's score and rules do not pay for it."""
    from extract.fields.applicability.model import nda_model
    from extract.fields.rules.offline import shipped_rules

    shipped_rules()
    nda_model()


def _import_compaction() -> None:
    import lake.compaction  # noqa: F401  (the import is the preparation)
    from lake.schema import convert_lists_without_pandas

    convert_lists_without_pandas()


def _nothing() -> None:
    """A lane's warm-up that only starts its process (the fork server preloads the rest)."""


class LanedCpu:
    """``CpuRunner`` that routes each call to its lane (see the module's docstring)."""

    def __init__(self, workers: int, short_workers: int = 1):
        self.short = ProcessPoolRunner(short_workers, warm_up=warm_short_lane)
        # OCR pages take seconds: one admitted a process, so a small scan's pages pass a large
        # one's as soon as a process is free (a page ready beside each buys nothing there).
        self.scans = ProcessPoolRunner(workers, nice=SCANS_NICE, admitted=workers)
        self.express = ProcessPoolRunner(1, admitted=1)
        self.documents = ProcessPoolRunner(workers)
        self.documents.after_release = self._spill_waiting
        self._spilled = 0  # rules calls admitted to the documents lane (``SPILL_CALLS``)
        self.uploads = ProcessPoolRunner(1)
        self._warm_thread: threading.Thread | None = None
        self._warm_cancel = threading.Event()
        self._stopping: list[ProcessPool | None] = []  # stopped, to join (``close``)

    @property
    def uploads_started(self) -> bool:
        """Whether the uploads lane's process exists (``infra.local.pooled_uploads``)."""
        return self.uploads.started

    def lane(self, fn: Callable[..., Any]) -> ProcessPoolRunner:
        name = fn.__name__
        if name in SHORT_CALLS:
            return self.short
        if name in UPLOAD_CALLS:
            return self.uploads
        return self.scans if name in SCAN_CALLS else self.documents

    def lane_now(self, fn: Callable[..., Any], key: float) -> ProcessPoolRunner:
        """``lane``, for a call of ``key`` made now: an OCR page that goes before every page
        of the scans lane, while the express lane is free, goes there."""
        lane = self.lane(fn)
        if (lane is self.scans and self.express.gate.admitted < self.express.gate.slots
                and self.scans.gate.outranks_every_call(key)):
            return self.express
        return lane

    async def run(self, fn: Callable[..., T], *args: Any, timeout_s: float) -> T:
        if fn.__name__ in SPILL_CALLS:
            return await self._run_spillable(fn, args, timeout_s)
        return await self.lane_now(fn, call_key()).run(fn, *args, timeout_s=timeout_s)

    async def _run_spillable(self, fn: Callable[..., T], args: tuple, timeout_s: float) -> T:
        """A ``SPILL_CALLS`` call: in the short lane, or in an idle process of the documents
        lane, whichever takes it first."""
        short = self.short
        if short.gate.admitted >= short.workers and self._documents_free_for_rules():
            self._spilled += 1
            try:
                return await self.documents.run(fn, *args, timeout_s=timeout_s)
            finally:
                self._spill_ended()
        key = call_key()
        short.in_flight += 1
        try:
            owner = await short.gate.acquire(key, movable=True)
        except BaseException:
            short.in_flight -= 1
            raise
        if owner is None:
            return await short.run_admitted(fn, *args, timeout_s=timeout_s, key=key,
                                            counted=True)
        short.in_flight -= 1  # handed to the documents lane, and counted there (``_spill_waiting``)
        try:
            return await self.documents.run_admitted(fn, *args, timeout_s=timeout_s, key=key)
        finally:
            self._spill_ended()

    def _spill_ended(self) -> None:
        """A rules call in the documents lane ended (its slot already released): the process
        it leaves takes the next one waiting, as after any documents call (``_spill_waiting``,
        which ran before this call stopped counting as the rules')."""
        self._spilled -= 1
        self._spill_waiting()

    def _documents_free_for_rules(self) -> bool:
        """Whether the documents lane has a process idle and no document's work (a read, a
        conversion) running or waiting there: rules calls take only what reading leaves. Mixed
        with the reads, they made a room's reads wait (median job 1.73 s against 1.28)."""
        lane = self.documents
        return (lane.started and lane.gate.waiting == 0 and lane.gate.admitted == self._spilled
                and lane.gate.admitted < lane.workers)

    def _spill_waiting(self) -> None:
        """After a documents call ends: each process it left to the rules takes the first rules
        call waiting for the short lane."""
        while self._documents_free_for_rules() and self.short.gate.hand_over(
                self.documents, self.documents.gate, undo=self._spill_ended):
            self._spilled += 1

    def waiting(self) -> int:
        """The event loop's calls waiting for a process, every lane (``ProcessPoolRunner.gate``)."""
        return sum(lane.gate.waiting
                   for lane in (self.short, self.scans, self.express, self.documents))

    def prepare_file_work(self) -> None:
        """Have the file-work lane import the lake's compaction now, while the run goes on
        (numpy and pyarrow's compute: 0.3 s of CPU that otherwise lengthens the run's end)."""
        self.uploads.submit(_import_compaction)

    def file_work(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in the uploads lane's process, from any thread, blocking, no time
        limit: per-file work a run's coordinating process hands off (the lake's compaction)."""
        return self.uploads.call(fn, *args)

    def call(self, fn: Callable[..., T], *args: Any, timeout_s: float | None = None) -> T:
        """``run`` from a thread of its own, blocking (``ProcessPoolRunner.call``)."""
        return self.lane(fn).call(fn, *args, timeout_s=timeout_s)

    def warm(self, *, rules: bool = True) -> threading.Thread:
        """Start the lanes every document uses (and ingest's), on a thread: forking waits for
        the fork server's imports (0.6 to 0.9 s of a one-document run's 2.3 s were this wait
        on the main thread, before ingest began), and ingest's first batches need no worker
        (``infra.local.pooled_uploads``). A call meanwhile waits for its lane as before. The
        short lane builds the offline rules only when the run uses them (``rules``): its one
        process is the one a PDF's page count waits for. The scans lane starts on its first
        call."""

        cancel = self._warm_cancel = threading.Event()

        def start() -> None:
            for lane, warm_up in ((self.documents, None),
                                  (self.short, None if rules else _nothing),
                                  (self.uploads, _nothing)):
                if cancel.is_set():  # the run ended first: start nothing more
                    return
                with contextlib.suppress(Exception):
                    lane.warm(warm_up)

        thread = self._warm_thread = threading.Thread(target=start, name="cpu-warm",
                                                      daemon=True)
        thread.start()
        return thread

    def stop_lanes(self, *, keep_file_work: bool) -> None:
        """Stop the lanes without waiting for them (``close`` does), the file-work one too
        unless ``keep_file_work``: their workers end while the run's end goes on (its last
        publish and flush, a compaction). Each pool's manager thread hears the stop at once
        (``infra.local.prompt_pool``); with pebble's own 0.1 s sleep between its looks,
        ``close`` waited 0.05 to 0.1 s at the end of every run. A shorter sleep would have
        ended that wait too but costs the run's process all along: idle with three pools
        started, 7 ms of CPU a second at 0.1 s, 12 at 0.05, 22 at 0.02."""
        self._cancel_warm_up()
        lanes = [self.short, self.scans, self.express, self.documents]
        self._stopping.extend(lane.stop() for lane in lanes + ([] if keep_file_work
                                                                else [self.uploads]))

    def close(self) -> None:
        """Stop every lane, then wait for them together (``ProcessPoolRunner.stop``), those
        ``stop_lanes`` stopped too. A warm-up still running is cancelled and waited
        for first: a lane it started after the stop would outlive the run, and its worker
        processes (not daemons) would hold the interpreter's exit (a run stopped by SIGTERM
        early did not exit)."""
        self.stop_lanes(keep_file_work=False)
        stopped, self._stopping = self._stopping, []
        for pool in stopped:
            if pool is not None:
                pool.join(timeout=10)

    def _cancel_warm_up(self) -> None:
        if self._warm_thread is not None:
            self._warm_cancel.set()
            self._warm_thread.join()
            self._warm_thread = None
