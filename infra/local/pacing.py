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

__all__ = ["PACE", "PollPacer"]

PACE = 10.0


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

    def finished(self) -> None:
        # The event loop thread's CPU, not the wall: a pass that waits for its events' flush
        # (on the committer's thread) is not dear, and must not hold jobs back for it.
        self._cost = time.thread_time() - self._cpu_started

    def wait_s(self) -> float:
        """Seconds to wait before the next pass that a wake-up asks for (0: now)."""
        gap = min(self.poll_interval_s, self._cost * self.pace)
        return max(0.0, self._started + gap - time.monotonic())
