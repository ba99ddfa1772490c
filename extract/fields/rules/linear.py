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
from itertools import repeat
from operator import mul
from pathlib import Path

from extract.fields.rules.candidates import Candidate

__all__ = ["FieldModel", "LinearModel", "relative_features", "select"]


def _logistic(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(min(z, 50.0), -50.0)))


def _kind(candidate: Candidate) -> str:
    """A party is a person or an organisation; other fields have one kind of candidate."""
    if candidate.field != "party":
        return "value"
    return "person" if all(k.startswith("person") for k in candidate.kinds) else "organisation"


def relative_features(candidates: list[Candidate], logits: list[float]) -> list[dict[str, float]]:
    """The ranker's view of one document's candidates for one field: each one's first-stage
    score against the others' (its rank, its gap to the best, the same among candidates of its
    kind: a person against persons, an organisation against organisations), so the choice is
    made among the document's candidates rather than by each one alone."""
    order = sorted(range(len(logits)), key=lambda i: -logits[i])
    rank = {index: position for position, index in enumerate(order)}
    best = max(logits, default=0.0)
    kinds = [_kind(c) for c in candidates]
    kind_rank: dict[int, int] = {}
    kind_best: dict[str, float] = {}
    seen: dict[str, int] = {}
    for index in order:
        kind = kinds[index]
        kind_rank[index] = seen.get(kind, 0)
        seen[kind] = kind_rank[index] + 1
        kind_best.setdefault(kind, logits[index])
    second = logits[order[1]] if len(order) > 1 else logits[order[0]] - 5.0 if order else 0.0
    rows = []
    for index, z in enumerate(logits):
        row = {"z": z, "gap": z - best, f"rank={min(rank[index], 3)}": 1.0,
               f"kind_rank={min(kind_rank[index], 2)}": 1.0, "kind_gap": z - kind_best[kinds[index]],
               f"kind={kinds[index]}": 1.0, f"others={min(len(logits) - 1, 3)}": 1.0}
        if rank[index] == 0:
            row["lead"] = min(z - second, 10.0)
        for other in seen:
            if other != kinds[index]:
                row["best_other_kind_z"] = kind_best[other]
        rows.append(row)
    return rows


@dataclass
class FieldModel:
    weights: dict[str, float]
    intercept: float
    threshold: float = 0.5
    max_values: int = 1
    min_values: int = 0
    """The best candidate is taken even under the threshold when this is 1 (an NDA always
    names a party)."""

    ranker: dict[str, float] = field(default_factory=dict)
    """The second stage's weights over ``relative_features`` (empty: the first stage decides)."""
    ranker_intercept: float = 0.0

    def logit(self, features: dict[str, float]) -> float:
        """The intercept and each feature's weight times its value (the products summed in
        the features' order, in C: a generator was most of the rules' scoring time)."""
        weights = map(self.weights.get, features, repeat(0.0))
        return self.intercept + sum(map(mul, weights, features.values()))

    def probability(self, features: dict[str, float]) -> float:
        """A candidate scored on its own (the first stage)."""
        return _logistic(self.logit(features))

    def probabilities(self, candidates: list[Candidate],
                      features: list[dict[str, float]]) -> list[float]:
        """Each candidate's probability of being a gold value, judged against the document's
        other candidates when the model has a second stage."""
        logits = [self.logit(f) for f in features]
        if not self.ranker:
            return [_logistic(z) for z in logits]
        return [self.rank(row) for row in relative_features(candidates, logits)]

    def rank(self, row: dict[str, float]) -> float:
        """A candidate's probability from its ``relative_features`` row (the second stage;
        the first stage's own score when there is none)."""
        if not self.ranker:
            return _logistic(row["z"])
        return _logistic(self.ranker_intercept + sum(self.ranker.get(k, 0.0) * v
                                                     for k, v in row.items()))


@dataclass
class LinearModel:
    """Per-field weights plus the version recorded with every result it produces."""

    version: str
    fields: dict[str, FieldModel] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps({"version": self.version, "fields": {
            name: {"intercept": m.intercept, "threshold": m.threshold, "max_values": m.max_values,
                   "min_values": m.min_values, "weights": dict(sorted(m.weights.items())),
                   "ranker_intercept": m.ranker_intercept,
                   "ranker": dict(sorted(m.ranker.items()))}
            for name, m in sorted(self.fields.items())}}, indent=0)

    @classmethod
    def from_json(cls, text: str) -> LinearModel:
        data = json.loads(text)
        return cls(data["version"], {name: FieldModel(
            m["weights"], m["intercept"], m["threshold"], m["max_values"], m.get("min_values", 0),
            m.get("ranker", {}), m.get("ranker_intercept", 0.0))
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
