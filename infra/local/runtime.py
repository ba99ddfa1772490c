"""The embedded runtime: workers, poller and indexer on one machine, until the work is done.

An asyncio pool of ``concurrency`` workers takes messages from the SQLite queues (split first,
so every document is planned early; then units, interleaved fairly across jobs; then index; then
fields), and hands parsing to a pool of processes. A publisher task turns stored field results
into their JSON and lake rows (``infra.local.publisher``). The poller runs every
``poll_interval_s`` and also as soon as a unit finishes, in the one runtime that holds the
poller's lease (a second runtime on the same home works messages but does not poll). On start
the runtime recovers from a crash: messages held by dead processes become visible again and
planned-but-unsent splits are re-sent; the poller's outbox pass re-sends lost index and fields
messages and status events.

No exception ends a worker or the receiver for good: a task that fails is logged and restarted,
and one that keeps failing stops the run with ``RuntimeFailure`` instead of leaving it waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import random
import signal
import time
import uuid
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from extract import run_choices
from extract.context import SLOT_RELEASE, HandlerContext, default_worker_name
from extract.delivery_limits import stage_time_limit
from extract.formats.scratch import sweep_orphans
from extract.handlers.split import pages_read_at_split
from extract.handling import Outcome, handle_dead_letter, handle_message, settle_together
from extract.messages import (
    CONVERT_QUEUE,
    FIELDS_QUEUE,
    INDEX_QUEUE,
    QUEUES,
    READ_QUEUE,
    SHEET_QUEUE,
    SPLIT_QUEUE,
    dead_letter_queue,
)
from extract.poller import PollCursor, poll_once
from extract.ports import ReceivedMessage
from infra.local.activity import CURRENT_WORK, ActivityBoard, WatchedCpu
from infra.local.background_ingest import BackgroundIngest
from infra.local.cpu_lanes import LanedCpu
from infra.local.cpu_priority import CALL_KEY
from infra.local.jobstore import SqliteJobStore
from infra.local.objectstore import FolderObjectStore
from infra.local.pacing import CommitWaits, PollPacer
from infra.local.pooled_uploads import PooledUploads
from infra.local.private_home import make_private
from infra.local.publisher import publish_once, run_publisher
from infra.local.queue import SqliteQueue
from infra.local.search import Fts5SearchIndex
from infra.local.startup_objects import freeze_startup_objects
from infra.local.timed_ports import StageTimes, TimedCpu, TimedObjects, TimedSink
from infra.settings import Settings
from ingest.planner import Planner
from lake.schema import convert_lists_without_pandas
from lake.writer import RELAXED_COMMIT, GroupCommitter, ParquetEventWriter

__all__ = ["log", "RECEIVE_ORDER", "IDLE_SLEEP_S", "DEAD_LETTER_CHECK_S", "INDEX_TOGETHER",
           "SPLIT_TOGETHER", "CONVERT_TOGETHER", "CONVERT_SHARED_FROM", "CONVERT_GATHER_S",
           "COMPACT_HERE_BELOW_FILES", "Batch",
           "RuntimeStats", "RuntimeFailure", "LocalRuntime", "POLLER_LEASE", "STOP_SIGNALS"]

log = logging.getLogger(__name__)

# A document's last steps (index, then fields) before new reads: documents finish, become
# searchable and publish as the run goes rather than all at its end (the fields stage waits for
# indexing), and the rules fill the CPU the reads leave idle.
RECEIVE_ORDER = (SPLIT_QUEUE, CONVERT_QUEUE, SHEET_QUEUE, INDEX_QUEUE, FIELDS_QUEUE, READ_QUEUE)
IDLE_SLEEP_S = 0.05
DEAD_LETTER_CHECK_S = 1.0
INDEX_TOGETHER = 32
"""Index messages taken in one receive and handled together, by one worker
(``extract.handling.settle_together``): indexing a few documents takes milliseconds."""
CONVERT_TOGETHER = 8
"""The most Office files one LibreOffice process converts together; more waiting are shared
among the free converters, ``CONVERT_SHARED_FROM`` at least each (eight one-page files: 1.7 s in
one process, 1.3 s each alone)."""
CONVERT_SHARED_FROM = 4
"""The fewest Office files a LibreOffice process takes while more wait: a few files are shared
among the free converters no further. A process's start is nearly all of its time (one one-page
file 1.3 s, eight 1.7 s), so four in one cost about what two in each of two do, and the other
converter stays free for the files that come next: in a room the drop's splits sent four, then
four more 0.6 s later, and with two processes of two busy the second four waited 3.3 s."""
CONVERT_GATHER_S = 0.3
"""How long the first Office files of a drop wait for the rest while splits that may send more
are waiting or under way (never when none are: a lone file does not wait). Without it the first
one or two took the converters alone, and the other five of the room's waited 4 s for them."""
SPLIT_TOGETHER = 16
"""The most split messages one worker takes together; fewer when the queue holds less than that
for every free worker, so a few documents still spread over every worker."""

