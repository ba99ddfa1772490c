"""Strict and lenient F1 per field, with the comparison rule of each printed beside them.

The strict figure is the benchmark's (``evals.kleister_metric``: upper-cased ``field=value``
tokens, values in the schema's normal form, so "Nike, Inc." is ``Nike_Inc.``). It counts a
spelling slip as a wrong answer: "Nike Inc" for "NIKE, Inc." scores nothing. The lenient figure
compares values under a stated normalisation, so the gap between the two is the share of misses
that are spelling, and what stays missing under lenient comparison is a wrong answer:

- names (``NAME_FIELDS``: the NDA's parties): case, punctuation, spacing and a final corporate
  suffix (Inc., Corp., Co., Ltd., LLC, L.P., LLP, PLC, N.A., S.A., AG, GmbH...) ignored, "&"
  read as "and";
- places and any other text: case, punctuation and spacing ignored;
- dates, and values with a normal form (a term as '2 years'): exact after normalisation; the
  normal form already is one, so lenient and strict agree.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from evals.kleister_metric import Score
from evals.scoring import Scored, group_of

__all__ = ["NAME_FIELDS", "FieldRule", "lenient_dict", "lenient_key", "lenient_scores",
           "rule_of"]

NAME_FIELDS = frozenset({"party"})
_SUFFIXES = ("incorporated", "inc", "corporation", "corp", "company", "co", "limited", "ltd",
             "llc", "lp", "llp", "plc", "na", "sa", "ag", "gmbh", "nv", "bv", "pty", "ltda")
_SUFFIX = re.compile(r"(?:[\s,]+(?:" + "|".join(
    r"\.?\s?".join(map(re.escape, s)) if len(s) <= 4 else re.escape(s) for s in _SUFFIXES)
    + r")\.?)+\s*$", re.IGNORECASE)
_DATE = re.compile(r"\d{4}-\d\d-\d\d")


@dataclass(frozen=True)
class FieldRule:
    field: str
    strict: str
    lenient: str


def rule_of(field: str) -> FieldRule:
    strict = "exact token in the schema's normal form, case aside (the benchmark's)"
    if field in NAME_FIELDS:
        return FieldRule(field, strict, "case, punctuation, spacing and a final corporate "
                         "suffix (Inc., Corp., LLC, L.P., Ltd....) ignored")
    if field in ("effective_date", "term"):
        return FieldRule(field, strict, "exact after normalisation (ISO date; '<number> "
                         "<unit>'): the same as strict")
    return FieldRule(field, strict, "case, punctuation and spacing ignored")


def lenient_key(field: str, value: str) -> str:
    """The value as lenient comparison sees it (a Kleister token's '_' is a space)."""
    text = value.replace("_", " ").strip()
    if _DATE.fullmatch(text):
        return text
    if field in NAME_FIELDS:
        text = _SUFFIX.sub("", text) or text
    text = text.replace("&", " and ")
    return "".join(c for c in text.lower() if c.isalnum())


def _score(gold: Iterable[str], predicted: Iterable[str]) -> Score:
    gold, predicted = list(gold), list(predicted)
    left = Counter(gold)
    hits = 0
    for key in predicted:
        if left[key] > 0:
            left[key] -= 1
            hits += 1
    return Score(hits, len(predicted), len(gold))


def lenient_scores(rows: Iterable[Scored]) -> dict[tuple[str, str], Mapping[str, Score]]:
    """(model_version, strategy) -> field -> lenient counts over the group's latest results."""
    out: dict[tuple[str, str], dict[str, Score]] = {}
    for row in rows:
        if not row.latest_in_group:
            continue
        fields = out.setdefault(group_of(row.result), {})
        succeeded = row.result.status == "succeeded"
        for name, gold in row.label.values.items():
            predicted = row.result.values.get(name, ()) if succeeded else ()
            found = _score((lenient_key(name, v) for v in gold),
                           (lenient_key(name, v) for v, _ in predicted))
            fields[name] = fields.get(name, Score()) + found
    return out


def lenient_dict(rows: Iterable[Scored], group: tuple[str, str]) -> dict[str, dict]:
    """field -> lenient F1, counts and both rules, for ``evals score --format json``."""
    return {name: {"f1": score.f1, "hits": score.hits, "predicted": score.predicted,
                   "expected": score.expected, "strict_rule": rule_of(name).strict,
                   "lenient_rule": rule_of(name).lenient}
            for name, score in sorted(lenient_scores(rows).get(group, {}).items())}
