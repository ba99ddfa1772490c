"""Why a group misses, field by field: the counts a quality team reads beside F1.

- ``formatting``: a gold value and a prediction that differ only in spelling (case, commas,
  '&'/'and', '_' and spacing): the extractor found the right thing and wrote it differently;
- ``wrong_value``: a gold value and a different prediction;
- ``missing``: a gold value with no prediction;
- ``extra``: a prediction where the label has none left;

and the empty-field rate: the share of scored results that predicted nothing for the field.
"""

from __future__ import annotations

from collections.abc import Sequence

from evals.failures import loose_text
from evals.scoring import Scored

__all__ = ["KINDS", "empty_rates", "misses"]

KINDS = ("formatting", "wrong_value", "missing", "extra")


def _kind(outcome: str, expected: str | None, got: str | None) -> str | None:
    if outcome == "missed":
        return "missing"
    if outcome == "spurious":
        return "extra"
    if outcome == "wrong":
        return "formatting" if expected and got and loose_text(expected) == loose_text(got) else (
            "wrong_value")
    return None


def misses(rows: Sequence[Scored]) -> dict[str, dict[str, int]]:
    """field -> {kind: count} over these scored results."""
    out: dict[str, dict[str, int]] = {}
    for row in rows:
        for name in row.fields:
            out.setdefault(name, dict.fromkeys(KINDS, 0))
        for o in row.outcomes:
            kind = _kind(o.outcome, o.expected, o.got)
            if kind:
                out.setdefault(o.field, dict.fromkeys(KINDS, 0))[kind] += 1
    return dict(sorted(out.items()))


def empty_rates(rows: Sequence[Scored]) -> dict[str, float]:
    """field -> share of these results with no predicted value for it."""
    names = sorted({name for row in rows for name in row.fields})
    if not rows:
        return {}
    return {name: sum(row.fields.get(name) is None or row.fields[name].predicted == 0
                      for row in rows) / len(rows) for name in names}
