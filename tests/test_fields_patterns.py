"""The prefix-tree alternation matches exactly what the plain longest-first alternation matches."""

from __future__ import annotations

import random
import re

from extract.fields.patterns import alternation
from extract.fields.schemas import US_STATES

MONTHS = ["january", "jan", "september", "sept", "sep", "march", "mar", "may"]
NUMBERS = ["six", "sixty", "sixteen", "twenty", "twenty-four", "ten", "one"]


def _plain(words) -> str:
    return "|".join(w.replace(" ", r"\s+") for w in sorted(words, key=len, reverse=True))


def test_prefix_tree_shape_tries_the_longer_word_first():
    assert alternation(["sep", "sept", "september"]) == "sep(?:t(?:ember|)|)"
    assert alternation(["New York", "New Jersey"]) == r"new\s+(?:jersey|york)"


def test_prefix_tree_finds_the_same_matches_as_the_plain_alternation():
    rng = random.Random(7)
    for words, tail in ((MONTHS, r"\.?\s+\d"), (NUMBERS, r"[\s-]*(?:year|day)s?\b"),
                        (list(US_STATES), r"\b")):
        tree = re.compile(rf"\b(?:{alternation(words)}){tail}", re.IGNORECASE)
        plain = re.compile(rf"\b(?:{_plain(words)}){tail}", re.IGNORECASE)
        pieces = [*words, *(w.upper() for w in words), "x", " ", "-", ".", "1", "years", "days",
                  "\n", "teen", "ty"]
        for _ in range(400):
            text = "".join(rng.choice(pieces) for _ in range(12))
            assert ([m.span() for m in tree.finditer(text)]
                    == [m.span() for m in plain.finditer(text)]), text


# --- case-blind patterns over lowered text, and dates tried only where they can begin ----------

def test_lowered_keeps_every_offset_even_where_lower_would_not():
    from extract.fields.patterns import lowered

    assert lowered("Governed by NEW YORK law") == "governed by new york law"
    text = "İSTANBUL, New York"  # 'İ'.lower() is two characters: only ASCII is lowered then
    assert len(lowered(text)) == len(text)
    assert lowered(text)[10:] == "new york"


def _random_texts(pieces: list[str], seed: int, count: int = 600, length: int = 14):
    rng = random.Random(seed)
    for _ in range(count):
        yield "".join(rng.choice(pieces) for _ in range(length))


def test_case_blind_patterns_find_what_ignorecase_finds():
    from extract.fields.candidates import _ANNIVERSARY, _DURATION, _STATE
    from extract.fields.patterns import lowered

    pieces = ["New York", "NEW  YORK", "new\njersey", "Delaware", "Texas", "two (2)", "Two",
              "years", "YEAR", "Months", "day", "second", "Anniversary", "X", "x", " ", "-",
              "(", ")", "1", "2.5", "\n", "İ", "é"]
    for text in _random_texts(pieces, seed=11):
        for pattern in (_STATE, _DURATION, _ANNIVERSARY):
            blind = re.compile(pattern.pattern, re.IGNORECASE)
            assert ([m.span() for m in pattern.finditer(lowered(text))]
                    == [m.span() for m in blind.finditer(text)]), (pattern.pattern[:30], text)


def test_dates_tried_only_at_months_and_digit_runs_match_a_full_scan():
    from extract.fields import dates
    from extract.fields.patterns import lowered, matches_at

    pieces = ["April", "APR.", "sept", "May", "mar", "x", "summary", "18", "2001", "01", "4",
              "/", "-", ".", ",", " ", "\n", "th", "day of ", "of", "in the year ", "a1", "_",
              "19", "20", "12-31-", "2019-04-18"]
    for text in _random_texts(pieces, seed=5, count=1500):
        folded = lowered(text)
        months = dates._month_starts(folded)
        digits = [m.start() for m in dates._DIGIT_RUN.finditer(folded)]
        for index, pattern in enumerate(dates._PATTERNS):
            starts = months if dates._BEGINS_WITH_MONTH[index] else digits
            full = re.compile(pattern.pattern, re.IGNORECASE)
            assert ([m.span() for m in matches_at(pattern, folded, starts)]
                    == [m.span() for m in full.finditer(text)]), (index, text)


def test_matches_at_resumes_after_a_match_as_finditer_does():
    from extract.fields.patterns import matches_at

    pattern = re.compile(r"[ab]+")
    text = "abbb ab xab"
    starts = [i for i, c in enumerate(text) if c in "ab"]  # includes starts inside a match
    assert ([m.span() for m in matches_at(pattern, text, starts)]
            == [m.span() for m in pattern.finditer(text)])
