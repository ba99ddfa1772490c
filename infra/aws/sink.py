"""The event sink of one Lambda invocation: the whole batch's events in one flush.

Five hundred concurrent readers each flushing their own message's events would write thousands
of tiny files a minute. Here the records of one SQS batch run concurrently and a flush starts
only when every record still running is waiting on ``commit`` (or after ``max_wait_s``), so a
batch of ten read units writes one Parquet file per event type and day, not ten. Each record
still acknowledges only after its events are durable: the ordering rule holds.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence

from lake.events import Event
from lake.writer import ParquetEventWriter

__all__ = ["InvocationCommitter"]


class InvocationCommitter:
    def __init__(self, writer: ParquetEventWriter, *, max_wait_s: float = 20.0):
        self.writer = writer
        self.max_wait_s = max_wait_s
        self.flushes = 0
        self._running = 0
        self._events: list[Event] = []
        self._waiters: list[asyncio.Future[None]] = []
        self._flushing: asyncio.Task[None] | None = None
        self._timer: asyncio.TimerHandle | None = None

    @contextlib.asynccontextmanager
    async def record(self) -> AsyncIterator[None]:
        """Wrap one record's handling: the committer waits for it before flushing."""
        self._running += 1
        try:
            yield
        finally:
            self._running -= 1
            self._maybe_flush()

    async def commit(self, events: Sequence[Event]) -> None:
        if not events:
            return
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._events.extend(events)
        self._waiters.append(done)
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self.max_wait_s, self._flush_now)
        self._maybe_flush()
        await asyncio.shield(done)

    def _maybe_flush(self) -> None:
        if self._waiters and len(self._waiters) >= self._running:
            self._flush_now()

    def _flush_now(self) -> None:
        if self._flushing is not None or not self._waiters:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        events, self._events = self._events, []
        waiters, self._waiters = self._waiters, []
        self._flushing = asyncio.ensure_future(self._flush(events, waiters))

    async def _flush(self, events: list[Event], waiters: list[asyncio.Future[None]]) -> None:
        try:
            await asyncio.to_thread(self.writer.write, events)
            self.flushes += 1
        except Exception as error:  # every waiting record gets it and is retried
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_exception(error)
        else:
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(None)
        finally:
            self._flushing = None
            self._maybe_flush()

    async def close(self) -> None:
        while self._flushing is not None or self._waiters:
            if self._flushing is None:
                self._flush_now()
            if self._flushing is not None:
                with contextlib.suppress(Exception):
                    await asyncio.shield(self._flushing)
