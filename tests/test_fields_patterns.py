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
