"""The week's traffic by stratum and group, and the weighted F1 it gives each group.

The labelled sample over-represents rare strata, so the traffic-weighted estimate
(``evals.weighting``) needs, for each group, how many documents of each stratum were processed
in the week. Every document processed that week counts, whatever its result:

- a stratum is (applicability, detected format) (``evals.sample.stratum_of``): the sample's own
  design; a document whose job failed before any model saw it is its own ``failed`` stratum,
  counted in the traffic, never estimated (its labels cannot be scored), so ``covered`` says how
  much of the traffic the estimate speaks for;
- a result without a model version (not applicable, failed) counts in the group of the same
  strategy's nearest versioned result in time, as ``scoring.with_versions`` scores it there;
- documents are placed in the week they were processed (their version's registration), and so
  are the labelled documents that estimate them: the labelling date moves nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from evals.sample import stratum_of
from evals.scoring import Scored, group_of
from evals.weeks import Week
from evals.weighting import Weighted, weighted_f1

__all__ = ["stratum_of_result", "traffic_by_group", "weighted_by_group"]


def stratum_of_result(status: str | None, failure_reason: str | None, fact: Mapping
                      ) -> tuple[str, str]:
    return stratum_of({"status": status, "failure_reason": failure_reason,
                       "detected_format": fact.get("detected_format")})


def _nearest_version(row: Mapping, versioned: Mapping[str, list[Mapping]]) -> str:
    peers = versioned.get(row["strategy"]) or []
    if not peers:
        return ""
    near = min(peers, key=lambda v: abs((v["published_at"] - row["published_at"]
                                         ).total_seconds()))
    return near["model_version"]


def traffic_by_group(week: Week, traffic: Sequence[Mapping], facts: Mapping[str, Mapping]
                     ) -> dict[tuple[str, str], Counter]:
    """(model_version, strategy) -> documents processed in ``week`` per stratum, each document
    counted once per strategy, by its latest result."""
    versioned: dict[str, list[Mapping]] = {}
    for row in traffic:
        if row.get("model_version"):
            versioned.setdefault(row["strategy"], []).append(row)
    latest: dict[tuple[str, str], Mapping] = {}
    for row in sorted(traffic, key=lambda r: r["published_at"]):
        fact = facts.get(row["job_id"])
        if fact is None or not week.holds(fact["registered_at"]):
            continue
        latest[(row["document_id"], row["strategy"])] = row
    out: dict[tuple[str, str], Counter] = {}
    for (_, strategy), row in latest.items():
        version = row.get("model_version") or _nearest_version(row, versioned)
        stratum = stratum_of_result(row.get("status"), row.get("failure_reason"),
                                    facts[row["job_id"]])
        out.setdefault((version, strategy), Counter())[stratum] += 1
    return out


def weighted_by_group(rows: Sequence[Scored], traffic: Mapping[tuple[str, str], Counter],
                      facts: Mapping[str, Mapping], *, resamples: int, seed: int
                      ) -> dict[tuple[str, str], Weighted]:
    """Each group's weighted F1 from its labelled documents (``rows``: those processed in the
    week) and the week's traffic; a group with traffic and no label has an estimate of None."""
    out = {}
    keys = {group_of(r.result) for r in rows if r.latest_in_group} | set(traffic)
    for key in sorted(keys):
        sample = [(stratum_of_result(r.result.status, r.result.failure_reason,
                                     facts.get(r.result.job_id, {})), r.overall)
                  for r in rows if r.latest_in_group and group_of(r.result) == key]
        out[key] = weighted_f1(sample, traffic.get(key, Counter()), resamples=resamples,
                               seed=seed)
    return out
