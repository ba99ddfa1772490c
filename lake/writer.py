"""Writing events to the lake as Parquet: durable on return, few files per busy run.

``ParquetEventWriter`` writes a batch of events, one snappy-compressed file per event type and UTC
date, and returns only once the files are complete. Locally a file is written under a temporary
name and renamed, so a reader never sees half a file; on S3 a PUT is already atomic.

``GroupCommitter`` is group commit: concurrent handlers hand it their message's events and wait;
a committer with a token in its bucket flushes at once, a busy one writes what arrived during the
previous flush in the next (on average at most one flush start per ``max_delay_s``). A handler
acknowledges its message only after its events are durable, and a busy run still writes few
files. A commit made under ``RELAXED_COMMIT`` (its handler holds nothing another message waits
for) lets a busy committer gather for longer (``relaxed_delay_s``): a flush costs per file, not
per event.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from lake.events import Event
from lake.files import fsync_directory, open_lake
from lake.layout import (
    DOCUMENT_EVENT_TYPES,
    data_file_name,
    event_partition,
    partition_date,
    uuid7_date,
)
from lake.schema import arrow_fingerprint, arrow_schema, to_table

__all__ = ["logger", "WriteStats", "AUTO_COMPACT_FILES", "WRITE_THREADS", "ParquetEventWriter",
           "RELAXED_COMMIT", "GroupCommitter"]

logger = logging.getLogger(__name__)


@dataclass
class WriteStats:
    """Counters a benchmark or status screen can read. ``seconds`` splits the writer's time, summed
    over every flush: wall time of the calling thread by phase (``group`` events by partition,
    ``arrow`` tables built, ``wait`` for the pool to finish encoding and storing, ``folder_sync``),
    and the pool's thread time (``encode_thread``, ``store_thread``, ``fsync_thread``)."""

    events: int = 0
    files: int = 0
    flushes: int = 0
    compactions: int = 0
    seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))


AUTO_COMPACT_FILES = 200
"""A partition that received this many files from one writer is compacted in the background:
at ~0.7 ms per file per query (docs/lake.md), no partition costs a query much more than a
tenth of a second between compactions, however long the run."""

# Files of one flush are encoded and made durable in parallel: pyarrow's encoder and fsync both
# release the GIL, and parallel fsyncs share the filesystem journal's commits.
WRITE_THREADS = 4


