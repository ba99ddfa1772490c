"""Does a value's confidence say what to review? Calibration and ranking per field.

Each predicted value that was scored is right (a hit) or wrong (a wrong or spurious value),
and carries the confidence its result gave it (``result_fields.confidence``, whatever produced
it). Two questions, two statistics:

- **calibration**: is a value at 0.8 right 8 times in 10? The reliability table bins values by
  confidence (``BINS`` equal-width bins over [0, 1]; 1.0 falls in the last) with each bin's
  values, mean confidence and share right; the expected calibration error (ECE) is the
  values-weighted mean of |share right - mean confidence| over the bins;
- **ranking**: are wrong values less confident than right ones? The AUROC of confidence for
  right vs wrong values: the probability that a random right value is more confident than a
  random wrong one, ties counting half (the Mann-Whitney U over right x wrong values; the same
  statistic as ``sklearn.metrics.roc_auc_score(right, confidence)``). Its interval is Hanley and
  McNeil's (1982) normal approximation.

A field's confidence **ranks errors** when its AUROC is at least ``RANKS_AT`` and the interval's
low end is above 0.5 (better than chance, and by a margin the data can show), with at least
``MIN_EACH`` right and ``MIN_EACH`` wrong values: then reviewing its least confident values
first finds errors sooner than reviewing at random; otherwise a review draws its values at
random (``evals.review``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from evals.scoring import Scored, group_of

__all__ = ["BINS", "MIN_EACH", "RANKS_AT", "Bin", "FieldConfidence", "auroc", "by_field",
           "expected_calibration_error", "reliability"]

BINS = 5
RANKS_AT = 0.7
MIN_EACH = 5
_Z = 1.959963984540054


@dataclass(frozen=True)
class Bin:
    low: float
    high: float
    values: int
    mean_confidence: float | None
    share_right: float | None


@dataclass(frozen=True)
class FieldConfidence:
    model_version: str
    strategy: str
    field: str
    right: int
    wrong: int
    bins: tuple[Bin, ...]
    ece: float | None
    auroc: float | None
    auroc_ci: tuple[float, float] | None

    @property
    def ranks_errors(self) -> bool:
        return (self.auroc is not None and self.auroc_ci is not None
                and self.auroc >= RANKS_AT and self.auroc_ci[0] > 0.5
                and min(self.right, self.wrong) >= MIN_EACH)

    @property
    def verdict(self) -> str:
        if self.auroc is None:
            return "no AUROC: needs right and wrong values with a confidence"
        if self.ranks_errors:
            return "confidence ranks errors: review the least confident values first"
        return f"{self.why_not}: review a random draw"

    @property
    def why_not(self) -> str:
        """Why confidence is not trusted to order a review (empty when it is)."""
        if self.ranks_errors:
            return ""
        if self.auroc is None:
            return "no AUROC: needs right and wrong values with a confidence"
        if min(self.right, self.wrong) < MIN_EACH:
            return (f"too few values to tell ({self.right} right, {self.wrong} wrong; "
                    f"{MIN_EACH} of each needed)")
        return "confidence does not rank errors better than chance here"

    def to_dict(self) -> dict:
        return {"model_version": self.model_version, "strategy": self.strategy,
                "field": self.field, "right": self.right, "wrong": self.wrong,
                "ece": self.ece, "auroc": self.auroc,
                "auroc_ci": list(self.auroc_ci) if self.auroc_ci else None,
                "ranks_errors": self.ranks_errors,
                "bins": [b.__dict__ for b in self.bins]}


def reliability(pairs: Sequence[tuple[float, bool]], bins: int = BINS) -> tuple[Bin, ...]:
    """``pairs``: (confidence, right). Equal-width bins over [0, 1]."""
    out = []
    for k in range(bins):
        low, high = k / bins, (k + 1) / bins
        inside = [(c, r) for c, r in pairs
                  if low <= c < high or (k == bins - 1 and c == high)]
        out.append(Bin(low, high, len(inside),
                       sum(c for c, _ in inside) / len(inside) if inside else None,
                       sum(r for _, r in inside) / len(inside) if inside else None))
    return tuple(out)


def expected_calibration_error(pairs: Sequence[tuple[float, bool]], bins: int = BINS
                               ) -> float | None:
    if not pairs:
        return None
    return sum(b.values / len(pairs) * abs(b.share_right - b.mean_confidence)
               for b in reliability(pairs, bins) if b.values)


def auroc(pairs: Sequence[tuple[float, bool]]) -> float | None:
    """P(confidence of a right value > that of a wrong one), ties half; None without both."""
    right = sorted(c for c, r in pairs if r)
    wrong = sorted(c for c, r in pairs if not r)
    if not right or not wrong:
        return None
    import bisect

    wins = sum(bisect.bisect_left(wrong, c) + 0.5 * (bisect.bisect_right(wrong, c)
                                                      - bisect.bisect_left(wrong, c))
               for c in right)
    return wins / (len(right) * len(wrong))


def _hanley_mcneil(area: float, right: int, wrong: int) -> tuple[float, float]:
    q1, q2 = area / (2 - area), 2 * area * area / (1 + area)
    variance = (area * (1 - area) + (right - 1) * (q1 - area * area)
                + (wrong - 1) * (q2 - area * area)) / (right * wrong)
    half = _Z * math.sqrt(max(variance, 0.0))
    return max(0.0, area - half), min(1.0, area + half)


def _pairs(rows: Iterable[Scored]) -> dict[tuple[str, str, str], list[tuple[float, bool]]]:
    out: dict[tuple[str, str, str], list[tuple[float, bool]]] = {}
    for row in rows:
        if not row.latest_in_group:
            continue
        version, strategy = group_of(row.result)
        for o in row.outcomes:
            if o.got is None or o.confidence is None:
                continue  # a missed value has no confidence; some results give none
            out.setdefault((version, strategy, o.field), []).append(
                (float(o.confidence), o.outcome == "hit"))
    return out


def by_field(rows: Iterable[Scored], bins: int = BINS) -> list[FieldConfidence]:
    """One entry per (group, field) with scored values that carry a confidence."""
    out = []
    for (version, strategy, name), pairs in sorted(_pairs(rows).items()):
        right = sum(r for _, r in pairs)
        area = auroc(pairs)
        ci = _hanley_mcneil(area, right, len(pairs) - right) if area is not None else None
        out.append(FieldConfidence(version, strategy, name, right, len(pairs) - right,
                                   reliability(pairs, bins),
                                   expected_calibration_error(pairs, bins), area, ci))
    return out
