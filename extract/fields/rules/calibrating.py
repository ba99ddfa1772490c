"""Calibrating the rules' confidences, and measuring the calibration honestly (training time,
scikit-learn).

Every chosen value of every Kleister NDA is predicted by a model that never saw its document nor
a near-duplicate of it (the grouped folds of ``training.cross_validate``), with its raw
probability and whether its token is in the gold (right or wrong). From those pairs:

- the reliability table (ten bins of confidence: values, mean confidence, share right) and the
  expected calibration error, ECE = sum over bins of (values in bin / all values) x |share right
  - mean confidence|, before calibration;
- the same after calibration, where each fold's values are calibrated by isotonic regressions
  (one per field) fitted on the other folds' values only, so no value calibrates itself;
- the confidence floor: the one of 0, 0.05, ..., 0.95 that gives the highest grouped
  out-of-fold micro F1 when calibrated values under it are dropped (ties: the lowest);
- the shipped curves, fitted on all the pairs, for the model fitted on all the documents.
"""

from __future__ import annotations

from collections.abc import Sequence

from extract.fields.rules.calibration import Calibration
from extract.fields.rules.kleister import KleisterDocument
from extract.fields.rules.scored import Scored

__all__ = ["Scored", "auroc", "calibrate", "ece", "out_of_fold_values", "reliability"]

BINS = 10
FLOORS = tuple(round(0.05 * i, 2) for i in range(20))


def out_of_fold_values(documents: Sequence[KleisterDocument], *, folds: int = 5,
                       seed: int = 0) -> tuple[list[Scored], int]:
    """Every chosen value, predicted by a model that saw neither its document nor any of its
    near-duplicates; and the number of gold tokens (for recall)."""
    from extract.fields.rules.training import evaluate

    evaluation = evaluate(documents, folds=folds, seed=seed)
    return evaluation.values, sum(len(d.gold) for d in documents)


def auroc(confidences: Sequence[float], rights: Sequence[bool]) -> float | None:
    """The chance that a right value has a higher confidence than a wrong one (ties count
    half): the Mann-Whitney U over both counts; None without both kinds."""
    right = sorted(c for c, r in zip(confidences, rights, strict=True) if r)
    wrong = sorted(c for c, r in zip(confidences, rights, strict=True) if not r)
    if not right or not wrong:
        return None
    import bisect

    wins = sum(bisect.bisect_left(wrong, c) + 0.5 * (bisect.bisect_right(wrong, c)
                                                      - bisect.bisect_left(wrong, c))
               for c in right)
    return wins / (len(right) * len(wrong))


def reliability(confidences: Sequence[float], rights: Sequence[bool],
                bins: int = BINS) -> list[dict]:
    """One row per confidence bin [k/bins, (k+1)/bins) (the last bin includes 1)."""
    rows = []
    for k in range(bins):
        low, high = k / bins, (k + 1) / bins
        inside = [(c, r) for c, r in zip(confidences, rights, strict=True)
                  if low <= c < high or (k == bins - 1 and c == 1.0)]
        rows.append({"low": round(low, 2), "high": round(high, 2), "values": len(inside),
                     "mean_confidence": sum(c for c, _ in inside) / len(inside) if inside
                     else None,
                     "share_right": sum(r for _, r in inside) / len(inside) if inside else None})
    return rows


def ece(confidences: Sequence[float], rights: Sequence[bool], bins: int = BINS) -> float:
    n = len(confidences)
    return sum(row["values"] / n * abs(row["share_right"] - row["mean_confidence"])
               for row in reliability(confidences, rights, bins) if row["values"]) if n else 0.0


def _isotonic(pairs: Sequence[Scored]) -> tuple[list[float], list[float]]:
    """The field's curve, kept within 1/(n+2) and (n+1)/(n+2) for its n values (Laplace's rule
    of succession): a handful of values all wrong at the low end (the term's, out of fold,
    2026-12-05) would otherwise report a value the model chose at confidence 0, a certainty
    that so few values cannot show."""
    from sklearn.isotonic import IsotonicRegression

    if len({p.right for p in pairs}) < 2:
        return [], []
    n = len(pairs)
    fitted = IsotonicRegression(y_min=1 / (n + 2), y_max=(n + 1) / (n + 2),
                                out_of_bounds="clip", increasing=True)
    fitted.fit([p.probability for p in pairs], [float(p.right) for p in pairs])
    return ([round(float(x), 6) for x in fitted.X_thresholds_],
            [round(float(y), 6) for y in fitted.y_thresholds_])


def _curves(pairs: Sequence[Scored]) -> dict[str, tuple[list[float], list[float]]]:
    return {name: _isotonic([p for p in pairs if p.field == name])
            for name in sorted({p.field for p in pairs})}


def _scores(kept: Sequence[bool], rights: Sequence[bool], expected: int) -> dict[str, float]:
    """Micro precision, recall and F1 of the values kept, against every gold token."""
    hits = sum(k and r for k, r in zip(kept, rights, strict=True))
    predicted = sum(kept)
    precision = hits / predicted if predicted else 0.0
    recall = hits / expected if expected else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1, "values": predicted}


def calibrate(pairs: Sequence[Scored], expected: int, model_version: str) -> Calibration:
    """The shipped calibration for ``model_version`` and, in ``details``, the figures: the
    reliability tables and ECE before and after (after: each fold calibrated by the others),
    F1 by floor and the chosen floor."""
    raw = [p.probability for p in pairs]
    rights = [p.right for p in pairs]
    after = [0.0] * len(pairs)
    for fold in sorted({p.fold for p in pairs}):
        curves = Calibration("", _curves([p for p in pairs if p.fold != fold]))
        for i, p in enumerate(pairs):
            if p.fold == fold:
                after[i] = curves.apply(p.field, p.probability)
    by_floor = {floor: _scores([c >= floor for c in after], rights, expected)
                for floor in FLOORS}
    best = max(v["f1"] for v in by_floor.values())
    chosen = min(f for f, v in by_floor.items() if v["f1"] == best)
    details = {"values": len(pairs), "gold_tokens": expected,
               "ece_before": ece(raw, rights), "ece_after": ece(after, rights),
               "reliability_before": reliability(raw, rights),
               "reliability_after": reliability(after, rights),
               "by_floor": {f"{k:.2f}": v for k, v in by_floor.items()},
               "floor": chosen}
    return Calibration(model_version, _curves(pairs), chosen, details)
