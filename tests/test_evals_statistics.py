"""The statistics checked against independent computations, on fixed data, so a wrong method
fails: the BCa interval against scipy's (and not a percentile one), Wilson's bounds by hand, the
comparison paired (an unpaired one differs on the case below), kappa undefined where it is 0/0."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from evals.bootstrap import figures, paired
from evals.kleister_metric import Score

RESAMPLES = 20000


def _scores(spec: list[tuple[int, int, int]]) -> list[Score]:
    return [Score(hits=h, predicted=p, expected=e) for h, p, e in spec]


def _micro_f1(hits, predicted, expected, axis=-1):
    return 2 * hits.sum(axis) / (predicted.sum(axis) + expected.sum(axis))


SKEWED = [(3, 3, 3)] * 34 + [(0, 3, 3)] * 3 + [(1, 3, 3)] * 3  # 40 documents, F1 0.875
MIXED = [(3, 3, 3)] * 20 + [(2, 3, 3)] * 10 + [(1, 2, 3)] * 6 + [(0, 1, 3)] * 4


@pytest.mark.parametrize("spec", [SKEWED, MIXED], ids=["skewed", "mixed"])
def test_the_f1_interval_is_scipys_bca(spec):
    data = np.array(spec, dtype=float).T
    scipy_bca = stats.bootstrap(tuple(data), _micro_f1, paired=True, vectorized=True,
                                n_resamples=RESAMPLES, method="BCa",
                                random_state=np.random.default_rng(2)).confidence_interval
    draws = np.random.default_rng(1).integers(0, len(spec), size=(RESAMPLES, len(spec)))
    low, high = figures(_scores(spec), draws).f1_ci
    assert low == pytest.approx(scipy_bca.low, abs=0.006)
    assert high == pytest.approx(scipy_bca.high, abs=0.006)


def test_a_percentile_interval_would_not_pass_the_check_above():
    """On the skewed case the percentile interval's low end is 0.025 above BCa's: the
    tolerance of the check above (0.006) tells them apart."""
    data = np.array(SKEWED, dtype=float).T
    found = {method: stats.bootstrap(tuple(data), _micro_f1, paired=True, vectorized=True,
                                     n_resamples=RESAMPLES, method=method,
                                     random_state=np.random.default_rng(2)).confidence_interval
             for method in ("BCa", "percentile")}
    assert found["percentile"].low - found["BCa"].low > 0.02


def _wilson_by_hand(p: float, n: int) -> tuple[float, float]:
    z = 1.959963984540054  # the normal 97.5th percentile
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def test_ten_perfect_documents_get_wilsons_bounds():
    """Every resample of ten perfect documents is 1.0: the interval is Wilson's for 10 of 10,
    1 / (1 + z²/10) = 0.722467 to 1, not a collapsed 1.0 to 1.0."""
    draws = np.random.default_rng(0).integers(0, 10, size=(500, 10))
    low, high = figures(_scores([(2, 2, 2)] * 10), draws).f1_ci
    assert low == pytest.approx(0.722467, abs=1e-6)
    assert low == pytest.approx(_wilson_by_hand(1.0, 10)[0], abs=1e-9)
    assert high == pytest.approx(1.0)


def test_wilson_for_a_half_over_twelve_documents():
    from evals.bootstrap import wilson

    low, high = wilson(0.5, 12)
    assert (low, high) == pytest.approx((0.253782, 0.746218), abs=1e-6)
    assert (low, high) == pytest.approx(_wilson_by_hand(0.5, 12), abs=1e-12)


# Thirty documents of three tokens: A finds 0 to 3 of them (widely varying), B finds one more
# on two documents in three. Paired, B is better on every draw; unpaired, the spread between
# documents swamps the difference and the interval crosses zero.
A = [(i % 4, 3, 3) for i in range(30)]
B = [(min(3, i % 4 + (1 if i % 3 else 0)), 3, 3) for i in range(30)]


def test_the_comparison_is_paired_by_document():
    c = paired(("v1", "rules"), ("v2", "rules"), _scores(A), _scores(B), resamples=2000,
               seed=13)
    assert c.difference == pytest.approx(59 / 90 - 43 / 90)
    low, high = c.difference_ci
    data = tuple(np.array(A + B, dtype=float).reshape(2, 30, 3).transpose(0, 2, 1).reshape(6, 30))
    scipy_paired = stats.bootstrap(
        data, lambda ha, pa, ea, hb, pb, eb, axis=-1: _micro_f1(hb, pb, eb, axis)
        - _micro_f1(ha, pa, ea, axis), paired=True, vectorized=True, n_resamples=RESAMPLES,
        method="BCa", random_state=np.random.default_rng(3)).confidence_interval
    assert low == pytest.approx(scipy_paired.low, abs=0.015)
    assert high == pytest.approx(scipy_paired.high, abs=0.015)
    assert low > 0.05


def test_an_unpaired_interval_on_the_same_case_crosses_zero():
    """What the check above rules out: draw the two groups' documents independently and the
    interval includes no difference at all."""
    ca, cb = np.array(A, dtype=float), np.array(B, dtype=float)
    rng = np.random.default_rng(5)
    first, second = rng.integers(0, 30, (4000, 30)), rng.integers(0, 30, (4000, 30))
    difference = _micro_f1(*cb[second].transpose(2, 0, 1)) - _micro_f1(
        *ca[first].transpose(2, 0, 1))
    low, high = np.quantile(difference, [0.025, 0.975])
    assert low < 0 < high


def test_kappa_is_undefined_when_nothing_varies():
    from evals.agreement import cohen_kappa

    assert cohen_kappa(["2y"] * 5, ["2y"] * 5) is None  # p_e = 1: 0/0
    # one item differs: p_o = 4/5, p_e = (5*4)/25 = 4/5, kappa = 0 (agreement at chance)
    assert cohen_kappa(["2y"] * 5, ["2y"] * 4 + ["1y"]) == pytest.approx(0.0)
