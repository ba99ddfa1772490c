"""Confidence statistics checked against the libraries that compute the same statistic: the
AUROC of confidence for right vs wrong values against scikit-learn's ``roc_auc_score`` and
scipy's Mann-Whitney U, the reliability table and ECE against scikit-learn's
``calibration_curve`` (uniform bins) weighted by numpy's bin counts; and a field's values
scored end to end carry their confidence into the per-field figures."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest
from scipy.stats import mannwhitneyu
from sklearn.calibration import calibration_curve
from sklearn.metrics import roc_auc_score

from evals.confidence import auroc, by_field, expected_calibration_error, reliability
from evals.scoring import Label, Result, score_all


def _pairs(seed: int, n: int = 300, ties: bool = False) -> list[tuple[float, bool]]:
    rng = np.random.default_rng(seed)
    confidence = rng.uniform(0, 1, n)
    if ties:
        confidence = np.round(confidence, 1) * 0.999 + 0.0005  # ties, never on a bin edge
    right = rng.uniform(0, 1, n) < confidence  # a calibrated model: right with probability c
    return [(float(c), bool(r)) for c, r in zip(confidence, right, strict=True)]


@pytest.mark.parametrize(("seed", "ties"), [(1, False), (2, True), (3, True)])
def test_auroc_is_scikit_learns_and_scipys(seed, ties):
    pairs = _pairs(seed, ties=ties)
    c = np.array([p for p, _ in pairs])
    y = np.array([r for _, r in pairs])
    assert auroc(pairs) == pytest.approx(roc_auc_score(y, c), abs=1e-12)
    u = mannwhitneyu(c[y], c[~y]).statistic
    assert auroc(pairs) == pytest.approx(u / (y.sum() * (~y).sum()), abs=1e-12)
    assert auroc([(0.3, True)]) is None  # no wrong value: nothing to rank


@pytest.mark.parametrize("seed", [4, 5])
def test_reliability_and_ece_are_scikit_learns_calibration_curve(seed):
    pairs = _pairs(seed)
    c = np.array([p for p, _ in pairs])
    y = np.array([r for _, r in pairs])
    share, mean = calibration_curve(y, c, n_bins=5, strategy="uniform")
    counts = np.histogram(c, bins=np.linspace(0, 1, 6))[0]
    table = [b for b in reliability(pairs, 5) if b.values]
    assert [b.values for b in table] == [int(k) for k in counts if k]
    assert [b.share_right for b in table] == pytest.approx(list(share))
    assert [b.mean_confidence for b in table] == pytest.approx(list(mean))
    ece = float(np.sum(counts[counts > 0] / len(c) * np.abs(share - mean)))
    assert expected_calibration_error(pairs, 5) == pytest.approx(ece)


def test_a_fields_scored_values_carry_their_confidence_to_its_figures():
    """Six documents: party right at 0.9 and 0.8, wrong at 0.2 (a spurious second party);
    term right at 0.3, wrong at 0.7. By hand: party AUROC 1.0 (every right above every wrong),
    term 0.0; party in bins 0.8-1.0 (12 right of 12) and 0.2-0.4 (0 of 6)."""
    at = datetime(2026, 5, 4, tzinfo=UTC)
    labels, results = [], []
    for k in range(6):
        doc = f"d{k}"
        labels.append(Label(doc, f"l{k}", "ann", at, {"party": ("Acme", "Beta"),
                                                      "term": ("2 years",)}))
        term, sure = ("2 years", 0.3) if k % 2 else ("3 years", 0.7)
        results.append(Result(doc, f"j{k}", "rules", "v1", at, values={
            "party": (("Acme", 1), ("Beta", 1), ("Gamma", 1)), "term": ((term, 2),)},
            confidences={"party": (0.9, 0.8, 0.2), "term": (sure,)}))
    found = {f.field: f for f in by_field(score_all(labels, results))}
    assert (found["party"].right, found["party"].wrong, found["party"].auroc) == (12, 6, 1.0)
    assert (found["term"].right, found["term"].wrong, found["term"].auroc) == (3, 3, 0.0)
    bins = {(round(b.low, 1), b.values, b.share_right) for b in found["party"].bins if b.values}
    assert bins == {(0.8, 12, 1.0), (0.2, 6, 0.0)}
    assert found["party"].ranks_errors and not found["term"].ranks_errors
    assert found["term"].why_not.startswith("too few values to tell (3 right, 3 wrong")
