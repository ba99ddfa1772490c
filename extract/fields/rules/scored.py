"""One chosen value predicted out of fold, with whether it was right: what training produces
and calibration consumes, kept apart so neither module imports the other."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Scored"]


@dataclass(frozen=True)
class Scored:
    """One chosen value out of fold: its document, fold, field, raw probability, rightness."""

    document: int
    fold: int
    field: str
    probability: float
    right: bool
