"""An unbiased overall F1 from a stratified sample: each stratum weighted by its share of traffic.

``doclake evals sample`` gives every stratum (format and size bucket, within a model version and
strategy) at least one document, so a rare stratum is over-represented among the labels; an
unweighted F1 over the labels is then the F1 of the sample, not of the traffic. Here each
labelled document of stratum ``s`` stands for ``N_s / n_s`` documents of the traffic (``N_s``
documents of the stratum processed, ``n_s`` labelled), and F1 is computed from the weighted
token counts: ``2 * sum(w * hits) / sum(w * (predicted + expected))``, the combined ratio
estimator of the micro F1 the traffic would score.

Strata of the traffic with no labelled document cannot be estimated: their share is reported as
uncovered, and the estimate is of the covered strata. Labelled documents of strata with no
traffic in the period weigh nothing, and are counted.

The interval resamples documents within each stratum (a stratified bootstrap) and is BCa, with
the acceleration from the leave-one-document-out jackknife; Wilson's interval over the labelled
documents when every resample gives the same figure, as for the unweighted figures.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from evals.bootstrap import bca, wilson
from evals.kleister_metric import Score

__all__ = ["Weighted", "weighted_f1"]


@dataclass(frozen=True)
class Weighted:
    f1: float | None
    """None when no labelled document is in a stratum with traffic."""
    f1_ci: tuple[float, float] | None
    labelled: int
    traffic: int
    covered_share: float
    """Share of the traffic in strata that have a labelled document."""
    unweighted_labels: int
    """Labelled documents of strata with no traffic in the period (weight 0)."""
    strata: tuple[tuple[Hashable, int, int, float | None], ...] = ()
    """(stratum, traffic documents, labelled documents, stratum F1) per stratum."""

    def to_dict(self) -> dict:
        return {"f1": self.f1, "f1_ci": list(self.f1_ci) if self.f1_ci else None,
                "labelled": self.labelled, "traffic": self.traffic,
                "covered_share": self.covered_share, "unweighted_labels": self.unweighted_labels,
                "strata": [{"stratum": list(s) if isinstance(s, tuple) else s, "traffic": n,
                            "labelled": k, "f1": f} for s, n, k, f in self.strata]}


def _f1(hits: np.ndarray, tokens: np.ndarray) -> np.ndarray:
    """2H / (P + E), with the metric's convention that nothing predicted of nothing is 1."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(tokens > 0, 2 * hits / np.where(tokens > 0, tokens, 1), 1.0)


def weighted_f1(rows: Sequence[tuple[Hashable, Score]], traffic: Mapping[Hashable, int], *,
                resamples: int = 1000, seed: int = 13) -> Weighted:
    """``rows``: (stratum, a labelled document's score); ``traffic``: documents per stratum."""
    by_stratum: dict[Hashable, list[Score]] = {}
    for stratum, score in rows:
        by_stratum.setdefault(stratum, []).append(score)
    total = sum(traffic.values())
    covered = {s: v for s, v in by_stratum.items() if traffic.get(s, 0) > 0}
    strata = tuple((s, traffic.get(s, 0), len(by_stratum.get(s, ())),
                    sum(by_stratum[s], Score()).f1 if s in by_stratum else None)
                   for s in sorted(set(traffic) | set(by_stratum), key=repr))
    unweighted = sum(len(v) for s, v in by_stratum.items() if s not in covered)
    share = sum(traffic[s] for s in covered) / total if total else 0.0
    labelled = sum(len(v) for v in covered.values())
    if not covered:
        return Weighted(None, None, labelled, total, share, unweighted, strata)
    keys = sorted(covered, key=repr)
    counts = [np.array([[s.hits, s.predicted + s.expected] for s in covered[k]], dtype=float)
              for k in keys]
    weights = np.array([traffic[k] / len(covered[k]) for k in keys])
    sums = np.array([c.sum(axis=0) for c in counts])  # (strata, 2)
    estimate = float(_f1(*(weights @ sums)))
    ci = None
    if resamples > 0 and labelled >= 2:
        rng = np.random.default_rng(seed)
        boot = np.zeros((resamples, 2))
        for w, c in zip(weights, counts, strict=True):
            draws = rng.integers(0, len(c), size=(resamples, len(c)))
            boot += w * c[draws].sum(axis=1)
        jack = []
        for k, c in enumerate(counts):
            for i in range(len(c)):
                rest = sums.copy()
                w = weights.copy()
                if len(c) == 1:
                    w[k] = 0.0
                else:
                    rest[k] = sums[k] - c[i]
                    w[k] = traffic[keys[k]] / (len(c) - 1)
                jack.append(float(_f1(*(w @ rest))))
        found = bca(estimate, _f1(*boot.T), np.array(jack))
        ci = wilson(estimate, labelled) if found is None or found[0] == found[1] else (
            min(found[0], estimate), max(found[1], estimate))
    return Weighted(estimate, ci, labelled, total, share, unweighted, strata)
