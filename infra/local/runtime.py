"""The embedded runtime: workers, poller and indexer on one machine, until the work is done.

An asyncio pool of ``concurrency`` workers takes messages from the SQLite queues (split first,
so every document is planned early; then units, interleaved fairly across jobs; then index), and
hands parsing to a pool of processes. The poller runs every ``poll_interval_s`` and also as soon
as a unit finishes. On start the runtime recovers from a crash: messages held by dead processes
become visible again, planned-but-unsent splits and succeeded-but-unindexed jobs are re-sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import signal
from collections.abc import Callable
from dataclasses import dataclass

from extract.context import HandlerContext
from extract.handling import Outcome, handle_dead_letter, handle_message
from extract.messages import (
    INDEX_QUEUE,
    QUEUES,
    READ_QUEUE,
    SPLIT_QUEUE,
    IndexMessage,
    dead_letter_queue,
)
from extract.poller import poll_once
from extract.ports import ReceivedMessage
from infra.local.cpu import ProcessPoolRunner
from infra.local.jobstore import SqliteJobStore
from infra.local.objectstore import FolderObjectStore
from infra.local.queue import SqliteQueue
from infra.local.search import Fts5SearchIndex
from infra.settings import Settings
from ingest.planner import Planner
from lake.writer import GroupCommitter, ParquetEventWriter

log = logging.getLogger(__name__)

RECEIVE_ORDER = (SPLIT_QUEUE, READ_QUEUE, INDEX_QUEUE)
IDLE_SLEEP_S = 0.05


@dataclass
class RuntimeStats:
    messages: int = 0
    retries: int = 0
    dead_letters: int = 0
    interrupted: bool = False


class LocalRuntime:
    """Every port on the local machine, and the loop that drives them."""

    def __init__(self, settings: Settings):
        self.settings = settings
        home = settings.home
        home.mkdir(parents=True, exist_ok=True)
        self.objects = FolderObjectStore(home / "objects")
        self.queue = SqliteQueue(home / "queue.db", max_receives=settings.max_receives)
        self.store = SqliteJobStore(home / "jobs.db")
        self.index = Fts5SearchIndex(home / "search.db")
        self.writer = ParquetEventWriter.for_uri(settings.lake)
        self.stats = RuntimeStats()
        self.cpu = ProcessPoolRunner(settings.cpu_workers)

    def planner(self) -> Planner:
        return Planner(self.store, self.objects, self.queue, self.writer.write)

    def recover(self) -> dict[str, int]:
        """Undo what a crash left behind; safe to run at any time (duplicates are no-ops)."""
        released = self.queue.release_orphans()
        resent_splits = self.planner().resend_unsent()
        unindexed = self.store.jobs_to_index()
        for job in unindexed:
            self.queue.send(INDEX_QUEUE, IndexMessage(document_id=job.document_id,
                                                      job_id=job.job_id).model_dump_json())
        return {"released": released, "resent_splits": resent_splits,
                "resent_index": len(unindexed)}

    def idle(self) -> bool:
        """No active job, nothing left to index, nothing in any queue."""
        if self.store.active_jobs() or self.store.jobs_to_index():
            return False
        for queue in QUEUES:
            depth = self.queue.depth(queue)
            if depth.visible or depth.in_flight or depth.dead_letter:
                return False
        return True

    async def process(self, done: Callable[[], bool]) -> RuntimeStats:
        """Run workers and the poller until ``done()`` is true (checked after each poll)."""
        settings = self.settings
        cpu = self.cpu
        committer = GroupCommitter(self.writer, max_delay_s=settings.event_flush_s)
        wake = asyncio.Event()
        ctx = HandlerContext(store=self.store, objects=self.objects, queue=self.queue,
                             sink=committer, cpu=cpu, config=settings.extract_config(),
                             index=self.index, notify=wake.set)
        stop = asyncio.Event()
        shutdown = _on_signals(wake)
        inbox: asyncio.Queue[ReceivedMessage] = asyncio.Queue()
        tasks = [asyncio.create_task(self._worker(ctx, inbox)) for _ in range(settings.concurrency)]
        tasks.append(asyncio.create_task(self._receiver(inbox, stop)))
        try:
            while True:
                try:
                    await poll_once(ctx)
                except Exception:  # the next pass decides again, with the same event ids
                    log.exception("poll failed; retrying at the next interval")
                if done() or shutdown.is_set():
                    break
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(wake.wait(), timeout=settings.poll_interval_s)
                wake.clear()
        finally:
            stop.set()
            _remove_signal_handlers()
            if shutdown.is_set():
                self.stats.interrupted = True
                self._release_waiting(inbox)
            await inbox.join()  # messages being handled are finished, not abandoned
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await committer.close()
            cpu.close()
        return self.stats

    def _release_waiting(self, inbox: asyncio.Queue[ReceivedMessage]) -> None:
        """On shutdown, hand back the messages no worker has started, for the next process."""
        while not inbox.empty():
            self.queue.change_visibility(inbox.get_nowait(), 0)
            inbox.task_done()

    async def _receiver(self, inbox: asyncio.Queue[ReceivedMessage], stop: asyncio.Event) -> None:
        """One task receives for all workers, in batches, keeping at most one message per worker
        waiting, so that the queues see few transactions and no message waits long unhidden."""
        timeout = self.settings.visibility_timeout_s
        wanted_queues = (*RECEIVE_ORDER, *(dead_letter_queue(q) for q in RECEIVE_ORDER))
        while not stop.is_set():
            room = self.settings.concurrency - inbox.qsize()
            got = 0
            for queue in wanted_queues:
                if room - got <= 0:
                    break
                for message in self.queue.receive(queue, max_messages=min(10, room - got),
                                                  visibility_timeout_s=timeout):
                    inbox.put_nowait(message)
                    got += 1
            await asyncio.sleep(IDLE_SLEEP_S if got == 0 or room - got <= 0 else 0)

    async def _worker(self, ctx: HandlerContext, inbox: asyncio.Queue[ReceivedMessage]) -> None:
        while True:
            received = await inbox.get()
            try:
                await self._handle(ctx, received)
            except Exception:  # e.g. the lake's disk is full: never lose the worker itself
                log.exception("handling %s failed; it will be redelivered", received.message_id)
            finally:
                inbox.task_done()

    async def _handle(self, ctx: HandlerContext, received: ReceivedMessage) -> None:
        heartbeat = asyncio.create_task(self._heartbeat(received))
        try:
            if received.queue.endswith("-dlq"):
                outcome = await handle_dead_letter(ctx, received)
                self.stats.dead_letters += 1
            else:
                outcome = await handle_message(ctx, received)
        finally:
            heartbeat.cancel()
        self.stats.messages += 1
        if outcome is Outcome.ACK:
            self.queue.delete(received)
        else:
            self.stats.retries += 1
            # Back off before the retry rather than waiting out the whole timeout.
            backoff = min(2.0 ** received.receive_count, self.settings.visibility_timeout_s)
            backoff *= random.uniform(0.5, 1.0)  # jitter: retries of a burst spread out
            self.queue.change_visibility(received, backoff)

    async def _heartbeat(self, received: ReceivedMessage) -> None:
        """Keep a long-running message hidden: extend its visibility at half the timeout."""
        timeout = self.settings.visibility_timeout_s
        while True:
            await asyncio.sleep(timeout / 2)
            self.queue.change_visibility(received, timeout)


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _on_signals(wake: asyncio.Event) -> asyncio.Event:
    """SIGINT or SIGTERM asks for a graceful stop: finish what is in hand, hand back the rest."""
    shutdown = asyncio.Event()
    loop = asyncio.get_running_loop()

    def request() -> None:
        log.warning("stopping: finishing the messages in hand")
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