class ParquetEventWriter:
    """Writes batches of events as Parquet files under ``root``, partitioned by type and ``dt``.

    Locally, durability is the classic sequence: write a temporary file, fsync it, rename it to
    its final name, then fsync the folder (the rename is only durable once the directory entry
    is), and when a ``dt=`` folder (or its ``event_type=`` parent) was just created, fsync its
    parent too: a new folder is only durable once its parent's entry is.
    """

    def __init__(self, filesystem: pafs.FileSystem, root: str, *, compression: str = "snappy",
                 compression_level: int | None = None,
                 compact_after_files: int | None = AUTO_COMPACT_FILES):
        """``compact_in`` (settable later): where a local lake's background compaction runs,
        ``compact_in(fn, *args)`` returning ``fn(*args)`` (the local runtime gives a worker
        process: reading, merging and rewriting files is per-file work, kept out of the process
        that coordinates a run); None: on a thread of this process."""
        self.compact_in: Callable[..., Any] | None = None
        self.filesystem = filesystem
        self.root = root.rstrip("/")
        self.compression = compression
        # Snappy: raw files are short-lived (compaction rewrites them with zstd), and a flush's
        # small file encodes in half the time of zstd at level 1 (0.31 against 0.59 ms for 40
        # page rows) for an eighth more bytes; every reader of Parquet reads it.
        self.compression_level = compression_level
        self.stats = WriteStats()
        self._local = isinstance(filesystem, pafs.LocalFileSystem)
        self._known_folders: set[str] = set()
        self._executor: ThreadPoolExecutor | None = None
        # Auto-compaction: files written per partition folder since it was last compacted.
        self.compact_after_files = compact_after_files
        self._written: dict[str, int] = defaultdict(int)
        self._compactor: ThreadPoolExecutor | None = None
        self._compaction: Future[None] | None = None
        self._days: dict[tuple[bool, str | None, str | None], str] = {}

    @classmethod
    def for_uri(cls, uri: str) -> ParquetEventWriter:
        fs, root = open_lake(uri)
        return cls(fs, root)

    def write(self, events: Sequence[Event]) -> list[str]:
        """Write the events; return the paths of the files written. Durable on return."""
        clock = time.perf_counter
        started = clock()
        groups: dict[tuple[str, str], list[Event]] = defaultdict(list)
        days = self._days
        for event in events:
            fields = event.__dict__  # ~5x faster than pydantic's attribute access
            event_type = event.event_type
            key = (event_type in DOCUMENT_EVENT_TYPES, fields["job_id"], fields["document_id"])
            day = days.get(key)
            if day is None:
                day = partition_date(event_type, key[1], key[2], fields["occurred_at"])
                if uuid7_date(key[1]) or uuid7_date(key[2]):  # else the day is occurred_at's
                    if len(days) > 100_000:
                        days.clear()
                    days[key] = day
            groups[(event_type, day)].append(event)
        grouped = clock()
        items = sorted(groups.items())
        folders = [f"{self.root}/{event_partition(t, day)}" for (t, day), _ in items]
        paths = [f"{folder}/{data_file_name('part-', _fingerprint(batch))}"
                 for folder, (_, batch) in zip(folders, items, strict=True)]
        created = self._prepare_folders(folders) if self._local else set()
        # Build each Arrow table here (Python, holds the GIL) while the pool encodes and stores
        # the ones already built (pyarrow's encoder and fsync release the GIL): they overlap.
        arrow = 0.0
        futures = []
        for (folder, path), (_, batch) in zip(zip(folders, paths, strict=True), items,
                                              strict=True):
            mark = clock()
            table = to_table(batch)
            arrow += clock() - mark
            futures.append(self._pool().submit(self._encode_and_store, folder, path, table))
        built = grouped + arrow
        for future in futures:
            future.result()  # the first error, if any, is the write's
        waited = clock()
        if self._local:
            # Children before parents: a folder's entry in its parent is made durable after the
            # folder's own entries.
            for folder in sorted({*folders, *created}, key=lambda f: -f.count("/")):
                fsync_directory(folder)
        done = clock()
        seconds = self.stats.seconds
        seconds["group"] += grouped - started
        seconds["arrow"] += built - grouped
        seconds["wait"] += waited - built
        seconds["folder_sync"] += done - waited
        self.stats.events += len(events)
        self.stats.files += len(paths)
        self.stats.flushes += 1 if paths else 0
        if self.compact_after_files:
            self._maybe_compact(folders)
        return paths

    def _maybe_compact(self, folders: list[str]) -> None:
        """Start compacting, in the background, the partitions that passed the threshold of
        small files, unless a compaction is still running (then they wait for the next flush).
        Safe beside this writer: compaction never touches files written after it listed."""
        for folder in folders:
            self._written[folder] += 1
        due = sorted(f for f, n in self._written.items() if n >= self.compact_after_files)
        if not due or (self._compaction is not None and not self._compaction.done()):
            return
        for folder in due:
            del self._written[folder]
        if self._compactor is None:  # not a daemon: the interpreter waits for it at exit
            self._compactor = ThreadPoolExecutor(1, thread_name_prefix="lake-compact")
        self._compaction = self._compactor.submit(self._compact, due)

    def _compact(self, folders: list[str]) -> None:
        from lake.compaction import compact_folders  # loaded only when a compaction runs (numpy)

        if self.compact_in is not None and self._local:
            try:
                self.stats.compactions += self.compact_in(compact_folders, self.root, folders)
                return
            except Exception as error:  # noqa: BLE001 - its process died: compact here instead
                logger.warning("background compaction in a worker failed (%s); compacting here",
                               error)
        self.stats.compactions += compact_folders((self.filesystem, self.root), folders)

    def wait_for_compaction(self) -> None:
        """Block until a background compaction, if any, has finished."""
        if self._compaction is not None:
            self._compaction.result()

    def _pool(self) -> ThreadPoolExecutor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(WRITE_THREADS, thread_name_prefix="lake-writer")
        return self._executor

    def close(self) -> None:
        """Stop the writer's threads, after a running compaction ends (they also stop on their
        own at exit)."""
        if self._executor is not None:
            self._executor.shutdown()
            self._executor = None
        if self._compactor is not None:
            self._compactor.shutdown()
            self._compactor = None

    def _encode_and_store(self, folder: str, path: str, table: pa.Table) -> None:
        """One file: encoded in memory, then (locally) a temporary file, fsync and rename, or (on
        S3) one PUT: a failure half-way never leaves a partial object under the final name (an
        abandoned multipart stream may complete). Times go to ``stats.seconds`` as thread time
        (``encode_thread``, ``store_thread``, ``fsync_thread``), summed over the pool."""
        clock = time.perf_counter
        started = clock()
        buffer = pa.BufferOutputStream()
        pq.write_table(table, buffer, compression=self.compression,
                       compression_level=self.compression_level,
                       use_dictionary=_dictionary_columns(table.schema))
        data = buffer.getvalue()
        encoded = clock()
        fsync = 0.0
        if self._local:
            temporary = f"{folder}/.tmp-{uuid.uuid4().hex}"
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
                mark = clock()
                os.fsync(fd)
                fsync = clock() - mark
            finally:
                os.close(fd)
            os.replace(temporary, path)
        else:
            with self.filesystem.open_output_stream(path) as stream:
                stream.write(data)
        seconds = self.stats.seconds  # float += under the GIL: a lost update only skews a figure
        seconds["encode_thread"] += encoded - started
        seconds["store_thread"] += clock() - encoded - fsync
        seconds["fsync_thread"] += fsync

    def _prepare_folders(self, folders: list[str]) -> set[str]:
        """Create the partition folders not seen before; return the parents whose entries
        changed (each is fsynced after the files, so the new folder is durable too)."""
        created: set[str] = set()
        for folder in dict.fromkeys(folders):
            if folder not in self._known_folders:
                created |= _make_folders(folder, self.root)
                self._known_folders.add(folder)
        return created


