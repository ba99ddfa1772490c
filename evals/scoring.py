"""Scoring live traffic against labels: which results meet which label, and how each token fared.

Pure functions over plain records (``evals.lakeio`` reads them from the lake), so every rule
here is tested by hand-computed cases. The figures themselves come from
``evals.kleister_metric`` (the benchmark's semantics: upper-cased exact tokens, each gold token
matched once, empty sets score 1.0); this module decides what is compared with what.

Which results are scored, for each labelled document (its latest, unsuperseded label):

- the latest result of every (model_version, strategy) group published in the window: these
  rows (``latest_in_group``) make the group figures, so a model change shows as a difference
  on the same documents;
- the result the document had when it was labelled (the latest published at or before
  ``labelled_at``), if in the window (``as_labelled``): a label imported today scores what the
  labeller saw, even when a newer result has arrived since.

Tokens are ``field=value``. A value labelled in Kleister form (``value_format`` kleister) is a
token already; any other value, labelled or extracted, goes through the schema's normaliser
(for the NDA schema infra passes the Kleister formatting: 'Nike, Inc.' -> 'Nike_Inc.').
Predicted values of fields the label does not cover are not scored: a partial label says
nothing about them.

Versions and failures:

- a label carries the SHA-256 of the document version it was written for; it meets only
  results of that version, and once the document has a newer version the label is *stale*
  (``split_stale``): not scored, reported, until someone labels the new content;
- a failed result belongs to its strategy's group (its ``model_version``; an older failure
  without one takes the version of the same strategy's nearest result, ``with_versions``): a
  model failure (invalid output, a blocked document, a dead letter) is an empty prediction there;
- an infrastructure failure (``INFRASTRUCTURE_FAILURES``: no API key, an unknown schema, a job
  that failed before its text was read) says nothing of the model: it is left out of the
  figures and listed with its reason (``evals.accounting``).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from evals.kleister_metric import Score, score_document

__all__ = ["INFRASTRUCTURE_FAILURES", "Label", "Result", "Outcome", "Scored", "Normalizer",
           "plain_value", "select", "score_pair", "score_all", "group_of",
           "split_stale", "with_versions"]

INFRASTRUCTURE_FAILURES = frozenset({
    "strategy_unavailable", "schema_unavailable", "unsupported_schema", "job_failed",
    "missing_pages", "model_missing", "unknown_job"})
"""Failure reasons that are not the model's doing: listed as not scored, never as quality."""

Normalizer = Callable[[str, str], str]
"""(field, value) -> the value as it appears in a ``field=value`` token."""


def plain_value(field_name: str, value: str) -> str:
    """The default for any schema: whitespace runs become '_' so a value is one token."""
    return "_".join(value.split())


@dataclass(frozen=True)
class Label:
    document_id: str
    label_id: str
    labeller: str
    labelled_at: datetime
    values: Mapping[str, tuple[str, ...]]  # every labelled field; () = none
    value_format: str = "text"
    sha256: str | None = None
    """The document version the label was written for (None: an old label, any version)."""
    provenance: str | None = None
    """blind, pre-filled, imported or reviewer (``evals.labels.PROVENANCES``)."""


@dataclass(frozen=True)
class Result:
    document_id: str
    job_id: str
    strategy: str
    model_version: str | None
    published_at: datetime
    status: str = "succeeded"
    schema_name: str | None = None
    values: Mapping[str, tuple[tuple[str, int | None], ...]] = field(default_factory=dict)
    """field -> ((value, page_number), ...) in value_index order."""
    failure_reason: str | None = None
    sha256: str | None = None
    """The document version the result was extracted from."""
    processing_ms: float | None = None
    tokens: int = 0
    """Model tokens the result spent (0: no model was called, as with rules)."""
    confidences: Mapping[str, tuple[float | None, ...]] = field(default_factory=dict)
    """field -> each value's confidence (``result_fields.confidence``), in value_index order."""

    @property
    def infrastructure_failure(self) -> bool:
        return self.status != "succeeded" and self.failure_reason in INFRASTRUCTURE_FAILURES


@dataclass(frozen=True)
class Outcome:
    """One token's fate: hit, wrong (gold and a different prediction), missed, spurious."""

    field: str
    outcome: str
    expected: str | None
    got: str | None
    index: int
    page_number: int | None = None
    confidence: float | None = None
    """The predicted value's confidence, as the result carried it (None: none given)."""


@dataclass(frozen=True)
class Scored:
    label: Label
    result: Result
    as_labelled: bool
    latest_in_group: bool
    fields: dict[str, Score]  # lower-case field name -> counts
    outcomes: tuple[Outcome, ...]

    @property
    def overall(self) -> Score:
        return sum(self.fields.values(), Score())


def group_of(result: Result) -> tuple[str, str]:
    """(model_version, strategy): the unit figures are reported by."""
    return (result.model_version or "", result.strategy)


def split_stale(labels: Iterable[Label], current: Mapping[str, str]
                ) -> tuple[list[Label], list[Label]]:
    """(labels of the document's current version, stale labels): ``current`` maps a document
    id to the SHA-256 of its latest version. A label without a SHA-256 is kept (it predates
    versioned labels) unless the document also has a label of its current version; one label
    per document is fresh, the latest."""
    fresh: dict[str, Label] = {}
    stale = []
    for label in sorted(labels, key=lambda x: (x.sha256 is not None, x.labelled_at, x.label_id)):
        now = current.get(label.document_id)
        if label.sha256 and now and label.sha256 != now:
            stale.append(label)
        else:
            fresh[label.document_id] = label
    return sorted(fresh.values(), key=lambda x: x.document_id), stale


