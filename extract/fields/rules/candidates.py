"""Candidate values for the NDA fields: every date, US state and duration a document mentions.

Generators are recall-first: they propose every plausible value with where it occurs, and
``features``/``linear`` decide which (if any) the document means. Parties, the hardest field,
have their own generator in ``parties``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from extract.fields.rules.dates import find_dates
from extract.fields.rules.patterns import alternation, compile_scan, lowered
from extract.fields.schemas import US_STATES, kleister_value

__all__ = ["Candidate", "group", "date_candidates", "jurisdiction_candidates", "term_candidates"]


@dataclass
class Candidate:
    """One distinct value of one field, with every place it was found.

    ``value`` is valid for the schema ("New York", "2 years", "2001-04-18", "Nike, Inc.");
    ``key`` is its Kleister token upper-cased, so spellings of the same value group together;
    ``kinds`` names the patterns that proposed it (features read them).
    """

    field: str
    value: str
    key: str
    mentions: list[tuple[int, int]] = field(default_factory=list)
    kinds: set[str] = field(default_factory=set)

    @property
    def first(self) -> int:
        return min(start for start, _ in self.mentions)


def group(field_name: str, found: list[tuple[str, int, int, str]]) -> list[Candidate]:
    """(value, start, end, kind) mentions -> one candidate per distinct token, in text order;
    the first spelling seen becomes the candidate's value."""
    by_key: dict[str, Candidate] = {}
    for value, start, end, kind in sorted(found, key=lambda f: f[1]):
        key = kleister_value(value).upper()
        candidate = by_key.setdefault(key, Candidate(field_name, value, key))
        candidate.mentions.append((start, end))
        candidate.kinds.add(kind)
    return list(by_key.values())


def date_candidates(text: str) -> list[Candidate]:
    return group("effective_date", [(m.value.isoformat(), m.start, m.end,
                                     "day" if m.has_day else "month_only")
                                    for m in find_dates(text)])


# The case-blind patterns below are lower-case and run over ``lowered(text)``; what a match
# spelled is read back from ``text`` at the same offsets.
_STATE = compile_scan(r"\b(" + alternation(US_STATES) + r")\b")


def jurisdiction_candidates(text: str) -> list[Candidate]:
    found = []
    for match in _STATE.finditer(lowered(text)):
        spelled = text[match.start(1):match.end(1)]
        name = " ".join(spelled.split()).title().replace(" Of ", " of ")
        kind = "upper" if spelled.isupper() else "title"
        found.append((name, match.start(), match.end(), kind))
    return group("jurisdiction", found)


_NUMBER_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14,
    "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20,
    "twenty-four": 24, "thirty": 30, "thirty-six": 36, "forty-eight": 48, "sixty": 60,
    "ninety": 90, "a": 1, "an": 1,
}
_WORD = alternation(w for w in _NUMBER_WORDS if len(w) > 2)
_FIRST_LETTERS = "".join(sorted({w[0] for w in _NUMBER_WORDS}))  # a lookahead, for speed only
_DURATION = compile_scan(
    rf"\b(?=[0-9{_FIRST_LETTERS}])(?:(?P<word>{_WORD}|an?)(?:[\s-]+\(\s*(?P<paren>\d+(?:\.\d+)?)\s*\))?|(?P<digits>\d+(?:\.\d+)?))"
    r"[\s-]*(?:full\s+|calendar\s+|consecutive\s+)?(?P<unit>year|month|day)s?\b")


_ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6,
             "seventh": 7, "eighth": 8, "ninth": 9, "tenth": 10}
_ANNIVERSARY = re.compile(r"\b(?=[" + "".join(sorted({w[0] for w in _ORDINALS})) + r"])("
                          + "|".join(_ORDINALS) + r")\s*(?:\(\d+(?:st|nd|rd|th)\)\s*)?"
                          r"anniversary\b")


def term_candidates(text: str) -> list[Candidate]:
    """Durations ('two (2) years', '18 months', 'one-year') and anniversaries ('the second
    anniversary of' is a two-year term)."""
    found = []
    folded = lowered(text)
    # Most agreements never say "anniversary": one substring test instead of a scan.
    anniversaries = _ANNIVERSARY.finditer(folded) if "anniversary" in folded else ()
    for match in anniversaries:
        years = _ORDINALS[match.group(1).lower()]
        found.append((f"{years} year" if years == 1 else f"{years} years", match.start(),
                      match.end(), "anniversary"))
    for match in _DURATION.finditer(folded):
        number_text = match.group("paren") or match.group("digits")
        if number_text is None:
            number = _NUMBER_WORDS[match.group("word").lower()]
            kind = "word"
        else:
            number = float(number_text)
            kind = "paren" if match.group("paren") else "digits"
        if not 0 < number <= 100:
            continue
        shown = f"{number:g}"
        unit = match.group("unit").lower()
        value = f"{shown} {unit}" if shown == "1" else f"{shown} {unit}s"
        found.append((value, match.start(), match.end(), kind))
    return group("term", found)
