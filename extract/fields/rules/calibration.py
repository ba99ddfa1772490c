"""The rules' confidences made calibrated: a value reported at 0.7 is right about 7 times in 10.

The linear model's probabilities are fitted per candidate, not per chosen value, so they are not
the chance a reported value is right (grouped out-of-fold on the Kleister NDAs they were too low
in the lower half). An isotonic regression per field, fitted on grouped out-of-fold values
(``calibrating``, a training-time module), maps a probability to the share of values right at
that probability; it ships as breakpoints in ``nda_calibration.json`` and is applied here by
linear interpolation between them, without scikit-learn. It is applied only to the model it
was fitted for (its ``model_version``): a retrained model's values keep their raw probability
until ``doclake fields train --calibration`` is run again. The file also records the chosen
confidence floor and the figures behind it (``doclake fields cv --calibration`` prints them).
"""

from __future__ import annotations

import bisect
import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

__all__ = ["CALIBRATION_PATH", "Calibration", "shipped_calibration"]

CALIBRATION_PATH = Path(__file__).with_name("nda_calibration.json")


@dataclass
class Calibration:
    model_version: str
    curves: dict[str, tuple[list[float], list[float]]]
    """field -> (probabilities, calibrated values): increasing breakpoints."""
    threshold: float = 0.0
    """The chosen confidence floor (the one that maximised grouped out-of-fold F1)."""
    details: dict = field(default_factory=dict)

    def apply(self, field_name: str, probability: float) -> float:
        curve = self.curves.get(field_name)
        if not curve or not curve[0]:
            return probability
        xs, ys = curve
        if probability <= xs[0]:
            return ys[0]
        if probability >= xs[-1]:
            return ys[-1]
        i = bisect.bisect_right(xs, probability)
        x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
        return y0 if x1 == x0 else y0 + (y1 - y0) * (probability - x0) / (x1 - x0)

    def to_json(self) -> str:
        return json.dumps({"model_version": self.model_version, "threshold": self.threshold,
                           "curves": {k: [list(x), list(y)] for k, (x, y) in
                                      sorted(self.curves.items())},
                           "details": self.details}, indent=0)

    @classmethod
    def load(cls, path: Path) -> Calibration:
        data = json.loads(path.read_text(encoding="utf-8"))
        return cls(data["model_version"], {k: (v[0], v[1]) for k, v in data["curves"].items()},
                   data.get("threshold", 0.0), data.get("details", {}))


@cache
def _shipped() -> Calibration | None:
    return Calibration.load(CALIBRATION_PATH) if CALIBRATION_PATH.exists() else None


def shipped_calibration(model_version: str) -> Calibration | None:
    """The shipped calibration when it was fitted for ``model_version``, else None."""
    calibration = _shipped()
    return calibration if calibration and calibration.model_version == model_version else None
