"""An AIMD limit on model calls in flight, shared by every worker of the process.

In the write-up's brownout the SDK took 503 for an error, not for throttling, so nothing slowed
down and hundreds of workers kept hammering a provider that was asking them to stop. Here a 429
or a 503 halves the limit; each successful call while the limit is in use adds one back (as in
Netflix's concurrency-limits ``AIMDLimit``: per success, which regrows the limit in a few round
trips once the provider is well, rather than one per round trip, which would take half an hour
from 1 back to 500).

A burst of failures sent under one limit counts as one signal: a call only shrinks the limit if
it was sent after the last decrease (its ``epoch`` is current), the way TCP reacts once per
window, so 300 simultaneous 503s halve the limit once, not 300 times.

One limiter per provider endpoint and event loop (``shared``), so every unit's five pages and
every worker in the process draw from the same budget.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections import deque
from dataclasses import dataclass

__all__ = ["AimdLimiter", "Permit", "shared"]


@dataclass(frozen=True)
class Permit:
    epoch: int


class AimdLimiter:
    def __init__(self, maximum: int, *, minimum: int = 1, initial: int | None = None,
                 decrease: float = 0.5, increase: float = 1.0):
        self.maximum = max(1, maximum)
        self.minimum = max(1, min(minimum, self.maximum))
        self.limit = float(initial if initial is not None else self.maximum)
        self.decrease = decrease
        self.increase = increase
        self.in_flight = 0
        self.epoch = 0
        self.lowest = self.limit  # for tests and benchmarks: how far it fell
        self._waiters: deque[asyncio.Future[None]] = deque()

    async def acquire(self) -> Permit:
        """A slot under the current limit; waiters are served first come, first served, and a
        waiter is woken with its slot already counted (no race with newcomers)."""
        if self.in_flight < int(self.limit) and not self._waiters:
            self.in_flight += 1
            return Permit(self.epoch)
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():  # handed a slot as we were cancelled
                self.in_flight -= 1
                self._wake()
            else:
                with contextlib.suppress(ValueError):
                    self._waiters.remove(waiter)
            raise
        return Permit(self.epoch)

    def release(self, permit: Permit, *, throttled: bool, success: bool = False) -> None:
        """Give the slot back, saying how the call went; hands slots to the waiters the new
        limit admits."""
        self.in_flight -= 1
        if throttled:
            if permit.epoch == self.epoch:
                self.limit = max(float(self.minimum), self.limit * self.decrease)
                self.lowest = min(self.lowest, self.limit)
                self.epoch += 1
        elif success and self.in_flight + 1 >= self.limit / 2:
            # Only a limit in use grows: a quiet hour must not leave it at the maximum by accident.
            self.limit = min(float(self.maximum), self.limit + self.increase)
        self._wake()

    def _wake(self) -> None:
        while self._waiters and self.in_flight < int(self.limit):
            waiter = self._waiters.popleft()
            if not waiter.done():
                self.in_flight += 1
                waiter.set_result(None)


_shared: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, AimdLimiter]] = (
    weakref.WeakKeyDictionary())


def shared(key: str, maximum: int, *, minimum: int = 1) -> AimdLimiter:
    """The process's limiter for ``key`` (a provider endpoint) on the running event loop."""
    per_loop = _shared.setdefault(asyncio.get_running_loop(), {})
    limiter = per_loop.get(key)
    if limiter is None:
        limiter = per_loop[key] = AimdLimiter(maximum, minimum=minimum)
    return limiter