COMPACT_HERE_BELOW_FILES = 300
"""Event files written by a run under which its compaction is done in its own process
(``LocalRuntime.compact_lake``). The run's process has the compaction's imports already (it
writes the lake); the file-work lane must import them first (numpy, pyarrow's compute: 0.3 s of
CPU, taken from the run's other work on two cores), and the merge is on the run's path either
way. So only a run whose merge would cost its own process more than that import goes to the
lane: 2,032 documents write 646 files (1.0 s of merging); 83 NDAs with their fields 140 to 190,
which merge here in 0.2 s (with the lane from 100 files, six runs of that set took 3.94 s at
the median against 3.77 s)."""

Batch = tuple[ReceivedMessage, ...]
"""What a worker takes from the inbox: one message, or messages received together."""


@dataclass
class RuntimeStats:
    messages: int = 0
    retries: int = 0
    dead_letters: int = 0
    interrupted: bool = False
    stages: StageTimes = field(default_factory=StageTimes)


class RuntimeFailure(RuntimeError):
    """A part of the runtime kept failing after restarts: the run stops with this message."""


async def _prepare_readers(ctx: HandlerContext) -> None:
    """The run's readers make their model clients now, not inside the first units' slots; what
    cannot be made (no API key) is said by the first unit that needs it, as before."""
    with contextlib.suppress(Exception):
        await ctx.reader_chain().prepare(ctx)


@dataclass
class _Supervisor:
    """Restarts a background task that fails; gives up (and stops the run) if it keeps failing."""

    wake: asyncio.Event
    max_failures: int = 5
    window_s: float = 60.0
    fatal: str | None = None
    _failures: dict[str, deque[float]] = field(default_factory=dict)

    async def keep_running(self, name: str, body: Callable[[], Awaitable[None]]) -> None:
        while True:
            try:
                await body()
                return
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if task is not None and task.cancelling():
                    raise
                error: BaseException = RuntimeError("cancelled by someone else")
            except Exception as caught:
                error = caught
            log.error("%s failed; restarting it: %r", name, error, exc_info=error)
            failures = self._failures.setdefault(name, deque())
            now = time.monotonic()
            failures.append(now)
            while failures and failures[0] < now - self.window_s:
                failures.popleft()
            if len(failures) >= self.max_failures:
                self.fatal = (f"{name} failed {len(failures)} times in {self.window_s:g} s; "
                              f"last error: {error!r}")
                self.wake.set()
                return
            await asyncio.sleep(min(0.1 * 2 ** len(failures), 5.0))