def with_versions(results: Sequence[Result]) -> list[Result]:
    """Failed results without a version take the version of the same strategy's nearest
    result in time (of the same schema), so a model's failures stay in its group."""
    versioned = sorted((r for r in results if r.model_version), key=lambda r: r.published_at)
    out = []
    for r in results:
        if r.model_version or r.status == "succeeded" or r.infrastructure_failure:
            out.append(r)
            continue
        peers = [v for v in versioned if v.strategy == r.strategy
                 and v.schema_name == r.schema_name]
        if peers:
            near = min(peers, key=lambda v: abs((v.published_at - r.published_at).total_seconds()))
            r = dataclasses.replace(r, model_version=near.model_version)
        out.append(r)
    return out


def select(labels: Iterable[Label], results: Iterable[Result], *, since: datetime | None = None,
           until: datetime | None = None) -> list[tuple[Label, Result, bool, bool]]:
    """(label, result, as_labelled, latest_in_group) for every pair to score, ordered by
    document then publication. A label meets only results of the version it was written for;
    infrastructure failures meet none."""
    by_document: dict[str, list[Result]] = {}
    for result in results:
        if not result.infrastructure_failure:
            by_document.setdefault(result.document_id, []).append(result)
    pairs = []
    for label in sorted(labels, key=lambda item: item.document_id):
        history = sorted((r for r in by_document.get(label.document_id, [])
                          if not (label.sha256 and r.sha256 and r.sha256 != label.sha256)),
                         key=lambda r: (r.published_at, r.job_id, r.strategy))
        before = [r for r in history if r.published_at <= label.labelled_at]
        had = before[-1] if before else None
        latest: dict[tuple[str, str], Result] = {}
        for result in history:
            if (since is None or result.published_at >= since) and (
                    until is None or result.published_at < until):
                latest[group_of(result)] = result
        chosen = set(map(id, latest.values()))
        for result in history:
            in_window = (since is None or result.published_at >= since) and (
                until is None or result.published_at < until)
            is_had = result is had and in_window
            if id(result) in chosen or is_had:
                pairs.append((label, result, is_had, id(result) in chosen))
    return pairs


def _gold_token(label: Label, name: str, value: str, normalize: Normalizer) -> str:
    return f"{name}={value if label.value_format == 'kleister' else normalize(name, value)}"


def score_pair(label: Label, result: Result, normalize: Normalizer = plain_value,
               *, as_labelled: bool = False, latest_in_group: bool = True) -> Scored:
    """Per-field counts and token outcomes of one result against one label."""
    fields: dict[str, Score] = {}
    outcomes: list[Outcome] = []
    for name in sorted(label.values):
        gold_values = label.values[name]
        predicted = result.values.get(name, ()) if result.status == "succeeded" else ()
        gold = [_gold_token(label, name, v, normalize) for v in gold_values]
        pred = [f"{name}={normalize(name, v)}" for v, _ in predicted]
        counts = score_document(pred, gold).get(name.upper(), Score())
        fields[name] = counts
        sure = result.confidences.get(name, ())
        predicted = tuple((v, p, sure[i] if i < len(sure) else None)
                          for i, (v, p) in enumerate(predicted))
        outcomes += _outcomes(name, gold_values, gold, predicted, pred)
    return Scored(label, result, as_labelled, latest_in_group, fields, tuple(outcomes))


def _outcomes(name: str, gold_values: Sequence[str], gold: Sequence[str],
              predicted: Sequence[tuple[str, int | None, float | None]],
              pred: Sequence[str]) -> list[Outcome]:
    """Hits first, then the unmatched gold and predictions paired in order as 'wrong', the
    rest 'missed' or 'spurious'. Matching is the metric's: upper-cased, each gold token once."""
    unmatched_gold = Counter(t.upper() for t in gold)
    hits, spurious = [], []
    for (value, page, sure), token in zip(predicted, pred, strict=True):
        if unmatched_gold[token.upper()] > 0:
            unmatched_gold[token.upper()] -= 1
            hits.append((value, page, token.upper(), sure))
        else:
            spurious.append((value, page, sure))
    taken = Counter(token for _, _, token, _ in hits)
    missed = []
    for value, token in zip(gold_values, gold, strict=True):
        if taken[token.upper()] > 0:
            taken[token.upper()] -= 1
        else:
            missed.append(value)
    gold_by_token = {}
    for value, token in zip(gold_values, gold, strict=True):
        gold_by_token.setdefault(token.upper(), value)
    out = [Outcome(name, "hit", gold_by_token[token], value, 0, page, sure)
           for value, page, token, sure in hits]
    for k in range(max(len(missed), len(spurious))):
        expected = missed[k] if k < len(missed) else None
        got, page, sure = spurious[k] if k < len(spurious) else (None, None, None)
        kind = "wrong" if expected is not None and got is not None else (
            "missed" if got is None else "spurious")
        out.append(Outcome(name, kind, expected, got, 0, page, sure))
    return [dataclasses.replace(o, index=i) for i, o in enumerate(out)]


def score_all(labels: Iterable[Label], results: Iterable[Result], *,
              normalizers: Mapping[str, Normalizer] | None = None,
              since: datetime | None = None, until: datetime | None = None) -> list[Scored]:
    """Every selected (label, result) pair, scored; ``normalizers`` by schema name."""
    normalizers = normalizers or {}
    return [score_pair(label, result, normalizers.get(result.schema_name or "", plain_value),
                       as_labelled=had, latest_in_group=latest)
            for label, result, had, latest in select(labels, with_versions(list(results)),
                                                     since=since, until=until)]
