"""The Kleister benchmark's field metric, as a pure function over ``key=value`` tokens.

Semantics (the benchmark's GEval config, see ``shared/data/kleister-nda/README.md``): both sides
are upper-cased; a predicted token counts as a hit only if it equals a gold token still unmatched,
so each gold token is matched at most once (multiset intersection); counts are summed over all
documents before dividing (micro average); the precision of an empty prediction set and the recall
of an empty gold set are 1.0. The same figures are computed per field (the part before ``=``).

Formatting values into tokens belongs with the schema (``extract.fields.schemas``); this module
only compares tokens, so the quality team can score any schema's output with it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

__all__ = ["Score", "Report", "score", "score_document"]


@dataclass(frozen=True)
class Score:
    """Matched, predicted and gold token counts, and the ratios they give."""

    hits: int = 0
    predicted: int = 0
    expected: int = 0

    @property
    def precision(self) -> float:
        return self.hits / self.predicted if self.predicted else 1.0

    @property
    def recall(self) -> float:
        return self.hits / self.expected if self.expected else 1.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    def __add__(self, other: Score) -> Score:
        return Score(self.hits + other.hits, self.predicted + other.predicted,
                     self.expected + other.expected)

    def to_dict(self) -> dict[str, float | int]:
        return {"precision": self.precision, "recall": self.recall, "f1": self.f1,
                "hits": self.hits, "predicted": self.predicted, "expected": self.expected}


@dataclass(frozen=True)
class Report:
    """The overall score and one per field, each micro-averaged over the documents."""

    overall: Score
    fields: dict[str, Score] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"overall": self.overall.to_dict(),
                "fields": {name: s.to_dict() for name, s in sorted(self.fields.items())}}


def _key(token: str) -> str:
    return token.split("=", 1)[0]


def _count(tokens: Iterable[str]) -> Counter[str]:
    return Counter(t.upper() for t in tokens if t)


def score_document(predicted: Iterable[str], expected: Iterable[str]) -> dict[str, Score]:
    """Per-field counts for one document; keys are the upper-cased field names."""
    pred, gold = _count(predicted), _count(expected)
    hits = pred & gold  # each gold token matched at most once
    result: dict[str, Score] = {}
    for name in {_key(t) for t in pred} | {_key(t) for t in gold}:
        result[name] = Score(
            hits=sum(n for t, n in hits.items() if _key(t) == name),
            predicted=sum(n for t, n in pred.items() if _key(t) == name),
            expected=sum(n for t, n in gold.items() if _key(t) == name))
    return result


def score(predictions: Sequence[Iterable[str]], gold: Sequence[Iterable[str]],
          fields: Iterable[str] = ()) -> Report:
    """Micro-averaged figures over aligned lists of documents' token sets.

    ``fields`` names fields to report even when no document mentions them (they score 1.0).
    """
    if len(predictions) != len(gold):
        raise ValueError(f"{len(predictions)} predictions for {len(gold)} gold documents")
    per_field: dict[str, Score] = {name.upper(): Score() for name in fields}
    for pred, exp in zip(predictions, gold, strict=True):
        for name, part in score_document(pred, exp).items():
            per_field[name] = per_field.get(name, Score()) + part
    overall = sum(per_field.values(), Score())
    return Report(overall=overall, fields={k.lower(): v for k, v in per_field.items()})
