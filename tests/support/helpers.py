"""Building a handler context on local adapters, with inline CPU work and a memory sink."""

from __future__ import annotations

from pathlib import Path

from conftest import CountingRunner, MemorySink

from extract.context import ExtractConfig, HandlerContext
from extract.handling import handle_message
from extract.messages import READ_QUEUE, SPLIT_QUEUE, parse_message
from extract.ports import ReceivedMessage
from infra.local.jobstore import SqliteJobStore
from infra.local.objectstore import FolderObjectStore
from infra.local.queue import SqliteQueue
from infra.local.search import Fts5SearchIndex
from ingest.planner import Planner


class Harness:
    """The handlers over real local ports, one message at a time.

    ``text_pages_at_split`` is 0 unless a test sets it: these tests follow each unit through
    its own read message (the path of scans and of pages past the split's budget); the split's
    own reading of the first pages is tested in ``test_split_reads_text``."""

    def __init__(self, root: Path, **config):
        config.setdefault("text_pages_at_split", 0)
        self.store = SqliteJobStore(root / "jobs.db")
        self.objects = FolderObjectStore(root / "objects")
        self.queue = SqliteQueue(root / "queue.db", max_receives=3)
        self.sink = MemorySink()
        self.cpu = CountingRunner()
        self.index = Fts5SearchIndex(root / "search.db")
        self.ctx = HandlerContext(store=self.store, objects=self.objects, queue=self.queue,
                                  sink=self.sink, cpu=self.cpu, config=ExtractConfig(**config),
                                  index=self.index)
        self.planner = Planner(self.store, self.objects, self.queue, self.sink.events.extend)

    def receive(self, queue: str) -> list[ReceivedMessage]:
        return self.queue.receive(queue, max_messages=100, visibility_timeout_s=60)

    async def drain(self, *queues: str) -> None:
        """Handle and acknowledge every message on these queues, in order, once."""
        for queue in queues:
            for message in self.receive(queue):
                await handle_message(self.ctx, message)
                self.queue.delete(message)

    def read_messages(self):
        return [(m, parse_message(m.body)) for m in self.receive(READ_QUEUE)]

    def split_messages(self):
        return [(m, parse_message(m.body)) for m in self.receive(SPLIT_QUEUE)]


async def handle_together(ctx, received):
    """What the runtime does with messages received together: ``settle_together``, then each
    message it left handled on its own (there by a worker of its own; here in turn). Every
    outcome, by position."""
    from extract.handling import handle_message, settle_together

    settled, left = await settle_together(ctx, received)
    for position in left:
        settled[position] = await handle_message(ctx, received[position])
    return [settled[position] for position in range(len(received))]


def watch_batches(monkeypatch) -> list[int]:
    """The size of every batch the local runtime hands to ``settle_together``, in order."""
    import infra.local.runtime as runtime_module

    sizes: list[int] = []
    real = runtime_module.settle_together

    async def watched(ctx, batch, **options):
        sizes.append(len(batch))
        return await real(ctx, batch, **options)

    monkeypatch.setattr(runtime_module, "settle_together", watched)
    return sizes