def _fingerprint(batch: list[Event]) -> str:
    return arrow_fingerprint(arrow_schema(type(batch[0])))


@functools.cache
def _dictionary_columns(schema: pa.Schema) -> list[str]:
    """Dictionary-encode the low-cardinality strings (types, readers, statuses), not the ids:
    a dictionary of unique UUIDs only costs time and bytes (measured: 18% faster, 11% smaller)."""
    return [f.name for f in schema
            if pa.types.is_string(f.type) and not f.name.endswith("_id") and f.name != "message"]


def _make_folders(folder: str, root: str) -> set[str]:
    """Create ``folder`` and its missing parents below ``root``; return the parents whose
    entries changed (each needs an fsync for the new child to be durable)."""
    missing = []
    path = folder
    while path != root and not os.path.isdir(path):
        missing.append(path)
        path = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    return {os.path.dirname(p) for p in missing}


RELAXED_COMMIT: ContextVar[bool] = ContextVar("doclake_relaxed_commit", default=False)
"""True where the committing handler holds nothing that another message waits for (a runtime
sets it once the handler has given back its concurrency slot): its events may wait for a fuller
batch (``GroupCommitter.relaxed_delay_s``). Its acknowledgement waits as long; durability is the
same."""


@dataclass
class _Pending:
    events: list[Event] = field(default_factory=list)
    done: asyncio.Future[None] | None = None
    relaxed: bool = True  # every commit in it was relaxed: it may wait for a fuller batch


