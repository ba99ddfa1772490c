"""Figures by group with bootstrap confidence intervals, and paired comparisons of two groups.

Documents are the unit resampled (not tokens): one document's parties rise and fall together,
so resampling tokens would make intervals falsely narrow. Each resample draws as many documents
as the group has, with replacement, and recomputes the micro-averaged figures from summed
counts; the interval is the 2.5th to 97.5th percentile. A comparison resamples the documents
both groups scored with the same draws, so the interval is of the paired difference.

The seed is fixed and recorded, so a run is reproducible.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from evals.kleister_metric import Score
from evals.scoring import Scored, group_of

__all__ = ["Figures", "GroupFigures", "Comparison", "group_figures", "compare", "RESAMPLES"]

RESAMPLES = 1000
SEED = 13


@dataclass(frozen=True)
class Figures:
    """A score and its bootstrap intervals (None with fewer than two documents)."""

    score: Score
    documents: int
    precision_ci: tuple[float, float] | None
    recall_ci: tuple[float, float] | None
    f1_ci: tuple[float, float] | None

    def to_dict(self) -> dict:
        return {**self.score.to_dict(), "documents": self.documents,
                "precision_ci": _pair(self.precision_ci), "recall_ci": _pair(self.recall_ci),
                "f1_ci": _pair(self.f1_ci)}


def _pair(ci: tuple[float, float] | None) -> list[float] | None:
    return list(ci) if ci else None


@dataclass(frozen=True)
class GroupFigures:
    model_version: str
    strategy: str
    overall: Figures
    fields: dict[str, Figures]

    def to_dict(self) -> dict:
        return {"model_version": self.model_version, "strategy": self.strategy,
                "documents": self.overall.documents, "overall": self.overall.to_dict(),
                "fields": {k: v.to_dict() for k, v in sorted(self.fields.items())}}


@dataclass(frozen=True)
class Comparison:
    """B minus A on the documents both scored (latest result of each)."""

    a: tuple[str, str]
    b: tuple[str, str]
    documents: int
    f1_a: float
    f1_b: float
    difference: float
    difference_ci: tuple[float, float] | None

    def to_dict(self) -> dict:
        return {"a": {"model_version": self.a[0], "strategy": self.a[1], "f1": self.f1_a},
                "b": {"model_version": self.b[0], "strategy": self.b[1], "f1": self.f1_b},
                "documents": self.documents, "f1_difference": self.difference,
                "f1_difference_ci": _pair(self.difference_ci)}


def _ratios(hits: np.ndarray, predicted: np.ndarray, expected: np.ndarray):
    """Precision, recall and F1 arrays with the metric's conventions for empty sets."""
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(predicted > 0, hits / np.maximum(predicted, 1), 1.0)
        r = np.where(expected > 0, hits / np.maximum(expected, 1), 1.0)
        f = np.where(p + r > 0, 2 * p * r / np.where(p + r > 0, p + r, 1), 0.0)
    return p, r, f


def _counts(scores: Sequence[Score]) -> np.ndarray:
    return np.array([[s.hits, s.predicted, s.expected] for s in scores], dtype=float).reshape(-1, 3)


def _interval(values: np.ndarray) -> tuple[float, float]:
    low, high = np.percentile(values, [2.5, 97.5])
    return float(low), float(high)


def figures(scores: Sequence[Score], draws: np.ndarray | None) -> Figures:
    total = sum(scores, Score())
    if draws is None or len(scores) < 2:
        return Figures(total, len(scores), None, None, None)
    sums = _counts(scores)[draws].sum(axis=1)  # (resamples, 3)
    p, r, f = _ratios(sums[:, 0], sums[:, 1], sums[:, 2])
    return Figures(total, len(scores), _interval(p), _interval(r), _interval(f))


def _draws(n: int, resamples: int, seed: int) -> np.ndarray | None:
    if n < 2 or resamples < 1:
        return None
    return np.random.default_rng(seed).integers(0, n, size=(resamples, n))


def group_figures(scored: Sequence[Scored], *, resamples: int = RESAMPLES,
                  seed: int = SEED) -> list[GroupFigures]:
    """One entry per (model_version, strategy), over the latest result of each document."""
    groups: dict[tuple[str, str], list[Scored]] = {}
    for row in scored:
        if row.latest_in_group:
            groups.setdefault(group_of(row.result), []).append(row)
    out = []
    for key in sorted(groups):
        rows = groups[key]
        draws = _draws(len(rows), resamples, seed)
        names = sorted({name for row in rows for name in row.fields})
        out.append(GroupFigures(key[0], key[1], figures([r.overall for r in rows], draws),
                                {name: figures([r.fields.get(name, Score()) for r in rows], draws)
                                 for name in names}))
    return out


def pooled(scored: Sequence[Scored], *, resamples: int = RESAMPLES, seed: int = SEED) -> Figures:
    """Every group's latest results together: the one figure a weekly line can carry."""
    rows = [row for row in scored if row.latest_in_group]
    return figures([r.overall for r in rows], _draws(len(rows), resamples, seed))


def compare(scored: Sequence[Scored], a: tuple[str, str], b: tuple[str, str], *,
            resamples: int = RESAMPLES, seed: int = SEED) -> Comparison:
    """F1 of B minus F1 of A on the documents both groups scored, with a paired interval."""
    latest = {(group_of(r.result), r.label.document_id): r for r in scored if r.latest_in_group}
    common = sorted({d for g, d in latest if g == a} & {d for g, d in latest if g == b})
    first = [latest[(a, d)].overall for d in common]
    second = [latest[(b, d)].overall for d in common]
    f1_a, f1_b = sum(first, Score()).f1, sum(second, Score()).f1
    draws = _draws(len(common), resamples, seed)
    ci = None
    if draws is not None:
        sa, sb = _counts(first)[draws].sum(axis=1), _counts(second)[draws].sum(axis=1)
        ci = _interval(_ratios(*sb.T)[2] - _ratios(*sa.T)[2])
    return Comparison(a, b, len(common), f1_a, f1_b, f1_b - f1_a, ci)
