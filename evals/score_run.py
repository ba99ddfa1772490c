"""``doclake evals score``: score the window, write the run to the lake, return the figures.

The run's events (``eval_run``, ``eval_score`` per group and per document, ``eval_outcome`` per
token) share one ``eval_run_id`` (a UUIDv7, so runs sort by time), which is what lets the weekly
report and an analyst's SQL find a run's failures after the fact.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from uuid6 import uuid7

from evals.accounting import Unscored, coverage, unscored, valued_documents
from evals.bootstrap import (
    INTERVAL,
    MIN_DOCUMENTS,
    RESAMPLES,
    SEED,
    Comparison,
    Figures,
    GroupFigures,
    compare,
    group_figures,
)
from evals.lakeio import (
    read_call_costs,
    read_current_versions,
    read_labels,
    read_results,
    write_events,
)
from evals.lenient import lenient_dict
from evals.scoring import Label, Normalizer, Scored, group_of, score_all, split_stale
from lake.events import EvalOutcomeRecorded, EvalRunCompleted, EvalScoreComputed, Event

__all__ = ["ScoreRun", "TrainingSet", "run_scoring", "run_warnings", "score_lake", "with_values",
           "write_run"]


@dataclass(frozen=True)
class TrainingSet:
    """The documents a shipped model was fitted on: scoring it on them says nothing about it.
    ``version_prefix`` matches the groups it produced (e.g. ``rules-lr1-254docs-44ca855c``)."""

    version_prefix: str
    sha256s: frozenset[str]
    names: frozenset[str] = frozenset()
    description: str = ""
    document_ids: frozenset[str] = frozenset()
    """Documents seen, by id, for those whose version is not known."""
    strategies: frozenset[str] = frozenset()
    """Only groups of these strategies (empty: any); a fine-tuning set teaches the LLMs."""


@dataclass(frozen=True)
class ScoreRun:
    eval_run_id: str
    since: datetime | None
    until: datetime | None
    labels: int
    scored: tuple[Scored, ...]
    groups: tuple[GroupFigures, ...]
    comparisons: tuple[Comparison, ...]
    resamples: int
    seed: int
    stale: tuple[Label, ...] = ()
    coverage: dict | None = None
    warnings: tuple[str, ...] = ()
    unscored: tuple[Unscored, ...] = ()
    """Every labelled document no figure scores, with why (``evals.accounting``)."""

    @property
    def overall(self) -> Figures | None:
        """The headline: the one group's figures, None when there are several (pooling them
        would count a document scored by two strategies twice; read ``groups``)."""
        return self.groups[0].overall if len(self.groups) == 1 else None

    def to_dict(self) -> dict:
        """The JSON of ``doclake evals score --format json``: figures under their own names."""
        single = self.groups[0] if len(self.groups) == 1 else None
        return {
            "eval_run_id": self.eval_run_id,
            "since": self.since.isoformat() if self.since else None,
            "until": self.until.isoformat() if self.until else None,
            "labelled_documents": self.labels,
            "scored_documents": len({s.label.document_id for s in self.scored}),
            "scored_results": len(self.scored),
            "stale_labels": len(self.stale),
            "stale": [{"document_id": x.document_id, "label_id": x.label_id,
                       "labelled_for_sha256": x.sha256, "labeller": x.labeller}
                      for x in self.stale],
            "overall": single.overall.to_dict() if single else None,
            "fields": {k: v.to_dict() for k, v in sorted(single.fields.items())} if single
            else {},
            "groups": [{**g.to_dict(), "documents_with_values": valued_documents(
                self.scored, (g.model_version, g.strategy)),
                "lenient": lenient_dict(self.scored, (g.model_version, g.strategy))}
                for g in self.groups],
            "comparisons": [c.to_dict() for c in self.comparisons],
            "coverage": self.coverage or {},
            "not_scored": [u.to_dict() for u in self.unscored],
            "warnings": list(self.warnings),
            "bootstrap": {"resamples": self.resamples, "seed": self.seed, "unit": "document",
                          "interval": INTERVAL},
        }


def _with_costs(groups: Sequence[GroupFigures], scored: Sequence[Scored],
                costs: Mapping[str, dict]) -> list[GroupFigures]:
    """Each group's mean model cost and extraction time per scored document, beside its F1
    (cost from ``model_calls`` of the result's job, for a result that spent tokens; the rules
    strategy spends none)."""
    out = []
    for g in groups:
        rows = [s for s in scored if s.latest_in_group and group_of(s.result) == (
            g.model_version, g.strategy)]
        spent = [float(costs.get(s.result.job_id, {}).get("cost_usd") or 0.0)
                 if s.result.tokens else 0.0 for s in rows]
        times = [s.result.processing_ms for s in rows if s.result.processing_ms is not None]
        details = {**g.details,
                   "cost_usd_per_document": sum(spent) / len(rows) if rows else None,
                   "processing_ms_per_document": sum(times) / len(times) if times else None}
        out.append(dataclasses.replace(g, details=details))
    return out


def run_warnings(groups: Sequence[GroupFigures], scored: Sequence[Scored], stale: Sequence[Label],
              training_sets: Sequence[TrainingSet]) -> list[str]:
    out = []
    for g in groups:
        valued = with_values(scored, (g.model_version, g.strategy))
        if valued < MIN_DOCUMENTS:
            out.append(f"{g.strategy} {g.model_version}: {valued} documents with values to "
                       f"score (of {g.overall.documents} scored), fewer than {MIN_DOCUMENTS}; "
                       "the interval is wide and a difference this small decides nothing")
        for ts in training_sets:
            if not g.model_version.startswith(ts.version_prefix) or (
                    ts.strategies and g.strategy not in ts.strategies):
                continue
            inside = {s.label.document_id for s in scored if group_of(s.result) == (
                g.model_version, g.strategy) and s.latest_in_group and (
                (s.result.sha256 or s.label.sha256) in ts.sha256s
                or (not (s.result.sha256 or s.label.sha256)
                    and s.label.document_id in ts.document_ids))}
            if inside:
                out.append(f"{g.strategy} {g.model_version}: {len(inside)} of "
                           f"{g.overall.documents} scored documents are in the model's training "
                           f"set{' (' + ts.description + ')' if ts.description else ''}: "
                           "in-sample, this figure says nothing about unseen documents")
    if stale:
        out.append(f"{len(stale)} stale labels: their document has a newer version than the one "
                   "labelled; not scored (label the new content, or see --format json)")
    return out


def with_values(scored: Sequence[Scored], group: tuple[str, str]) -> int:
    """Documents of a group that carry a value to score (labelled or predicted): a correct
    negative, or an empty label met by an empty answer, holds no token and decides nothing."""
    return valued_documents(scored, group)


def score_lake(lake_uri: str, *, since: datetime | None, until: datetime | None,
               normalizers: Mapping[str, Normalizer] | None = None,
               resamples: int = RESAMPLES, seed: int = SEED,
               training_sets: Sequence[TrainingSet] = ()) -> ScoreRun:
    """Score without writing anything (the report and ``--dry-run`` use it)."""
    labels, stale = split_stale(read_labels(lake_uri), read_current_versions(lake_uri))
    results = read_results(lake_uri, [label.document_id for label in labels])
    scored = score_all(labels, results, normalizers=normalizers, since=since, until=until)
    groups = _with_costs(group_figures(scored, resamples=resamples, seed=seed), scored,
                         read_call_costs(lake_uri, {s.result.job_id for s in scored}))
    keys = [(g.model_version, g.strategy) for g in groups]
    comparisons = tuple(c for a, b in itertools.combinations(keys, 2)
                        if (c := compare(scored, a, b, resamples=resamples, seed=seed)).documents)
    return ScoreRun(str(uuid7()), since, until, len(labels), tuple(scored), tuple(groups),
                    comparisons, resamples, seed, tuple(stale),
                    coverage(labels, results, since=since, until=until),
                    tuple(run_warnings(groups, scored, stale, training_sets)),
                    tuple(unscored(labels, stale, results, since=since, until=until)))


def run_events(run: ScoreRun, now: datetime) -> list[Event]:
    """Everything a run writes to the lake."""
    rid = run.eval_run_id
    o = run.overall.score if run.overall else None  # no pooled figure across groups
    events: list[Event] = [EvalRunCompleted(
        eval_run_id=rid, since=run.since, until=run.until,
        documents=len({s.label.document_id for s in run.scored}), scored_results=len(run.scored),
        groups=len(run.groups), precision=o.precision if o else None,
        recall=o.recall if o else None, f1=o.f1 if o else None, resamples=run.resamples,
        seed=run.seed, occurred_at=now)]
    for group in run.groups:
        for name, figures in [("overall", group.overall), *group.fields.items()]:
            events.append(_score_event(rid, "group", group.model_version, group.strategy, name,
                                       figures, now))
    for row in run.scored:
        version, strategy = group_of(row.result)
        ids = {"document_id": row.result.document_id, "job_id": row.result.job_id}
        for name, score in [("overall", row.overall), *row.fields.items()]:
            events.append(EvalScoreComputed(
                **ids, eval_run_id=rid, level="document", model_version=version,
                strategy=strategy, field=name, precision=score.precision, recall=score.recall,
                f1=score.f1, hits=score.hits, predicted=score.predicted, expected=score.expected,
                label_id=row.label.label_id, as_labelled=row.as_labelled, occurred_at=now))
        events += [EvalOutcomeRecorded(
            **ids, eval_run_id=rid, label_id=row.label.label_id, strategy=strategy,
            model_version=version, field=out.field, outcome=out.outcome, expected=out.expected,
            got=out.got, outcome_index=out.index, page_number=out.page_number,
            as_labelled=row.as_labelled, occurred_at=now) for out in row.outcomes]
    return events


def _score_event(rid: str, level: str, version: str, strategy: str, name: str,
                 figures: Figures, now: datetime) -> EvalScoreComputed:
    s = figures.score
    p, r, f = figures.precision_ci, figures.recall_ci, figures.f1_ci
    return EvalScoreComputed(
        eval_run_id=rid, level=level, model_version=version, strategy=strategy, field=name,
        precision=s.precision, recall=s.recall, f1=s.f1, hits=s.hits, predicted=s.predicted,
        expected=s.expected, scored_documents=figures.documents,
        precision_low=p[0] if p else None, precision_high=p[1] if p else None,
        recall_low=r[0] if r else None, recall_high=r[1] if r else None,
        f1_low=f[0] if f else None, f1_high=f[1] if f else None, occurred_at=now)


def run_scoring(lake_uri: str, *, since: datetime | None, until: datetime | None, now: datetime,
                normalizers: Mapping[str, Normalizer] | None = None,
                resamples: int = RESAMPLES, seed: int = SEED,
                training_sets: Sequence[TrainingSet] = ()) -> ScoreRun:
    """Score and write the run to the lake (eval_runs, eval_scores, eval_outcomes)."""
    run = score_lake(lake_uri, since=since, until=until, normalizers=normalizers,
                     resamples=resamples, seed=seed, training_sets=training_sets)
    write_run(lake_uri, run, now)
    return run


def write_run(lake_uri: str, run: ScoreRun, now: datetime) -> None:
    """Write a scored run to the lake (eval_runs, eval_scores, eval_outcomes)."""
    write_events(lake_uri, run_events(run, now))