class GroupCommitter:
    """Collects events from concurrent handlers and writes them together: group commit.

    While a flush runs, the events that arrive form the next batch, written as soon as it ends.
    Flushes are paced by a token bucket: ``1 / max_delay_s`` flushes a second on average, up to
    ``burst`` back to back. A run whose handlers commit less often than that never waits for a
    window (a lone handler, or a burst's readers finishing a few a second, flush at once: a
    flush takes about a millisecond, the old fixed window cost each commit 25 ms on average);
    a busy run writes one flush (a few files) per interval, not one per message. ``commit``
    returns when the caller's events are durable, or raises the write error, so a handler that
    acknowledges its message after ``commit`` never loses an event.

    A batch of relaxed commits only (``RELAXED_COMMIT``) starts no sooner than
    ``relaxed_delay_s`` after the previous flush started: an idle committer still flushes it at
    once, a busy one writes fewer, fuller flushes (a text-layer run makes ~650 events a second;
    2,447 flushes of 8,036 small files took over a quarter of its main process's CPU). A commit
    that is not relaxed joining the batch brings its flush forward.
    """

    def __init__(self, writer: ParquetEventWriter, *, max_delay_s: float = 0.05,
                 burst: int = 10, max_events: int = 20_000, relaxed_delay_s: float = 0.0):
        self.writer = writer
        self.max_delay_s = max_delay_s
        self.relaxed_delay_s = relaxed_delay_s
        self._last_start: float | None = None
        self.burst = max(1, burst)
        self.max_events = max_events
        self._pending: _Pending | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._flushing: asyncio.Future[None] | None = None
        self._tokens = float(self.burst)
        self._refilled_at: float | None = None
        # Its own thread: a flush never queues behind other blocking work (page writes) in the
        # event loop's default executor, which would hold every waiting handler.
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="group-commit")

    async def commit(self, events: Sequence[Event]) -> None:
        if not events:
            return
        loop = asyncio.get_running_loop()
        relaxed = RELAXED_COMMIT.get()
        if self._pending is None:
            self._pending = _Pending(done=loop.create_future(), relaxed=relaxed)
            self._arm()
        pending = self._pending
        pending.events.extend(events)
        if pending.relaxed and not relaxed:
            pending.relaxed = False
            if self._timer is not None:  # waiting for a fuller batch: not any more
                self._timer.cancel()
                self._timer = None
                self._arm()
        if len(pending.events) >= self.max_events and self._flushing is None:
            self._start()
        assert pending.done is not None
        await asyncio.shield(pending.done)

    def set_relaxed_delay(self, seconds: float) -> None:
        """Change ``relaxed_delay_s`` from now on. A relaxed batch already waiting is planned
        again when the wait gets shorter: a runtime shortens it the moment a worker falls idle,
        and the batch may hold the messages that worker would take."""
        shorter = seconds < self.relaxed_delay_s
        self.relaxed_delay_s = seconds
        pending = self._pending
        if shorter and self._timer is not None and pending is not None and pending.relaxed:
            self._timer.cancel()
            self._timer = None
            self._arm()

    def _arm(self) -> None:
        """Plan the next flush: at once while the bucket has a token, else when it refills."""
        if self._flushing is not None or self._timer is not None or self._pending is None:
            return  # the running flush arms the next one when it ends
        loop = asyncio.get_running_loop()
        now = loop.time()
        delay = self._wait_for_token(now)
        if self._pending.relaxed and self._last_start is not None:
            delay = max(delay, self._last_start + self.relaxed_delay_s - now)
        if delay <= 0:
            self._timer = loop.call_soon(self._start)  # type: ignore[assignment]
        else:
            self._timer = loop.call_later(delay, self._start)

    def _wait_for_token(self, now: float) -> float:
        """Refill the bucket up to ``now``; the seconds until it holds a whole token."""
        if self.max_delay_s <= 0:
            return 0.0
        if self._refilled_at is not None:
            earned = (now - self._refilled_at) / self.max_delay_s
            self._tokens = min(float(self.burst), self._tokens + earned)
        self._refilled_at = now
        return max(0.0, (1.0 - self._tokens) * self.max_delay_s)

    def _start(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        pending, self._pending = self._pending, None
        if pending is None:
            return
        loop = asyncio.get_running_loop()
        self._last_start = loop.time()
        self._wait_for_token(self._last_start)
        self._tokens = max(0.0, self._tokens - 1.0)  # a flush forced by max_events may overdraw
        self._flushing = asyncio.ensure_future(self._flush(pending))

    async def _flush(self, pending: _Pending) -> None:
        assert pending.done is not None
        try:
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(self._executor, self.writer.write, pending.events)
        except Exception as error:  # handed to every waiting handler
            pending.done.set_exception(error)
        else:
            pending.done.set_result(None)
        finally:
            self._flushing = None
            self._arm()

    async def close(self) -> None:
        """Flush whatever is waiting; call before the event loop stops."""
        while self._flushing is not None or self._pending is not None:
            if self._flushing is not None:
                await asyncio.shield(self._flushing)
            elif self._pending is not None:
                pending = self._pending
                self._start()
                assert pending.done is not None
                with contextlib.suppress(Exception):  # its handlers have the error already
                    await asyncio.shield(pending.done)
        self._executor.shutdown(wait=False)