class LocalRuntime:
    """Every port on the local machine, and the loop that drives them."""

    def __init__(self, settings: Settings):
        self.settings = settings
        home = make_private(settings.home)
        self.objects = FolderObjectStore(home / "objects")
        self.queue = SqliteQueue(home / "queue.db", max_receives=settings.max_receives)
        self.store = SqliteJobStore(home / "jobs.db")
        self.index = Fts5SearchIndex(home / "search.db")
        self.writer = ParquetEventWriter.for_uri(settings.lake)
        convert_lists_without_pandas()  # pyarrow's first list, without its import of pandas
        self.stats = RuntimeStats()
        self.cpu = LanedCpu(settings.cpu_workers)  # short calls in a lane of their own
        # The lake's background compaction reads, merges and rewrites files: per-file work, done
        # by the file-work (uploads) lane's process, not by the one that coordinates the run.
        self.writer.compact_in = self.cpu.file_work
        self.holder = f"{default_worker_name()}:{uuid.uuid4().hex[:8]}"
        self._busy = 0  # deliveries holding a concurrency slot
        self._committer: GroupCommitter | None = None  # the running ``process``'s
        self._saturated = False  # every slot taken or CPU calls waiting (``_note_saturation``)
        self._handling = 0  # worker tasks with a message, slot held or released
        # A read that has stored its pages frees its slot while it waits for its events' flush
        # (``extract.context.release_slot``): twice as many tasks as slots let the next message
        # start meanwhile, and the receiver never takes a message no task is free for.
        self._tasks = 2 * settings.concurrency
        # Queues with a concurrency of their own (LibreOffice: a process and its memory each),
        # counted from receipt to the end of handling.
        self._queue_limits = {CONVERT_QUEUE: settings.convert_concurrency}
        if settings.read_concurrency is not None:
            self._queue_limits[READ_QUEUE] = settings.read_concurrency
        self._queue_busy: dict[str, int] = dict.fromkeys(self._queue_limits, 0)
        # A reserved concurrency is kept for reads (as AWS keeps a function's): the other stages
        # hold at most the rest of the workers (at least one), so a backlog of splits never takes
        # every worker while planned units wait for one.
        self._others_limit: int | None = None
        if settings.read_concurrency is not None:
            self._others_limit = settings.concurrency - min(settings.read_concurrency,
                                                            settings.concurrency - 1)
        self._worker_done = asyncio.Event()
        self._extract_config = settings.extract_config()
        self._wake: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._cursor = PollCursor()
        self._splits_together = True  # decided again by each ``process`` from its readers
        self._convert_gather_since: float | None = None  # see ``_together``
        # What is being worked on, in words, for the live progress (``infra.local.activity``).
        self.activity = ActivityBoard(self._job_name, self._waiting_documents, self.cpu.waiting)

    def _job_name(self, job_id: str) -> tuple[str, int | None] | None:
        job = self.store.get_job(job_id)
        return None if job is None else (job.source_name, job.pages)

    def _waiting_documents(self) -> int:
        return self.queue.waiting_documents(RECEIVE_ORDER)

    def planner(self) -> Planner:
        return Planner(self.store, self.objects, self.queue, self.writer.write,
                       max_bytes=self.settings.max_file_bytes,
                       run_choices=run_choices.record(self.settings.extract_config()),
                       uploads=PooledUploads(self.cpu))

    def ingest_in_background(self, files, *, retry_failed: bool = False, passwords=None,
                             after_batch=None, source_paths=None,
                             fields: tuple[str, str] | None = None) -> BackgroundIngest:
        """Plan ``files`` on a thread while ``process`` runs (see ``BackgroundIngest``);
        ``fields`` (schema, strategy) and the settings' run choices are kept with each job."""
        return BackgroundIngest(self.settings, self.objects, self.writer, files,
                                retry_failed=retry_failed, passwords=passwords,
                                source_paths=source_paths, after_batch=after_batch,
                                fields=fields, on_finished=self.nudge_from_thread,
                                on_batch=self.wake_receiver_from_thread,
                                uploads=PooledUploads(self.cpu)).start()

    def recover(self, *, erase_passwords: bool = True) -> dict[str, int]:
        """Undo what a crash left behind; safe to run at any time (duplicates are no-ops).

        Index messages and status events lost in a crash are repaired by the poller's own
        outbox pass, not here.
        """
        released = self.queue.release_orphans()
        resent_splits = self.planner().resend_unsent()
        # Passwords of an earlier run that did not finish (``erase_passwords``): serve erases
        # them itself before it takes uploads, and passes False here.
        erased = self.store.erase_passwords() if erase_passwords else 0
        removed = self._remove_stale_decrypted()
        # Scratch folders of killed processes (a document's copy in a conversion's folder).
        swept = len(sweep_orphans())
        return {"released": released, "resent_splits": resent_splits,
                "erased_passwords": erased, "removed_decrypted": removed,
                "removed_scratch": swept}

    def compact_lake(self):
        """Merge the small event files of the lake's partitions that hold
        ``compact_after_run_min_files`` files or more (``lake.compaction.compact_after_run``),
        in the file-work lane's process: 1.0 s of a 2,032-document run's main-process CPU was
        this per-file work. A run that wrote fewer than ``COMPACT_HERE_BELOW_FILES`` files
        compacts here (0.2 s for 190 files), where the lane would first import the compaction's
        code. None when no partition is due (the listing alone says so, without compaction's
        imports) or the compaction failed. Never raises; done here if the worker cannot do it."""
        from lake.files import open_lake
        from lake.partitions import partitions_due

        lake = str(self.settings.lake)
        least = self.settings.compact_after_run_min_files
        try:
            if not partitions_due(*open_lake(lake), least):
                return None
        except Exception as error:  # noqa: BLE001 - the listing failed: compact_after_run says so
            log.debug("the lake's partitions could not be listed (%s)", error)
        from lake.compaction import compact_after_run

        if not self._compacts_in_file_work():
            return compact_after_run(lake, least)
        try:
            return self.cpu.file_work(compact_after_run, lake, least)
        except Exception as error:  # noqa: BLE001 - its process died: compact here instead
            log.warning("compaction in a worker failed (%s); compacting here", error)
            return compact_after_run(lake, least)

    def _compacts_in_file_work(self) -> bool:
        """Whether ``compact_lake`` hands the compaction to the file-work lane."""
        return self.writer.stats.files >= COMPACT_HERE_BELOW_FILES

    def _remove_stale_decrypted(self) -> int:
        """``extract.poller.remove_stale_decrypted`` (the AWS poller runs it too)."""
        from extract.poller import remove_stale_decrypted

        return remove_stale_decrypted(self.objects, self.store)

    def idle(self) -> bool:
        """No active job, nothing left to index or to publish, nothing in any queue."""
        if (self.store.active_jobs() or self.store.jobs_to_index()
                or self.store.fields_pending()):
            return False
        for queue in QUEUES:
            depth = self.queue.depth(queue)
            if depth.visible or depth.in_flight or depth.dead_letter:
                return False
        return True

    async def process(self, done: Callable[[], bool], *,
                      compact_lake: bool = False) -> RuntimeStats:
        """Run workers and the poller until ``done()`` is true (checked after each poll).

        ``compact_lake``: when the run ends with ``done()`` (not a stop, not a failure), merge
        its small event files (``compact_lake``) before the worker processes are stopped, so
        the file-work lane's process does it without being started again (1.0 s of an
        899-page run's end was that restart and its imports).

        Raises ``RuntimeFailure`` if a part of the runtime keeps failing after restarts: a run
        stops with a clear error rather than waiting forever.
        """
        freeze_startup_objects()
        settings = self.settings
        cpu = self.cpu
        committer = self._committer = GroupCommitter(
            self.writer, max_delay_s=settings.event_flush_s,
            relaxed_delay_s=settings.event_relaxed_flush_s)
        self._saturated = False
        self._pace_relaxed_commits()  # nothing holds a slot yet
        wake = self._wake = asyncio.Event()
        self._worker_done = asyncio.Event()  # this loop's (a runtime may run process twice)
        self._loop = asyncio.get_running_loop()
        publish = asyncio.Event()
        stages = self.stats.stages

        def notify() -> None:  # a handler changed the store: the poller and publisher look
            wake.set()
            publish.set()

        ctx = HandlerContext(store=self.store, objects=TimedObjects(self.objects, stages),
                             queue=self.queue, sink=TimedSink(committer, stages),
                             cpu=TimedCpu(WatchedCpu(cpu, self.activity), stages),
                             config=settings.extract_config(),
                             index=self.index, notify=notify, results_stored=publish.set,
                             worker_objects=self.objects, worker_index=self.index)
        # Splits are taken together when this run reads text at the split (a folder of PDFs);
        # a run for a model or OCR reads nothing there, and a batch would only be handed back.
        self._splits_together = pages_read_at_split(ctx) > 0
        supervisor = _Supervisor(wake)
        stop = asyncio.Event()
        shutdown = _on_signals(wake)
        inbox: asyncio.Queue[Batch] = asyncio.Queue()
        tasks = [asyncio.create_task(supervisor.keep_running(
                     f"worker {n}", lambda: self._worker(ctx, inbox)))
                 for n in range(self._tasks)]
        tasks.append(asyncio.create_task(supervisor.keep_running(
            "receiver", lambda: self._receiver(inbox, stop))))
        tasks.append(asyncio.create_task(supervisor.keep_running(
            "publisher", lambda: run_publisher(ctx, publish, stop, settings.poll_interval_s,
                                               saturated=lambda: self._saturated,
                                               more_coming=self._more_results_coming))))
        tasks.append(asyncio.create_task(_prepare_readers(ctx)))
        poller = _PollerClock(settings.poll_interval_s)
        pacer = PollPacer(settings.poll_interval_s)
        # The poller's commits through a sink that notes the loop's CPU while they wait for a
        # flush: other tasks' work, which the pacer does not count as the pass's.
        waits = CommitWaits(ctx.sink)
        poll_ctx = dataclasses.replace(ctx, sink=waits)
        compaction_prepared = False
        try:
            while supervisor.fatal is None:
                pacer.started()
                try:
                    await self._poll(poll_ctx, poller)
                except Exception:  # the next pass decides again, from the store
                    log.exception("poll failed; retrying at the next interval")
                # A pass may have sent index or fields messages: the receiver looks now, not
                # after its idle sleep (the next stage starts on a wake-up, not a poll).
                self._worker_done.set()
                if compact_lake and not compaction_prepared and self._compacts_in_file_work():
                    compaction_prepared = True  # the run's end compacts in the lane: import now
                    cpu.prepare_file_work()
                finished = done()
                pacer.finished(waits.taken())  # the stop test is part of a pass's cost
                if finished or shutdown.is_set() or supervisor.fatal:
                    break
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(wake.wait(), timeout=settings.poll_interval_s)
                if (pause := pacer.wait_s()) > 0:  # a dear pass: gather more wake-ups first
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(shutdown.wait(), timeout=pause)
                wake.clear()
        finally:
            stop.set()
            self.stats.interrupted = shutdown.is_set()
            # The stop handlers stay while the messages in hand are finished: that is when a
            # second Ctrl-C means "now". Removed any earlier, a second signal already written
            # to the loop's wake-up pipe would find no handler there and be lost.
            try:
                await self._finish(ctx, inbox, supervisor, tasks, committer,
                                   compact_lake=compact_lake, shutdown=shutdown)
            finally:
                _remove_signal_handlers()
        if supervisor.fatal:
            raise RuntimeFailure(supervisor.fatal)
        return self.stats

    async def _finish(self, ctx: HandlerContext, inbox: asyncio.Queue[Batch],
                      supervisor: _Supervisor, tasks: list[asyncio.Task], committer: GroupCommitter,
                      *, compact_lake: bool, shutdown: asyncio.Event) -> None:
        """The end of ``process``: finish the messages in hand, publish, flush the events."""
        # Messages taken for a worker are finished, not abandoned (their receive is counted);
        # if the workers are gone, they are handed back at once.
        await self._drain_inbox(inbox, supervisor)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        # No handler calls a lane from here on: the lanes' pools wind down while the last
        # results are published and the events flushed. The file-work lane stays for a
        # background compaction.
        self.cpu.stop_lanes(keep_file_work=True)
        with contextlib.suppress(Exception):  # results stored by the last messages
            await publish_once(ctx)
        await committer.close()
        ended = not shutdown.is_set() and supervisor.fatal is None
        if ended:
            # A background compaction in the file-work lane ends first: stopping the lanes
            # would kill it, and the writer would do it again here (a stopped run does not
            # wait for it: a compaction cut short loses no event, and the next one finishes).
            with contextlib.suppress(Exception):  # its failure is logged where it happened
                await asyncio.to_thread(self.writer.wait_for_compaction)
        if compact_lake and ended:
            # The file-work lane winds down while the lake compacts, unless it compacts.
            self.cpu.stop_lanes(keep_file_work=self._compacts_in_file_work())
            await asyncio.to_thread(self.compact_lake)  # never raises
        self.cpu.close()
        with contextlib.suppress(Exception):
            self.store.release_lease(POLLER_LEASE, self.holder)

    def close(self) -> None:
        """Close this runtime's databases (job store, queue, search index) now, not when the
        collector gets to them: the last connection to close removes SQLite's side files
        (``-wal``, ``-shm``), and that should happen before the command returns. Its worker
        processes go too: ingest may have started the uploads lane again after a run stopped."""
        self.cpu.close()
        for database in (self.index, self.queue, self.store):
            with contextlib.suppress(Exception):
                database.close()

    def nudge(self) -> None:
        """Poll now rather than at the next interval (the store changed outside a handler)."""
        if self._wake is not None:
            self._wake.set()
        self._worker_done.set()  # new messages may be waiting: the receiver looks too

    def nudge_from_thread(self) -> None:
        """``nudge`` from another thread (ingest ending): a run with nothing left to do returns
        at once rather than after a poll interval."""
        loop, wake = self._loop, self._wake
        if loop is not None and wake is not None:
            with contextlib.suppress(RuntimeError):  # the loop has closed: nothing to wake
                loop.call_soon_threadsafe(self.nudge)

    def wake_receiver_from_thread(self) -> None:
        """New messages from another thread (an ingest batch's splits): the receiver takes them
        now rather than after its idle sleep; the poller is not woken (nothing it reads moved)."""
        loop = self._loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop has closed: nothing to wake
                loop.call_soon_threadsafe(lambda: self._worker_done.set())

    async def _poll(self, ctx: HandlerContext, clock: _PollerClock) -> None:
        """One poll, by the one runtime that holds the poller's lease."""
        ttl = max(3 * self.settings.poll_interval_s, 15.0)
        if not self.store.acquire_lease(POLLER_LEASE, self.holder, ttl):
            clock.lost()
            self._cursor = PollCursor()  # another poller moved things meanwhile: read them all
            return
        # A pass a wake-up asks for between two intervals reads only the jobs changed since the
        # last pass (``extract.poller``); every interval, a full one counts stalls.
        full = clock.full_due()
        # The poller holds no slot: while the runtime is saturated its commits gather with the
        # relaxed ones (each pass's job events were a flush of their own: half a text run's).
        relaxed = RELAXED_COMMIT.set(self._saturated)
        try:
            with self.stats.stages.timing("poll"):
                await poll_once(ctx, elapsed_s=clock.tick() if full else 0.0,
                                cursor=self._cursor, full=full)
        finally:
            RELAXED_COMMIT.reset(relaxed)

    async def _drain_inbox(self, inbox: asyncio.Queue[Batch],
                           supervisor: _Supervisor) -> None:
        joined = asyncio.ensure_future(inbox.join())
        while not joined.done():
            await asyncio.wait([joined], timeout=0.5)
            if supervisor.fatal:
                self._release_waiting(inbox)
        await joined

    def _release_waiting(self, inbox: asyncio.Queue[Batch]) -> None:
        """Hand back the messages no worker has started, for the next process."""
        while not inbox.empty():
            batch = inbox.get_nowait()
            for received in batch:
                self.queue.change_visibility(received, 0)
            if batch[0].queue in self._queue_busy:
                self._queue_busy[batch[0].queue] -= 1
            inbox.task_done()

    async def _receiver(self, inbox: asyncio.Queue[Batch], stop: asyncio.Event) -> None:
        """One task receives for all workers, in batches, and only as many messages as there are
        idle workers: a message received is started at once, so no receive count is spent on a
        message that waits in memory (and a stop never has to hand one back)."""
        timeout = self.settings.visibility_timeout_s
        dead_letter_queues = tuple(dead_letter_queue(q) for q in RECEIVE_ORDER)
        next_dead_letter_check = 0.0
        while not stop.is_set():
            room = min(self.settings.concurrency - self._busy,
                       self._tasks - self._handling) - inbox.qsize()
            others = 0 if self._others_limit is None else (
                self._busy + inbox.qsize() - self._queue_busy[READ_QUEUE])
            got = 0
            wanted_queues: tuple[str, ...] = RECEIVE_ORDER
            if time.monotonic() >= next_dead_letter_check:  # rare: looked at once a second
                wanted_queues += dead_letter_queues
                next_dead_letter_check = time.monotonic() + DEAD_LETTER_CHECK_S
            ready = self.queue.visible_queues(wanted_queues) if room > 0 else set()
            for queue in wanted_queues:
                if room - got <= 0:
                    break
                if queue not in ready:
                    continue
                wanted = min(10, room - got)
                if queue in self._queue_limits:
                    wanted = min(wanted, self._queue_limits[queue] - self._queue_busy[queue])
                    if wanted <= 0:
                        continue
                if self._others_limit is not None and queue != READ_QUEUE:
                    wanted = min(wanted, self._others_limit - others)
                    if wanted <= 0:
                        continue
                together = self._together(queue, room - got)
                if together is None:  # not yet (``_together``)
                    continue
                if together > 1:  # handled together: a batch takes one worker
                    taken = self.queue.receive(queue, max_messages=together,
                                               visibility_timeout_s=timeout)
                    batches = [tuple(taken)] if taken else []
                else:
                    batches = [(message,) for message in self.queue.receive(
                        queue, max_messages=wanted, visibility_timeout_s=timeout)]
                for batch in batches:
                    inbox.put_nowait(batch)
                    if queue in self._queue_busy:
                        self._queue_busy[queue] += 1
                    if queue != READ_QUEUE:
                        others += 1
                    got += 1
            documents = self.cpu.documents
            self._note_saturation(room - got <= 0 or documents.in_flight > documents.workers)
            if got == 0 or room - got <= 0:
                # Nothing to take, or no free worker: wait until a worker finishes (it may have
                # sent messages and it frees a slot), or poll again after a short sleep.
                self._worker_done.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._worker_done.wait(), timeout=IDLE_SLEEP_S)
            else:
                await asyncio.sleep(0)

    def _note_saturation(self, saturated: bool) -> None:
        """Saturated: every worker slot taken, or the documents lane with calls waiting for a
        process. A message that a commit holds back (a split's reads, the index messages the
        poller sends) would then wait for a slot or behind those calls anyway, so relaxed
        commits may gather for longer (``event_saturated_flush_s``), and so may the poller's.
        The moment that ends the shorter wait is back (``event_relaxed_flush_s``), for a batch
        already waiting too: a burst's last jobs do not wait for it. A `doclake run` of 2,032
        NDAs on the text layer wrote 89 and 90 flushes instead of 275 and 285, and its process
        spent 7.0 and 7.1 s of CPU instead of 8.3 and 10.0."""
        if saturated == self._saturated:
            return
        self._saturated = saturated
        self._pace_relaxed_commits()

    def _pace_relaxed_commits(self) -> None:
        """How long relaxed commits may gather (``GroupCommitter.set_relaxed_delay``): longer
        while saturated (``_note_saturation``), and not at all while no delivery holds a slot:
        every handler has then released its own, nothing at work can join their batch, and
        the events of a burst's last unit waited 0.09 s for nobody before its job could end
        (0.4 % of the burst's drain)."""
        committer = self._committer
        if committer is None:
            return
        settings = self.settings
        if self._busy == 0:
            delay = 0.0
        elif self._saturated:
            delay = settings.event_saturated_flush_s
        else:
            delay = settings.event_relaxed_flush_s
        committer.set_relaxed_delay(delay)

    def _together(self, queue: str, free: int) -> int | None:
        """How many messages of ``queue`` one worker takes together (1 or less: one at a time;
        None: none yet). Splits only when the queue holds at least two for every free worker: a
        batch is handled by one worker, and a short queue is better spread."""
        if queue == INDEX_QUEUE:
            return INDEX_TOGETHER
        if queue == CONVERT_QUEUE:
            # The Office files waiting share the free converters, at least
            # ``CONVERT_SHARED_FROM`` a process (``extract.handlers.convert_together``).
            converters = self._queue_limits[queue] - self._queue_busy[queue]
            if converters <= 0:
                return 1
            backlog = self.queue.visible_count(queue, at_most=CONVERT_TOGETHER * converters)
            now = time.monotonic()
            if backlog < CONVERT_TOGETHER * converters and self._drop_being_split():
                # More of the drop's Office files are on their way: the first waits for them a
                # moment rather than taking a converter alone while they queue behind it.
                if self._convert_gather_since is None:
                    self._convert_gather_since = now
                if now - self._convert_gather_since < CONVERT_GATHER_S:
                    return None
            self._convert_gather_since = None
            return min(backlog, CONVERT_TOGETHER,
                       max(CONVERT_SHARED_FROM, -(-backlog // converters)))
        if queue == SPLIT_QUEUE and free > 0 and self._splits_together:
            backlog = self.queue.visible_count(queue, at_most=SPLIT_TOGETHER * free)
            return min(SPLIT_TOGETHER, backlog // free)
        return 1

    async def _worker(self, ctx: HandlerContext, inbox: asyncio.Queue[Batch]) -> None:
        while True:
            batch = await inbox.get()
            try:
                await self._handle_holding_a_slot(ctx, batch, inbox)
            finally:
                inbox.task_done()
                self._worker_done.set()

    def _more_results_coming(self) -> bool:
        """Whether a fields result may be stored soon: fields work in hand or waiting, or the
        runtime saturated (whatever it is doing, the publisher's gathering then costs no
        one)."""
        return (self._saturated or self.activity.in_hand(FIELDS_QUEUE) > 0
                or self.queue.visible_count(FIELDS_QUEUE, at_most=1) > 0)

    def _drop_being_split(self) -> bool:
        """Whether splits are waiting or under way: each may yet send a convert message."""
        return (self.activity.in_hand(SPLIT_QUEUE) > 0
                or self.queue.visible_count(SPLIT_QUEUE, at_most=1) > 0)

    async def _handle_holding_a_slot(self, ctx: HandlerContext, batch: Batch,
                                     inbox: asyncio.Queue[Batch]) -> None:
        queue = batch[0].queue
        self._busy += 1
        if self._busy == 1:
            self._pace_relaxed_commits()
        self._handling += 1
        held = True

        def release() -> None:  # once: when the handler says so, or when it ends
            nonlocal held
            if held:
                held = False
                self._busy -= 1
                if self._busy == 0:
                    self._pace_relaxed_commits()
                if queue in self._queue_busy:
                    self._queue_busy[queue] -= 1
                self._worker_done.set()
                # Called from the handler's own task: its later commits hold no slot, so they
                # may wait for a fuller batch (``lake.writer.RELAXED_COMMIT``).
                RELAXED_COMMIT.set(True)

        token = SLOT_RELEASE.set(release)
        relaxed = RELAXED_COMMIT.set(False)
        # The CPU lanes order this message's calls by its key (``infra.local.cpu_priority``).
        keys = [r.schedule_key for r in batch if r.schedule_key is not None]
        key = CALL_KEY.set(min(keys) if keys else None)
        entry = self.activity.start(queue, batch[0].body)
        work = CURRENT_WORK.set(entry)
        try:
            await self._handle(ctx, batch, inbox)
        except Exception:  # e.g. the lake's disk is full: never lose the worker itself
            log.exception("handling %s failed; it will be redelivered",
                          ", ".join(r.message_id for r in batch))
        finally:
            CURRENT_WORK.reset(work)
            self.activity.end(entry)
            CALL_KEY.reset(key)
            SLOT_RELEASE.reset(token)
            release()
            RELAXED_COMMIT.reset(relaxed)
            self._handling -= 1

    async def _handle(self, ctx: HandlerContext, batch: Batch,
                      inbox: asyncio.Queue[Batch]) -> None:
        """One message, or messages received together (``settle_together``): those the batch
        leaves go back to the inbox one by one, each for a worker of its own (a folder of
        workbooks is not read one after another by the worker that took the batch)."""
        heartbeat = asyncio.create_task(self._heartbeat(batch))
        queue = batch[0].queue
        left: list[int] = []
        try:
            with self.stats.stages.timing(f"handle:{queue}"):
                if len(batch) > 1:
                    outcomes, left = await settle_together(
                        ctx, batch, hand_back=lambda position: inbox.put_nowait(
                            (batch[position],)))
                elif queue.endswith("-dlq"):
                    outcomes = {0: await handle_dead_letter(ctx, batch[0])}
                    self.stats.dead_letters += 1
                else:
                    outcomes = {0: await handle_message(ctx, batch[0])}
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise
            log.warning("handling %s was cancelled; retrying it",
                        ", ".join(r.message_id for r in batch))
            outcomes, left = dict.fromkeys(range(len(batch)), Outcome.RETRY), []
        finally:
            heartbeat.cancel()
        self._settle_all([(batch[position], outcome) for position, outcome in outcomes.items()])
        for position in left:
            inbox.put_nowait((batch[position],))

    def _settle_all(self, settled: list[tuple[ReceivedMessage, Outcome]]) -> None:
        """Ack the handled messages (a batch's in one write), hand the others back."""
        self.queue.delete_many([received for received, outcome in settled
                                if outcome is Outcome.ACK])
        for received, outcome in settled:
            self.stats.messages += 1
            if outcome is not Outcome.ACK:
                self._retry(received)

    def _retry(self, received: ReceivedMessage) -> None:
        """Hand a message back for a retry after a backoff."""
        self.stats.retries += 1
        # Back off before the retry rather than waiting out the whole timeout.
        backoff = min(2.0 ** received.receive_count, self.settings.visibility_timeout_s)
        backoff *= random.uniform(0.5, 1.0)  # jitter: retries of a burst spread out
        self.queue.change_visibility(received, backoff)

    async def _heartbeat(self, batch: Batch) -> None:
        """Keep a long-running message hidden: extend its visibility at half the timeout, up to
        the stage's own time limit (``extract.delivery_limits``; the handler is cancelled there),
        so a handler that ignores its cancellation still gives its message back. A failed
        extension is logged and tried again; it never ends the heartbeat. A batch takes its
        stage's limit once (``settle_together``); what it leaves is handled, and kept hidden,
        one by one."""
        timeout = self.settings.visibility_timeout_s
        ceiling = time.monotonic() + stage_time_limit(batch[0].queue, self._extract_config)
        while True:
            await asyncio.sleep(timeout / 2)
            if time.monotonic() >= ceiling:
                log.warning("%s ran past its stage's time limit; no longer kept hidden",
                            ", ".join(r.message_id for r in batch))
                return
            for received in batch:
                try:
                    self.queue.change_visibility(received, timeout)
                except Exception:
                    log.exception("could not extend the visibility of %s", received.message_id)


POLLER_LEASE = "poller"


class _PollerClock:
    """Time since this runtime's previous full poll, for the no-progress clock.

    0 on the first poll after start or after losing the lease, so time when no poller ran (the
    runtime was down) never counts; capped, so a stalled event loop does not count in full. A
    full pass is due on the first poll and once a poll interval has passed since the last."""

    def __init__(self, poll_interval_s: float):
        self.poll_interval_s = poll_interval_s
        self.cap_s = 2 * poll_interval_s + 1.0
        self._last: float | None = None

    def full_due(self) -> bool:
        return self._last is None or time.monotonic() - self._last >= self.poll_interval_s

    def tick(self) -> float:
        now = time.monotonic()
        elapsed = 0.0 if self._last is None else min(now - self._last, self.cap_s)
        self._last = now
        return elapsed

    def lost(self) -> None:
        self._last = None


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _on_signals(wake: asyncio.Event) -> asyncio.Event:
    """SIGINT or SIGTERM asks for a graceful stop: finish what is in hand, hand back the rest."""
    shutdown = asyncio.Event()
    loop = asyncio.get_running_loop()

    def request() -> None:
        if shutdown.is_set():  # the second one: stop now; the next start hands the rest back
            raise KeyboardInterrupt
        log.warning("stopping: finishing the messages in hand; press Ctrl-C again to stop at "
                    "once (they are handed back on the next start)")
        shutdown.set()
        wake.set()

    for number in STOP_SIGNALS:
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(number, request)
    return shutdown


def _remove_signal_handlers() -> None:
    loop = asyncio.get_running_loop()
    for number in STOP_SIGNALS:
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.remove_signal_handler(number)
