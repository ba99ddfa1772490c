"""How soon the poller may look again after a wake-up: often when a pass is cheap, rarely when it
is dear, so the main process never spends most of its time polling.

Every finished unit wakes the poller (a job whose last unit is done succeeds at once, not at the
next interval). A pass reads every active job, so with two thousand documents queued a pass
costs tens of milliseconds, and a wake-up per unit made the poller the main process's largest
cost (py-spy: a fifth of its CPU on 254 NDAs). The pacer lets a woken poller run at once when
the last pass was cheap, and otherwise waits ``PACE`` times the last pass's CPU (the event loop
thread's) since it started: the poller's share of the main process stays near ``1 / PACE``, and
the latency it adds to a job is at most that gap (a 200-document burst: about 30 ms more from a
job's last unit to its success; with thousands of jobs active, a few tenths of a second).
"""

from __future__ import annotations

import time

__all__ = ["PACE", "CommitWaits", "PollPacer"]

PACE = 20.0
"""Twenty, since a pass's cost is its own CPU (``CommitWaits``). Before, the CPU other tasks
used while a pass waited for its flush counted too, and at ten the pacer made passes rarer than
it meant: with the cost measured right, ten let the poller take a tenth of the loop, and on
2,032 NDAs (``doclake bench pipeline --limit 254 --copies 8 --book-pages 0 --rounds 2``) the
run's process spent 0.61 ms a page against 0.52 before; at twenty 0.48, and on 83 NDAs the
``finish`` stage's median is 0.16 to 0.20 s (0.30 to 0.39 s with the old measure)."""


class PollPacer:
    def __init__(self, poll_interval_s: float, *, pace: float = PACE):
        self.poll_interval_s = poll_interval_s
        self.pace = pace
        self._started = 0.0
        self._cpu_started = 0.0
        self._cost = 0.0

    def started(self) -> None:
        self._started = time.monotonic()
        self._cpu_started = time.thread_time()

    def finished(self, others_s: float = 0.0) -> None:
        """The pass's cost: the event loop thread's CPU since ``started``, less ``others_s``,
        the loop's CPU while the pass waited for its events' flush (``CommitWaits``): other
        tasks ran then. Counted in, a pass that waited 0.27 s for a relaxed flush of a
        saturated run cost "30 ms" instead of a few, and the next waited 0.3 s: 53 of 83 NDAs
        read by 0.64 s were finished together at 0.89 s, their fields queued behind them.
        The wall is not counted either: a pass that waits for its flush (on the committer's
        thread) is not dear, and must not hold jobs back for it."""
        self._cost = max(0.0, time.thread_time() - self._cpu_started - others_s)

    def wait_s(self) -> float:
        """Seconds to wait before the next pass that a wake-up asks for (0: now)."""
        gap = min(self.poll_interval_s, self._cost * self.pace)
        return max(0.0, self._started + gap - time.monotonic())


class CommitWaits:
    """The poller's event sink: commits as the runtime's sink does, and adds up the event loop
    thread's CPU while it waits for each flush, which is other tasks' work and not the pass's
    (``PollPacer.finished``)."""

    def __init__(self, sink):
        self.sink = sink
        self.others_s = 0.0

    async def commit(self, events) -> None:
        started = time.thread_time()
        try:
            await self.sink.commit(events)
        finally:
            self.others_s += time.thread_time() - started

    def taken(self) -> float:
        """The CPU counted since the last call, and start again from zero."""
        others, self.others_s = self.others_s, 0.0
        return others
