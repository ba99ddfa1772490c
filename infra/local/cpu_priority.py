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
from collections.abc import Callable
from contextvars import ContextVar
from typing import NamedTuple

from extract.scheduling import schedule_key

__all__ = ["CALL_KEY", "PriorityGate", "call_key"]

CALL_KEY: ContextVar[float | None] = ContextVar("doclake_call_key", default=None)
"""The schedule key of the message the current task handles (None: not a message's work)."""


def call_key() -> float:
    """The key a call made now waits with."""
    key = CALL_KEY.get()
    return schedule_key(1, time.time()) if key is None else key


class PriorityGate:
    """At most ``slots`` calls admitted at once; the others admitted by smallest key, then in
    the order they asked. Bound to no event loop: each waiter's future is its own loop's."""

    def __init__(self, slots: int):
        self.slots = max(1, slots)
        self._admitted_keys: list[float] = []  # one a call admitted (``outranks_every_call``)
        # (key, arrival, future, movable): a movable call may be handed to another gate.
        self._waiting: list[tuple[float, int, asyncio.Future[_Admission], bool]] = []
        self._order = itertools.count()

    @property
    def admitted(self) -> int:
        """Calls admitted and not yet released."""
        return len(self._admitted_keys)

    @property
    def waiting(self) -> int:
        return sum(not future.done() for _, _, future, _ in self._waiting)

    def outranks_every_call(self, key: float) -> bool:
        """Whether a call of ``key`` would wait although it goes before every call here: the
        gate is full, each admitted call's key is larger, and no call waiting has a key as
        small (``infra.local.cpu_lanes``'s express lane takes such a call at once)."""
        return (self.admitted >= self.slots
                and all(key < running for running in self._admitted_keys)
                and not any(waiting <= key for waiting, _, future, _ in self._waiting
                            if not future.done()))

    async def acquire(self, key: float, *, movable: bool = False) -> object:
        """Wait for a slot here; None once admitted here. A ``movable`` call may instead be
        admitted by another gate (``hand_over``): what it returns is then that gate's owner,
        where the call is to run (and to release)."""
        if self.admitted < self.slots:  # then nobody live waits (``release`` admits them)
            self._admitted_keys.append(key)
            return None
        future: asyncio.Future[_Admission] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiting, (key, next(self._order), future, movable))
        try:
            return (await future).owner
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():  # admitted just as it was cancelled
                admission = future.result()
                admission.gate.release(key)  # hand the slot on
                if admission.undo is not None:
                    admission.undo()
            raise

    def release(self, key: float) -> None:
        """The call admitted with ``key`` is done: admit the next."""
        self._admitted_keys.remove(key)
        while self._waiting and self.admitted < self.slots:
            waiting_key, _, future, _ = heapq.heappop(self._waiting)
            if future.done():  # cancelled while waiting
                continue
            if future.get_loop().is_closed():
                continue
            self._admitted_keys.append(waiting_key)
            future.set_result(_Admission(None, self))

    def hand_over(self, owner: object, gate: PriorityGate,
                  undo: Callable[[], object] | None = None) -> bool:
        """Admit the first movable call waiting here into ``gate`` instead (``owner`` is what
        its ``acquire`` returns: the one to run it); False when none waits. Only the movable
        ones may go, in this gate's order: the first of them by key, then by arrival. A call
        cancelled before it resumes gives ``gate`` its slot back and calls ``undo`` (what the
        caller counted for the hand-over)."""
        movable = [entry for entry in self._waiting if entry[3] and not entry[2].done()
                   and not entry[2].get_loop().is_closed()]
        if not movable:
            return False
        entry = min(movable)
        self._waiting.remove(entry)
        heapq.heapify(self._waiting)
        gate._admitted_keys.append(entry[0])
        entry[2].set_result(_Admission(owner, gate, undo))
        return True


class _Admission(NamedTuple):
    """Where a waiting call was admitted: ``owner`` None for its own gate."""

    owner: object
    gate: PriorityGate
    undo: Callable[[], object] | None = None
