"""What every handler receives: the ports, the settings, and the delivery it is working on.

``Delivery`` buffers the events of one message and stamps their envelope; the handler commits
them at the point the ordering rule asks (storage, then events, then the database), and the
failure path commits whatever is left, so no event of a failed attempt is dropped.

The settings (``ExtractConfig``) live in ``extract.config``; the readers take this context through
the ``ReaderContext`` protocol (``extract.readers.base``), so they need not import this module.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Awaitable, Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from extract.config import ExtractConfig
from extract.ports import CpuRunner, EventSink, JobStore, ObjectStore, Queue, SearchIndex
from lake.events import Event

__all__ = ["E", "default_worker_name", "worker_process", "SLOT_RELEASE", "release_slot",
           "HAND_BACK", "hand_back", "HandlerContext",
           "ReadScope", "Delivery", "commit_together"]

if TYPE_CHECKING:
    from extract.readers import PageText, ReaderChain

E = TypeVar("E", bound=Event)


def default_worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def worker_process(name: str) -> tuple[str, int] | None:
    """The host and process id of a worker named by ``default_worker_name`` (a field claim's
    claimant is that name plus ``/attempt-N``); None for a name of another form (a Lambda's)."""
    worker = name.split("/", 1)[0]
    host, _, pid = worker.rpartition(":")
    return (host, int(pid)) if host and pid.isdigit() else None


SLOT_RELEASE: ContextVar[Callable[[], None] | None] = ContextVar("doclake_slot_release",
                                                                 default=None)
"""Set by a runtime around one delivery's handling: frees the delivery's concurrency slot."""


def release_slot() -> None:
    """This delivery's costly work is over: what is left only waits (its events' group commit,
    then the store's mark and the acknowledgement, in that order). A runtime that counts
    concurrency (the embedded one) starts the next message in its place meanwhile; the message
    itself stays in flight until the handler returns, so durability is unchanged. A no-op where
    nothing counts (a Lambda holds its concurrency until it returns)."""
    release = SLOT_RELEASE.get()
    if release is not None:
        release()


HAND_BACK: ContextVar[Callable[[Sequence[Any]], list[Any]] | None] = ContextVar(
    "doclake_hand_back", default=None)
"""Set by ``extract.handling.settle_together`` around a batch's handling: hands messages of
the batch back to the runtime at once, each to be handled alone by a worker of its own."""


def hand_back(messages: Sequence[Any]) -> list[Any]:
    """A batch's handler will not take ``messages``: hand them back now rather than when the
    batch ends, so that a one-page Office file in a batch of PDFs starts its conversion while
    the PDFs are read. Returns the messages not handed back (all of them where nothing takes
    them early), which the handler returns as it would have."""
    give = HAND_BACK.get()
    if give is None or not messages:
        return list(messages)
    return give(messages)


@dataclass
class HandlerContext:
    store: JobStore
    objects: ObjectStore
    queue: Queue
    sink: EventSink
    cpu: CpuRunner
    config: ExtractConfig = field(default_factory=ExtractConfig)
    index: SearchIndex | None = None
    worker: str = field(default_factory=default_worker_name)
    notify: Callable[[], None] = lambda: None
    """A handler changed the job store: the poller (and the publisher) look now."""
    results_stored: Callable[[], None] = lambda: None
    """A fields result was stored: only the publisher looks (the poller has nothing to decide
    until it is published; on AWS the store's stream invokes the publisher)."""
    readers: ReaderChain | None = None
    """A chain that overrides ``config.reader`` (tests set their own)."""
    scope: ReadScope | None = None
    worker_objects: ObjectStore | None = None
    """The object store as a CPU worker process can use it (picklable, writing to the same
    place), or None: then workers return what they read and this process stores it. Locally it
    is the folder store, so a page is written by the process that read it and the main process
    only coordinates (``extract.readers.text``)."""
    worker_index: SearchIndex | None = None
    """The search index as a CPU worker process can use it, or None (indexed on a thread here)."""
    reader_chains: dict[str, ReaderChain] = field(default_factory=dict)
    """Chains resolved so far, by the choices they were made for; shared by the copies of this
    context (``dataclasses.replace``), so a job's own reader is resolved once per process."""

    def reader_chain(self) -> ReaderChain:
        """The readers ``config.reader`` names, with this config's model choices."""
        if self.readers is not None:
            return self.readers
        from extract import run_choices
        from extract.readers import resolve

        key = run_choices.record(self.config)
        chain = self.reader_chains.get(key)
        if chain is None:
            chain = self.reader_chains[key] = resolve(self.config.reader)
        return chain


@dataclass(frozen=True)
class ReadScope:
    """The unit a reader is reading, set by the read handler on its own copy of the context: the
    envelope for the reader's ledger rows (model calls), and ``save_page``, which stores one page
    the moment it is read, so a paid-for page is not lost with its unit's slowest page."""

    delivery: Delivery
    unit_id: str
    save_page: Callable[[PageText], Awaitable[None]]
    answered: Callable[[], None] = lambda: None
    """Called by a reader that pays per call once every call of the unit is answered: what is
    left (the ledger rows' commit, storing the pages) only waits, so the read handler frees
    the unit's slot (``release_slot``) for the next unit's calls."""


@dataclass
class Delivery:
    """One delivery of one message: its attempt number and the events it has produced."""

    attempt: int
    document_id: str | None
    job_id: str | None
    worker: str
    sink: EventSink
    events: list[Event] = field(default_factory=list)

    def emit(self, event_cls: type[E], **fields: Any) -> E:
        envelope = {"document_id": self.document_id, "job_id": self.job_id,
                    "attempt": self.attempt, "worker": self.worker}
        event = event_cls(**{**envelope, **fields})
        self.events.append(event)
        return event

    async def commit(self) -> None:
        """Make the buffered events durable; call before the database records the outcome."""
        events, self.events = self.events, []
        await self.sink.commit(events)


async def commit_together(sink: EventSink, deliveries: Sequence[Delivery]) -> None:
    """``Delivery.commit`` for several deliveries in one commit of the sink (messages handled
    together): one flush to wait for, not one a message."""
    events = [event for delivery in deliveries for event in delivery.events]
    for delivery in deliveries:
        delivery.events = []
    await sink.commit(events)
