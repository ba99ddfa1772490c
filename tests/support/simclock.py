"""A simulation clock for the deployment built from the template (``support.awsstack``): wall-clock
time jumps forward in the test process and in the IAM moto server together, so a queue's retry
schedule of minutes plays out in seconds with its own values, not scaled ones.

In the test process time-machine moves ``time.time`` and ``datetime.now`` (the handlers' and
the store's timestamps, a job's ``retry_at``, leases, the fake Gemini's brownout window); the
server moves its own clock the same way (SQS visibility). Both keep ticking with real time, so
an invocation's own seconds count as they would on AWS. ``time.monotonic`` is left alone: a
Lambda's remaining time (``LambdaContext``) and asyncio's timers stay real.

A jump is taken only between invocations, to the next thing that happens by itself: the first
hidden message becoming visible (the server knows when) or the next scheduled invocation.
"""

from __future__ import annotations

import time

import time_machine

from support.awsstack import IamMoto


class SimClock:
    def __init__(self, server: IamMoto):
        self.server = server
        self.shifted_s = 0.0
        self._travel: time_machine.travel | None = None
        self._coordinates = None

    def __enter__(self) -> SimClock:
        self._travel = time_machine.travel(time.time(), tick=True)
        self._coordinates = self._travel.start()
        self.started = time.time()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._travel is not None:
            self._travel.stop()
            self._travel = self._coordinates = None

    def now(self) -> float:
        """Seconds since the clock started, simulated (jumps) and real (ticks) together."""
        return time.time() - self.started

    def advance(self, seconds: float) -> None:
        """Jump both clocks ``seconds`` forward."""
        if seconds <= 0:
            return
        self.server.shift(seconds)
        self._coordinates.shift(seconds)  # type: ignore[union-attr]
        self.shifted_s += seconds

    def next_visible_s(self) -> float | None:
        return self.server.next_visible_s()
