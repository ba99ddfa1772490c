"""Where a text states a value: the one test behind an evidence quote.

Two users need it to agree. The fine-tuning export writes, for each labelled value, the quote of
the page that states it (the evidence production asks the model for); the LLM strategies check
that the quote a model gives for a value states that value (``Delaware`` with a quote about
"the State of New York" does not). A value is stated when its own words occur (case-blind, any
run of white space between words) or, for the NDA schema's fields, when the offline candidate
generators read the same Kleister token there ("two (2) years" states ``2 years``, "March 3,
2015" states ``2015-03-03``). A date of any schema is found in any spelling the date finder
knows.

Offsets are into the text given (a stored page's text): ``text[start:end]`` is the quote.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import date

from pydantic import BaseModel

from extract.fields.base import PageText

__all__ = ["QUOTE_LIMIT", "mentions", "quote_span", "states"]

QUOTE_LIMIT = 200  # the response schema's "at most 200 characters" for a quote
_CONTEXT = 90  # characters either side of the value a quote may take, up to a clause break
_BREAK = re.compile(r"[.;:!?]\s|\n")


def _words(value: str) -> re.Pattern[str] | None:
    words = value.split()
    if not words:
        return None
    return re.compile(r"(?<!\w)" + r"\s+".join(map(re.escape, words)) + r"(?!\w)", re.IGNORECASE)


def _as_date(value: object) -> date | None:
    if isinstance(value, date):
        return value
    if isinstance(value, str) and re.fullmatch(r"\d{4}-\d\d-\d\d", value.strip()):
        try:
            return date.fromisoformat(value.strip())
        except ValueError:
            return None
    return None


def _generators(schema: type[BaseModel] | None) -> dict[str, Callable]:
    """The NDA schema's candidate generators by field (the offline rules' own readers)."""
    from extract.fields.schemas import NdaFields

    if schema is not NdaFields:
        return {}
    from extract.fields.rules.candidates import (
        date_candidates,
        jurisdiction_candidates,
        term_candidates,
    )
    from extract.fields.rules.parties import party_candidates

    return {"effective_date": date_candidates, "jurisdiction": jurisdiction_candidates,
            "party": party_candidates, "term": term_candidates}


def mentions(schema: type[BaseModel] | None, field: str, value: object,
             text: str) -> list[tuple[int, int]]:
    """Every (start, end) in ``text`` that states ``value`` of ``field``, in text order."""
    spans: set[tuple[int, int]] = set()
    as_text = value.isoformat() if isinstance(value, date) else str(value)
    pattern = _words(as_text)
    if pattern is not None:
        spans.update(m.span() for m in pattern.finditer(text))
    day = _as_date(value)
    if day is not None:
        from extract.fields.rules.dates import find_dates

        spans.update((m.start, m.end) for m in find_dates(text) if m.value == day)
    generate = _generators(schema).get(field)
    if generate is not None and as_text.strip():
        from extract.fields.schemas import kleister_value

        key = kleister_value(as_text).upper()
        spans.update(span for c in generate(text) if c.key == key for span in c.mentions)
    return sorted(spans)


def states(schema: type[BaseModel] | None, field: str, value: object, text: str) -> bool:
    """Whether ``text`` (a quote) states ``value``."""
    return bool(mentions(schema, field, value, text))


def _widen(text: str, start: int, end: int, limit: int) -> tuple[int, int]:
    """The mention with its clause around it (to the nearest break within ``_CONTEXT``
    characters), at most ``limit`` characters, on word boundaries (a cut inside a word moves to
    the word's edge: "GREEMENT" is never quoted), starting at a word or an opening quote or
    bracket and trimmed of white space at the end."""
    left_floor = max(0, start - _CONTEXT)
    breaks = [m.end() for m in _BREAK.finditer(text, left_floor, start)]
    left = breaks[-1] if breaks else left_floor
    found = _BREAK.search(text, end, min(len(text), end + _CONTEXT))
    right = found.start() + 1 if found and text[found.start()] != "\n" else (
        found.start() if found else min(len(text), end + _CONTEXT))
    if right - left > limit:  # keep the value whole, cut the context evenly
        spare = max(0, limit - (end - start))
        left = max(left, start - spare // 2)
        right = min(right, left + limit)
    if 0 < left < start and text[left - 1].isalnum() and text[left].isalnum():
        while left < start and text[left].isalnum():  # never start mid-word
            left += 1
    if end < right < len(text) and text[right - 1].isalnum() and text[right].isalnum():
        while right > end and text[right - 1].isalnum():  # never end mid-word
            right -= 1
    while left < start and not (text[left].isalnum() or text[left] in "\"'(“‘$"):
        left += 1
    while right > end and text[right - 1].isspace():
        right -= 1
    return left, right


def _preferred(schema: type[BaseModel] | None, field: str, text: str,
               spans: list[tuple[int, int]]) -> tuple[int, int]:
    """The mention a reader would quote: for a governing law, one after the word "law(s)"
    ("the laws of the State of Florida", not "a Florida corporation"); else the first."""
    if field == "jurisdiction":
        for start, end in spans:
            if "law" in text[max(0, start - 60):start].lower():
                return start, end
    return spans[0]


def quote_span(schema: type[BaseModel] | None, field: str, value: object,
               pages: Sequence[PageText], limit: int = QUOTE_LIMIT
               ) -> tuple[int, int, int] | None:
    """(page number, start, end) of a quote that states ``value``: a mention with its clause,
    inside one page, at most ``limit`` characters; None when no page states it."""
    best: tuple[int, int, int] | None = None
    for page in pages:
        spans = [s for s in mentions(schema, field, value, page.text) if s[1] - s[0] <= limit]
        if not spans:
            continue
        start, end = _preferred(schema, field, page.text, spans)
        left, right = _widen(page.text, start, end, limit)
        if field != "jurisdiction" or "law" in page.text[max(0, start - 60):start].lower():
            return page.number, left, right
        best = best or (page.number, left, right)
    return best
