"""The quality gate: a figure passes when the low end of its interval reaches the threshold.

A point estimate over three documents passes a gate of 90 as easily as one over three hundred;
the interval's lower bound does not (three perfect documents have a Wilson lower bound of 44%).
So ``--fail-under`` reads the lower bound, and falls back to the point estimate only when there
is no interval (one document, or ``--resamples 0``), saying so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["GateCheck", "check"]


@dataclass(frozen=True)
class GateCheck:
    name: str
    f1: float
    low: float | None
    threshold: float  # 0-1

    @property
    def compared(self) -> float:
        return self.f1 if self.low is None else self.low

    @property
    def passed(self) -> bool:
        return self.compared >= self.threshold

    def message(self) -> str:
        what = (f"F1 {100 * self.f1:.2f} (no interval: the point estimate is gated)"
                if self.low is None else
                f"F1 {100 * self.f1:.2f}, interval low {100 * self.low:.2f}")
        verdict = "ok" if self.passed else "FAIL"
        sign = ">=" if self.passed else "<"
        return f"{verdict}: {self.name} {what} {sign} {100 * self.threshold:g}"


def check(figures: Sequence[tuple[str, float, tuple[float, float] | None]],
          fail_under_percent: float) -> list[GateCheck]:
    """One check per (name, F1, interval) figure; an empty list means nothing was scored."""
    return [GateCheck(name, f1, ci[0] if ci else None, fail_under_percent / 100)
            for name, f1, ci in figures]
