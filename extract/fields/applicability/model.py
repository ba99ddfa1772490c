"""A fitted kind classifier as plain JSON: a logistic over ``features``, scored without
scikit-learn (a dot product over the features the document has), so the run time loads it in
milliseconds. ``training`` writes it; ``extract.fields.kinds`` scores with it.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from extract.fields.applicability.features import features

__all__ = ["KindModel", "NDA_MODEL_PATH", "nda_model"]

NDA_MODEL_PATH = Path(__file__).with_name("nda_kind.json")


@dataclass
class KindModel:
    version: str
    intercept: float
    weights: dict[str, float]
    threshold: float = 0.5
    details: dict = field(default_factory=dict)
    """How it was fitted and measured (written by ``training``, read by people)."""

    def score(self, text: str) -> float:
        z = self.intercept + sum(self.weights.get(k, 0.0) * v for k, v in features(text).items())
        return 1.0 / (1.0 + math.exp(-max(min(z, 50.0), -50.0)))

    def to_json(self) -> str:
        return json.dumps({"version": self.version, "intercept": self.intercept,
                           "threshold": self.threshold, "details": self.details,
                           "weights": dict(sorted(self.weights.items()))}, indent=0)

    @classmethod
    def load(cls, path: Path) -> KindModel:
        data = json.loads(path.read_text(encoding="utf-8"))
        return cls(data["version"], data["intercept"], data["weights"], data["threshold"],
                   data.get("details", {}))


@cache
def nda_model() -> KindModel:
    """The shipped NDA classifier (``doclake fields train --applicability`` rebuilds it)."""
    return KindModel.load(NDA_MODEL_PATH)
