"""Figures by group with bootstrap confidence intervals, and paired comparisons of two groups.

Documents are the unit resampled (not tokens): one document's parties rise and fall together,
so resampling tokens would make intervals falsely narrow. Each resample draws as many documents
as the group has, with replacement, and recomputes the micro-averaged figures from summed
counts. The interval is the bias-corrected and accelerated one (BCa, Efron 1987; acceleration
from the leave-one-document-out jackknife), which a plain percentile interval is not at the
bounds: ten perfect documents resample to 100% every time and the percentile interval collapses
to "100.00-100.00". When the resamples cannot vary (every document perfect, or none right) the
interval is Wilson's score interval for the figure as a proportion of the documents, which
widens as documents get fewer instead of vanishing. A comparison resamples the documents both
groups scored with the same draws, so the interval is of the paired difference.

Fewer than ``MIN_DOCUMENTS`` documents behind a figure earns a warning: intervals that wide
decide nothing.

The seed is fixed and recorded, so a run is reproducible.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from statistics import NormalDist

import numpy as np

from evals.breakdown import empty_rates, misses
from evals.kleister_metric import Score
from evals.scoring import Scored, group_of

__all__ = ["Figures", "GroupFigures", "Comparison", "group_figures", "compare", "paired",
           "RESAMPLES", "MIN_DOCUMENTS", "INTERVAL"]

RESAMPLES = 1000
SEED = 13
MIN_DOCUMENTS = 30
CONFIDENCE = 0.95
INTERVAL = ("95% BCa bootstrap over documents; Wilson score interval over documents when every "
            "resample gives the same figure")


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
    details: dict = field(default_factory=dict)
    """misses by kind and empty-field rates per field, model failures (``evals.breakdown``)."""

    def to_dict(self) -> dict:
        return {"model_version": self.model_version, "strategy": self.strategy,
                "documents": self.overall.documents, "overall": self.overall.to_dict(),
                "fields": {k: v.to_dict() for k, v in sorted(self.fields.items())},
                **self.details}


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


_NORMAL = NormalDist()


def wilson(proportion: float, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Wilson's score interval for a proportion observed over ``n`` units."""
    z = _NORMAL.inv_cdf(0.5 + confidence / 2)
    denominator = 1 + z * z / n
    centre = (proportion + z * z / (2 * n)) / denominator
    half = z * math.sqrt(max(proportion * (1 - proportion), 0.0) / n + z * z / (4 * n * n)) / (
        denominator)
    return max(0.0, centre - half), min(1.0, centre + half)


def bca(estimate: float, resampled: np.ndarray, jackknife: np.ndarray,
        confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """The BCa interval from the resampled statistics and the leave-one-out ones; None when
    the resamples do not vary (the caller decides what a degenerate case means)."""
    if np.ptp(resampled) == 0:
        return None
    below = (np.sum(resampled < estimate) + 0.5 * np.sum(resampled == estimate)) / len(resampled)
    z0 = _NORMAL.inv_cdf(min(max(below, 1e-6), 1 - 1e-6))
    spread = jackknife.mean() - jackknife
    denominator = 6 * float(np.sum(spread ** 2)) ** 1.5
    a = float(np.sum(spread ** 3)) / denominator if denominator > 0 else 0.0
    ends = []
    for tail in ((1 - confidence) / 2, (1 + confidence) / 2):
        z = _NORMAL.inv_cdf(tail)
        ends.append(_NORMAL.cdf(z0 + (z0 + z) / (1 - a * (z0 + z))))
    low, high = np.quantile(resampled, ends)
    return float(low), float(high)


def _interval(estimate: float, resampled: np.ndarray, jackknife: np.ndarray,
              n: int) -> tuple[float, float]:
    found = bca(estimate, resampled, jackknife)
    if found is None or found[0] == found[1]:
        return wilson(min(max(estimate, 0.0), 1.0), n)
    low, high = found
    return min(low, estimate), max(high, estimate)


def figures(scores: Sequence[Score], draws: np.ndarray | None) -> Figures:
    total = sum(scores, Score())
    if draws is None or len(scores) < 2:
        return Figures(total, len(scores), None, None, None)
    counts = _counts(scores)
    sums = counts[draws].sum(axis=1)  # (resamples, 3)
    left_out = counts.sum(axis=0) - counts  # (documents, 3): the jackknife
    boot, jack = _ratios(*sums.T), _ratios(*left_out.T)
    estimates = (total.precision, total.recall, total.f1)
    p, r, f = (_interval(estimates[k], boot[k], jack[k], len(scores)) for k in range(3))
    return Figures(total, len(scores), p, r, f)


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
        details = {"misses": misses(rows), "empty_rate": empty_rates(rows),
                   "failed_extractions": sum(r.result.status == "failed" for r in rows),
                   "not_applicable": sum(r.result.status == "not_applicable" for r in rows)}
        out.append(GroupFigures(key[0], key[1], figures([r.overall for r in rows], draws),
                                {name: figures([r.fields.get(name, Score()) for r in rows], draws)
                                 for name in names}, details))
    return out


def compare(scored: Sequence[Scored], a: tuple[str, str], b: tuple[str, str], *,
            resamples: int = RESAMPLES, seed: int = SEED) -> Comparison:
    """F1 of B minus F1 of A on the documents both groups scored, with a paired interval."""
    latest = {(group_of(r.result), r.label.document_id): r for r in scored if r.latest_in_group}
    common = sorted({d for g, d in latest if g == a} & {d for g, d in latest if g == b})
    first = [latest[(a, d)].overall for d in common]
    second = [latest[(b, d)].overall for d in common]
    return paired(a, b, first, second, resamples=resamples, seed=seed)


def paired(a: tuple[str, str], b: tuple[str, str], first: Sequence[Score],
           second: Sequence[Score], *, resamples: int = RESAMPLES,
           seed: int = SEED) -> Comparison:
    """F1 of ``second`` minus F1 of ``first``, the same documents in the same order, with a
    BCa interval over the same draws (a paired difference); no interval when the resampled
    differences do not vary."""
    f1_a, f1_b = sum(first, Score()).f1, sum(second, Score()).f1
    draws = _draws(len(first), resamples, seed)
    ci = None
    if draws is not None:
        ca, cb = _counts(first), _counts(second)
        sa, sb = ca[draws].sum(axis=1), cb[draws].sum(axis=1)
        ja, jb = ca.sum(axis=0) - ca, cb.sum(axis=0) - cb
        difference = f1_b - f1_a
        # None when every resample gives the same difference (each document moved alike): a
        # zero-width interval would claim a certainty the bootstrap cannot give
        ci = bca(difference, _ratios(*sb.T)[2] - _ratios(*sa.T)[2],
                 _ratios(*jb.T)[2] - _ratios(*ja.T)[2])
    return Comparison(a, b, len(first), f1_a, f1_b, f1_b - f1_a, ci)
