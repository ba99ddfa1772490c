"""A simulation clock for the deployment built from the template (``support.awsstack``): wall-clock
time jumps forward in the test process and in the IAM moto server together, so a queue's retry
schedule of minutes plays out in seconds with its own values, not scaled ones.

In the test process time-machine moves ``time.time`` and ``datetime.now`` (the handlers' and
the store's timestamps, a job's ``retry_at``, leases, the fake Gemini's brownout window); the
server moves its own clock the same way (SQS visibility). Both keep ticking with real time, so
an invocation's own seconds count as they would on AWS. ``time.monotonic`` is left alone: a
Lambda's remaining time (``LambdaContext``) and asyncio's timers stay real.

On exit the clock puts back what its jumps leave behind in this process: ``uuid6`` keeps the
last UUIDv7 millisecond it minted and never mints one below it, so after a 12-hour jump every
later id of the test session (a job's, a document's, and so the lake's ``dt``) would carry the
simulated time; past noon UTC that is tomorrow's date, and a later test's ``--since tomorrow``
found its documents.

A jump is taken only between invocations, to the next thing that happens by itself: the first
hidden message becoming visible (the server knows when) or the next scheduled invocation.
"""

from __future__ import annotations

import time

import time_machine
import uuid6

from support.awsstack import IamMoto


class SimClock:
    def __init__(self, server: IamMoto):
        self.server = server
        self.shifted_s = 0.0
        self._travel: time_machine.travel | None = None
        self._coordinates = None
        self._uuid7_floor: int | None = None

    def __enter__(self) -> SimClock:
        self._uuid7_floor = uuid6._last_v7_timestamp
        self._travel = time_machine.travel(time.time(), tick=True)
        self._coordinates = self._travel.start()
        self.started = time.time()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._travel is not None:
            self._travel.stop()
            self._travel = self._coordinates = None
        uuid6._last_v7_timestamp = self._uuid7_floor  # ids minted later carry the real time

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
