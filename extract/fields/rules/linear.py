"""A linear scorer over candidate features, stored as plain JSON weights.

Scoring is a dot product and a logistic, so the run-time needs no scikit-learn and loads in
milliseconds; ``training`` fits the weights and writes this file. Selection is the same for any
weights: a single-valued field takes its best candidate if it clears the field's threshold; a
list field takes every candidate that does (at most ``max_values``), dropping one whose token is
contained in a better one's.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from extract.fields.rules.candidates import Candidate

__all__ = ["FieldModel", "LinearModel", "select"]


@dataclass
class FieldModel:
    weights: dict[str, float]
    intercept: float
    threshold: float = 0.5
    max_values: int = 1
    min_values: int = 0
    """The best candidate is taken even under the threshold when this is 1 (an NDA always
    names a party)."""

    def probability(self, features: dict[str, float]) -> float:
        z = self.intercept + sum(self.weights.get(k, 0.0) * v for k, v in features.items())
        return 1.0 / (1.0 + math.exp(-max(min(z, 50.0), -50.0)))


@dataclass
class LinearModel:
    """Per-field weights plus the version recorded with every result it produces."""

    version: str
    fields: dict[str, FieldModel] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps({"version": self.version, "fields": {
            name: {"intercept": m.intercept, "threshold": m.threshold, "max_values": m.max_values,
                   "min_values": m.min_values, "weights": dict(sorted(m.weights.items()))}
            for name, m in sorted(self.fields.items())}}, indent=0)

    @classmethod
    def from_json(cls, text: str) -> LinearModel:
        data = json.loads(text)
        return cls(data["version"], {name: FieldModel(m["weights"], m["intercept"], m["threshold"],
                                                      m["max_values"], m.get("min_values", 0))
                                     for name, m in data["fields"].items()})

    @classmethod
    def load(cls, path: Path) -> LinearModel:
        return cls.from_json(path.read_text(encoding="utf-8"))


def select(candidates: list[Candidate], probabilities: list[float],
           model: FieldModel) -> list[tuple[Candidate, float]]:
    """The chosen candidates, best first."""
    ranked = sorted(zip(candidates, probabilities, strict=True), key=lambda cp: -cp[1])
    chosen: list[tuple[Candidate, float]] = []
    for candidate, probability in ranked:
        if len(chosen) >= model.max_values:
            break
        if probability < model.threshold and len(chosen) >= model.min_values:
            break
        if any(candidate.key in other.key or other.key in candidate.key for other, _ in chosen):
            continue
        chosen.append((candidate, probability))
    return chosen
