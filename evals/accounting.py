"""Every label accounted for: which labelled documents a run scored, and why the others were not.

A figure that silently drops labels misleads: 30 labels behind "25 labelled documents" leaves
the team guessing. So each labelled document the run did not score is listed with its reason,
and a not-applicable result whose label is empty (the document is not of the schema's kind and
the labeller found nothing) is a *correct negative*, counted as such, never as a failure:

- ``stale``: the label is of a version the document no longer has (``scoring.split_stale``);
- ``failed``: its latest result in the window is an infrastructure failure (the job failed: a
  corrupt or encrypted file, no API key): nothing the model did can be scored;
- ``no_result``: no result of the labelled version was published in the window;
- ``correct_negative``: not applicable and labelled empty: nothing to score, right.

``coverage`` counts the same per strategy under names that say what they count.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from evals.scoring import Label, Result, Scored

__all__ = ["REASONS", "Unscored", "correct_negative", "coverage", "unscored",
           "valued_documents"]

REASONS = ("stale", "failed", "no_result", "correct_negative")


@dataclass(frozen=True)
class Unscored:
    document_id: str
    label_id: str
    reason: str
    """One of ``REASONS``."""
    detail: str = ""
    strategy: str | None = None

    def to_dict(self) -> dict:
        return {"document_id": self.document_id, "label_id": self.label_id,
                "reason": self.reason, "detail": self.detail, "strategy": self.strategy}


def _empty(label: Label) -> bool:
    return not any(label.values.values())


def correct_negative(label: Label, result: Result) -> bool:
    """The result says the schema does not apply, and the label has no value at all."""
    return result.status == "not_applicable" and _empty(label)


def valued_documents(scored: Iterable[Scored], group: tuple[str, str],
                     field: str | None = None) -> int:
    """Documents of a group (latest result each) with a value to score, in ``field`` or any."""
    count = 0
    for row in scored:
        if not row.latest_in_group or (row.result.model_version or "", row.result.strategy
                                       ) != group:
            continue
        score = row.overall if field is None else row.fields.get(field)
        count += score is not None and score.expected + score.predicted > 0
    return count


def _in_window(result: Result, since: datetime | None, until: datetime | None) -> bool:
    return (since is None or result.published_at >= since) and (
        until is None or result.published_at < until)


def _latest(labels: Iterable[Label], results: Iterable[Result], since: datetime | None,
            until: datetime | None) -> dict[tuple[str, str], tuple[Label, Result]]:
    """(strategy, document) -> (label, the latest result of the labelled version in window)."""
    labelled = {label.document_id: label for label in labels}
    latest: dict[tuple[str, str], tuple[Label, Result]] = {}
    for r in sorted(results, key=lambda r: (r.published_at, r.job_id)):
        label = labelled.get(r.document_id)
        if label is None or not _in_window(r, since, until) or (
                label.sha256 and r.sha256 and r.sha256 != label.sha256):
            continue
        latest[(r.strategy, r.document_id)] = (label, r)
    return latest


def unscored(labels: Sequence[Label], stale: Sequence[Label], results: Sequence[Result], *,
             since: datetime | None = None, until: datetime | None = None) -> list[Unscored]:
    """Every labelled document (or document and strategy) that no figure scores, with why."""
    out = [Unscored(x.document_id, x.label_id, "stale",
                    f"labelled for sha256 {x.sha256}; the document has a newer version")
           for x in stale]
    latest = _latest(labels, results, since, until)
    seen = {document_id for _, document_id in latest}
    for label in labels:
        if label.document_id not in seen:
            out.append(Unscored(label.document_id, label.label_id, "no_result",
                                "no result of the labelled version in the window"))
    for (strategy, document_id), (label, r) in sorted(latest.items()):
        if r.infrastructure_failure:
            out.append(Unscored(document_id, label.label_id, "failed",
                                r.failure_reason or "failed", strategy))
        elif correct_negative(label, r):
            out.append(Unscored(document_id, label.label_id, "correct_negative",
                                "not applicable and labelled empty", strategy))
    return sorted(out, key=lambda u: (REASONS.index(u.reason), u.document_id, u.strategy or ""))


def coverage(labels: Iterable[Label], results: Iterable[Result], *,
             since: datetime | None = None, until: datetime | None = None) -> dict[str, dict]:
    """Per strategy, over labelled documents with a result of their version in the window."""
    out: dict[str, dict] = {}
    for (strategy, _), (label, r) in sorted(_latest(labels, results, since, until).items()):
        entry = out.setdefault(strategy, {
            "labelled_documents_with_result": 0, "scored": 0, "not_scored_failed": 0,
            "scored_failed_extractions": 0, "correct_negatives": 0,
            "not_applicable_but_labelled_values": 0, "not_scored_reasons": {}})
        entry["labelled_documents_with_result"] += 1
        if r.infrastructure_failure:
            entry["not_scored_failed"] += 1
            reasons = entry["not_scored_reasons"]
            reasons[r.failure_reason] = reasons.get(r.failure_reason, 0) + 1
            continue
        entry["scored"] += 1
        if r.status == "failed":
            entry["scored_failed_extractions"] += 1  # the model's failure: an empty prediction
        elif r.status == "not_applicable":
            key = "correct_negatives" if _empty(label) else "not_applicable_but_labelled_values"
            entry[key] += 1
    for entry in out.values():
        total = entry["labelled_documents_with_result"]
        entry["scored_share"] = entry["scored"] / total if total else None
    return out
