"""An invocation's deadline, taken from Lambda's own clock (``get_remaining_time_in_millis``).

Every function that loops (the poller's passes, compaction's days, the publisher's results) or
runs one long call (the weekly report) asks this before it starts the next piece of work, so an
invocation ends by itself, with what it did logged, instead of being killed at its timeout.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

__all__ = ["Deadline"]


@dataclass(frozen=True)
class Deadline:
    at: float
    """``time.monotonic()`` by which the invocation's work must be over."""

    @classmethod
    def of(cls, context, margin_s: float) -> Deadline:
        """The invocation's remaining time less ``margin_s`` (kept to finish and report)."""
        remaining_s = context.get_remaining_time_in_millis() / 1000
        return cls(time.monotonic() + max(0.0, remaining_s - margin_s))

    def left_s(self) -> float:
        return max(0.0, self.at - time.monotonic())

    def allows(self, seconds: float = 0.0) -> bool:
        """Whether ``seconds`` of work still fit."""
        return time.monotonic() + seconds < self.at
