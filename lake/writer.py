"""Writing events to the lake as Parquet: durable on return, few files per busy run.

``ParquetEventWriter`` writes a batch of events, one zstd-compressed file per event type and UTC
date, and returns only once the files are complete. Locally a file is written under a temporary
name and renamed, so a reader never sees half a file; on S3 a PUT is already atomic.

``GroupCommitter`` is the time window: concurrent handlers hand it their message's events and
wait; one flush writes everything that arrived within ``max_delay_s``. A handler acknowledges its
message only after its events are durable, and a busy run still writes few files.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from uuid6 import uuid7

from lake.events import Event
from lake.layout import event_partition
from lake.schema import to_table


def open_lake(uri: str) -> tuple[pafs.FileSystem, str]:
    """A filesystem and root path for a lake URI: a local folder or ``s3://bucket/prefix``."""
    if "://" not in uri:
        os.makedirs(uri, exist_ok=True)
        return pafs.LocalFileSystem(), os.path.abspath(uri)
    if uri.startswith("s3://"):
        from lake.s3 import open_s3  # honours DOCLAKE_S3_ENDPOINT / AWS_ENDPOINT_URL

        return open_s3(uri)
    fs, path = pafs.FileSystem.from_uri(uri)
    return fs, path


@dataclass
class WriteStats:
    """Counters a benchmark or status screen can read."""

    events: int = 0
    files: int = 0
    flushes: int = 0


class ParquetEventWriter:
    """Writes batches of events as Parquet files under ``root``, partitioned by type and date."""

    def __init__(self, filesystem: pafs.FileSystem, root: str, *, compression: str = "zstd"):
        self.filesystem = filesystem
        self.root = root.rstrip("/")
        self.compression = compression
        self.stats = WriteStats()
        self._local = isinstance(filesystem, pafs.LocalFileSystem)

    @classmethod
    def for_uri(cls, uri: str) -> ParquetEventWriter:
        fs, root = open_lake(uri)
        return cls(fs, root)

    def write(self, events: Sequence[Event]) -> list[str]:
        """Write the events; return the paths of the files written. Durable on return."""
        groups: dict[tuple[str, str], list[Event]] = defaultdict(list)
        for event in events:
            groups[(event.event_type, event_partition(event.event_type, event.occurred_at))].append(
                event
            )
        paths = []
        for (_, partition), batch in sorted(groups.items()):
            paths.append(self._write_file(partition, batch))
        self.stats.events += len(events)
        self.stats.files += len(paths)
        self.stats.flushes += 1 if paths else 0
        return paths

    def _write_file(self, partition: str, batch: list[Event]) -> str:
        folder = f"{self.root}/{partition}"
        path = f"{folder}/part-{uuid7()}.parquet"
        table = to_table(batch)
        if not self._local:
            # Encode in memory, then one PUT: a failure half-way never leaves a partial object
            # under the final name (a multipart stream abandoned on error may still complete).
            buffer = pa.BufferOutputStream()
            pq.write_table(table, buffer, compression=self.compression)
            with self.filesystem.open_output_stream(path) as stream:
                stream.write(buffer.getvalue())
            return path
        os.makedirs(folder, exist_ok=True)
        temporary = f"{folder}/.tmp-{uuid.uuid4().hex}"
        pq.write_table(table, temporary, compression=self.compression)
        with open(temporary, "rb+") as handle:
            os.fsync(handle.fileno())
        os.replace(temporary, path)
        return path


@dataclass
class _Pending:
    events: list[Event] = field(default_factory=list)
    done: asyncio.Future[None] | None = None


class GroupCommitter:
    """Collects events from concurrent handlers and writes them in one flush per time window.

    ``commit`` returns when the caller's events are durable, or raises the write error, so a
    handler that acknowledges its message after ``commit`` never loses an event.
    """

    def __init__(self, writer: ParquetEventWriter, *, max_delay_s: float = 0.25,
                 max_events: int = 20_000):
        self.writer = writer
        self.max_delay_s = max_delay_s
        self.max_events = max_events
        self._pending: _Pending | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._lock = asyncio.Lock()

    async def commit(self, events: Sequence[Event]) -> None:
        if not events:
            return
        loop = asyncio.get_running_loop()
        if self._pending is None:
            self._pending = _Pending(done=loop.create_future())
            self._timer = loop.call_later(self.max_delay_s, self._schedule_flush)
        pending = self._pending
        pending.events.extend(events)
        if len(pending.events) >= self.max_events:
            self._schedule_flush()
        assert pending.done is not None
        await asyncio.shield(pending.done)

    def _schedule_flush(self) -> None:
        pending, self._pending = self._pending, None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if pending is not None:
            asyncio.ensure_future(self._flush(pending))

    async def _flush(self, pending: _Pending) -> None:
        assert pending.done is not None
        try:
            async with self._lock:
                await asyncio.to_thread(self.writer.write, pending.events)
        except Exception as error:  # handed to every waiting handler
            pending.done.set_exception(error)
        else:
            pending.done.set_result(None)

    async def close(self) -> None:
        """Flush whatever is waiting; call before the event loop stops."""
        pending = self._pending
        self._schedule_flush()
        if pending is not None and pending.done is not None:
            await asyncio.shield(pending.done)
