"""Finding calendar dates in running text: every spelling an SEC exhibit uses, with offsets.

Pure functions only; choosing which date is the effective one is ``rules``' job.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

from extract.fields.rules.patterns import alternation, lowered, matches_at

__all__ = ["DateMention", "find_dates"]

_MONTHS = {name: i for i, names in enumerate((
    ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",),
    ("june", "jun"), ("july", "jul"), ("august", "aug"), ("september", "sept", "sep"),
    ("october", "oct"), ("november", "nov"), ("december", "dec")), start=1) for name in names}
# The lookahead on the first letter is only for speed: re tries the long alternation at far fewer
# places (the run's fields stage is a budget: under a fifth of the run's time).
_MONTH = r"(?=[adfjmnos])(?P<month>" + alternation(_MONTHS) + r")\.?"
_DAY = r"(?P<day>[0-3]?\d)\s*(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_SEP = r"[\s,]*"
# Lower-case patterns, run over ``lowered(text)`` (case-blind, offsets unchanged).
_PATTERNS = [re.compile(p) for p in (
    # April 18, 2001 / April 18th 2001 / Apr. 18 , 2001
    rf"\b{_MONTH}\s+{_DAY}{_SEP}{_YEAR}\b",
    # 18th day of April, 2001 / 18 April 2001 / the 18th of April 2001
    rf"\b{_DAY}\s*(?:day\s+)?(?:of\s+)?{_MONTH}{_SEP}(?:in\s+the\s+year\s+)?{_YEAR}\b",
    # 04/18/2001, 4-18-01, 4.18.2001
    r"(?=\d)(?<![\d/.-])(?P<month>[01]?\d)[/.-](?P<day>[0-3]?\d)[/.-](?P<year>(?:19|20)?\d\d)(?![\d/-])",
    # 2001-04-18
    r"\b(?P<year>(?:19|20)\d\d)-(?P<month>[01]\d)-(?P<day>[0-3]\d)\b",
    # April, 2001 / April 2001 (day unknown: first of the month, as the gold does)
    rf"\b{_MONTH}{_SEP}{_YEAR}\b",
)]
_WEAK = len(_PATTERNS) - 1  # index of the month-and-year pattern
# Where each pattern can begin: a month name (which starts with one of these) or the first digit
# of a run of digits (``\b`` or the lookbehind rules out the middle of a run).
_MONTH_PREFIXES = tuple(sorted({name[:3] for name in _MONTHS}))
_DIGIT_RUN = re.compile(r"\d+")
_BEGINS_WITH_MONTH = (True, False, False, False, True)


def _month_starts(folded: str) -> list[int]:
    starts = []
    for prefix in _MONTH_PREFIXES:
        at = folded.find(prefix)
        while at >= 0:
            starts.append(at)
            at = folded.find(prefix, at + 1)
    return sorted(starts)


@dataclass(frozen=True)
class DateMention:
    value: date
    start: int
    end: int
    has_day: bool


def _parse(match: re.Match[str]) -> date | None:
    parts = match.groupdict()
    month_text = parts["month"].lower().rstrip(".")
    month = _MONTHS.get(month_text) or (int(month_text) if month_text.isdigit() else 0)
    year = int(parts["year"])
    if year < 100:
        year += 2000 if year < 50 else 1900
    try:
        return date(year, month, int(parts.get("day") or 1))
    except ValueError:
        return None


def find_dates(text: str) -> list[DateMention]:
    """Every date in ``text`` in order of position; overlapping spellings keep the fullest."""
    found: list[DateMention] = []
    taken: list[tuple[int, int]] = []
    folded = lowered(text)
    month_starts = _month_starts(folded)
    digit_starts = [match.start() for match in _DIGIT_RUN.finditer(folded)]
    for index, pattern in enumerate(_PATTERNS):
        starts = month_starts if _BEGINS_WITH_MONTH[index] else digit_starts
        for match in matches_at(pattern, folded, starts):
            start, end = match.span()
            if any(start < e and s < end for s, e in taken):
                continue
            value = _parse(match)
            if value is None or not 1950 <= value.year <= 2035:
                continue
            taken.append((start, end))
            found.append(DateMention(value, start, end, has_day=index != _WEAK))
    return sorted(found, key=lambda m: m.start)
