"""The order in which a CPU lane's waiting calls reach its processes: least work left first.

A process pool is first come, first served: a one-page Office file's text layer, called while
sixty NDA splits wait for the documents lane's two processes, waited for all of them. Each lane
therefore admits only a few calls into its pool at once (``PriorityGate``) and keeps the rest
waiting here, ordered by the schedule key of the message they work for
(``extract.scheduling.schedule_key``: the document with the least pages left first, ties by
arrival, age raising priority). The key travels with the handler's task as a context variable
(``CALL_KEY``), set by the runtime for each message it handles: no handler passes it.

A call without a key (ingest's, the lake's compaction, a test's) counts as one page of work that
arrived when the call was made.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from contextvars import ContextVar

from extract.scheduling import schedule_key

__all__ = ["CALL_KEY", "PriorityGate", "call_key"]

CALL_KEY: ContextVar[float | None] = ContextVar("doclake_call_key", default=None)
"""The schedule key of the message the current task handles (None: not a message's work)."""


def call_key() -> float:
    """The key a call made now waits with."""
    key = CALL_KEY.get()
    return schedule_key(1, time.time()) if key is None else key


_PRUNE_AT = 256  # another gate's waiters kept before the ones already admitted are dropped


class PriorityGate:
    """At most ``slots`` calls admitted at once; the others admitted by smallest key, then in
    the order they asked. Bound to no event loop: each waiter's future is its own loop's.

    A gate also takes another gate's call when it has a process idle (fewer than
    ``idle_below`` calls admitted) and none of its own calls waits: ``acquire(key, spare=...)``
    waits in both, the first to admit the call wins, and says so (``acquire``'s result: the
    gate to release). The short lane's one process ran 83 NDAs' rules one after the other
    while the documents lane's two processes had nothing to do."""

    def __init__(self, slots: int, idle_below: int | None = None):
        self.slots = max(1, slots)
        self.idle_below = self.slots if idle_below is None else max(1, idle_below)
        self._admitted_keys: list[float] = []  # one a call admitted (``outranks_every_call``)
        self._waiting: list[tuple[float, int, asyncio.Future[PriorityGate]]] = []
        # Another gate's waiters this one may take while it has a process idle (``spare``).
        self._borrowers: list[tuple[float, int, asyncio.Future[PriorityGate]]] = []
        self._order = itertools.count()

    @property
    def admitted(self) -> int:
        """Calls admitted and not yet released."""
        return len(self._admitted_keys)

    @property
    def waiting(self) -> int:
        return sum(not future.done() for _, _, future in self._waiting)

    def outranks_every_call(self, key: float) -> bool:
        """Whether a call of ``key`` would wait although it goes before every call here: the
        gate is full, each admitted call's key is larger, and no call waiting has a key as
        small (``infra.local.cpu_lanes``'s express lane takes such a call at once)."""
        return (self.admitted >= self.slots
                and all(key < running for running in self._admitted_keys)
                and not any(waiting <= key for waiting, _, future in self._waiting
                            if not future.done()))

    async def acquire(self, key: float, spare: PriorityGate | None = None) -> PriorityGate:
        """Wait for a slot here, or in ``spare`` while it has a process idle; the gate that
        admitted the call, to ``release`` it."""
        # An idle process here, then an idle one of ``spare``'s, then a place in this pool's
        # queue. (Below ``slots`` no call of a gate's own waits: ``release`` admits them.)
        if self.admitted < self.idle_below:
            return self._admit(key)
        if spare is not None and spare.admitted < spare.idle_below:
            return spare._admit(key)
        if self.admitted < self.slots:
            return self._admit(key)
        future: asyncio.Future[PriorityGate] = asyncio.get_running_loop().create_future()
        entry = (key, next(self._order), future)
        heapq.heappush(self._waiting, entry)
        if spare is not None:
            spare._lend(entry)
        try:
            return await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                future.result().release(key)  # admitted just as it was cancelled: hand it on
            raise

    def _admit(self, key: float) -> PriorityGate:
        self._admitted_keys.append(key)
        return self

    def _lend(self, entry: tuple[float, int, asyncio.Future[PriorityGate]]) -> None:
        if len(self._borrowers) >= _PRUNE_AT:  # most were admitted by their own gate since
            self._borrowers = [e for e in self._borrowers if not e[2].done()]
            heapq.heapify(self._borrowers)
        heapq.heappush(self._borrowers, entry)

    def release(self, key: float) -> None:
        """The call admitted with ``key`` is done: admit the next, this gate's own waiters
        first, then, with a process idle, another gate's (``spare``)."""
        self._admitted_keys.remove(key)
        self._admit_from(self._waiting, self.slots)
        self._admit_from(self._borrowers, self.idle_below)  # none while its own calls wait

    def _admit_from(self, waiters: list, below: int) -> None:
        while waiters and self.admitted < below:
            waiting_key, _, future = heapq.heappop(waiters)
            if future.done():  # cancelled while waiting, or admitted by the other gate
                continue
            if future.get_loop().is_closed():
                continue
            self._admitted_keys.append(waiting_key)
            future.set_result(self)
