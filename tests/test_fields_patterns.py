"""The prefix-tree alternation matches exactly what the plain longest-first alternation matches."""

from __future__ import annotations

import random
import re

import pytest

from extract.fields.rules.patterns import alternation
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
    from extract.fields.rules.patterns import lowered

    assert lowered("Governed by NEW YORK law") == "governed by new york law"
    text = "İSTANBUL, New York"  # 'İ'.lower() is two characters: only ASCII is lowered then
    assert len(lowered(text)) == len(text)
    assert lowered(text)[10:] == "new york"


def _random_texts(pieces: list[str], seed: int, count: int = 600, length: int = 14):
    rng = random.Random(seed)
    for _ in range(count):
        yield "".join(rng.choice(pieces) for _ in range(length))


def test_case_blind_patterns_find_what_ignorecase_finds():
    from extract.fields.rules.candidates import _ANNIVERSARY, _DURATION, _STATE
    from extract.fields.rules.patterns import lowered

    pieces = ["New York", "NEW  YORK", "new\njersey", "Delaware", "Texas", "two (2)", "Two",
              "years", "YEAR", "Months", "day", "second", "Anniversary", "X", "x", " ", "-",
              "(", ")", "1", "2.5", "\n", "İ", "é"]
    for text in _random_texts(pieces, seed=11):
        for pattern in (_STATE, _DURATION, _ANNIVERSARY):
            blind = re.compile(pattern.pattern, re.IGNORECASE)
            assert ([m.span() for m in pattern.finditer(lowered(text))]
                    == [m.span() for m in blind.finditer(text)]), (pattern.pattern[:30], text)


def test_dates_tried_only_at_months_and_digit_runs_match_a_full_scan():
    from extract.fields.rules import dates
    from extract.fields.rules.patterns import lowered, matches_at

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
    from extract.fields.rules.patterns import matches_at

    pattern = re.compile(r"[ab]+")
    text = "abbb ab xab"
    starts = [i for i, c in enumerate(text) if c in "ab"]  # includes starts inside a match
    assert ([m.span() for m in matches_at(pattern, text, starts)]
            == [m.span() for m in pattern.finditer(text)])


@pytest.mark.parametrize("byte_spans", [True, False], ids=["str-subject", "bytes-subject"])
def test_jit_scans_find_exactly_what_re_finds(byte_spans, monkeypatch):
    """The party, state and duration scans run on PCRE2's JIT: the same spans and groups
    (each by number and by name) as ``re`` on text built from the pieces these patterns care
    about (names, suffixes, brackets, quotes, line breaks, and characters the engines class
    differently). Both ways a scan can run: over the ``str``, its spans read in bytes (the
    binding's internals), and over the UTF-8 ``bytes`` where the binding lacks them."""
    from extract.fields.rules import candidates, parties, patterns
    from extract.fields.rules.patterns import JitScan, lowered

    scans = [(parties._COMPANY, False), (parties._DESCRIBED, False), (candidates._STATE, True),
             (candidates._DURATION, True),
             *((pattern, False) for _, pattern, _ in parties._PERSON_CONTEXTS)]
    assert all(isinstance(scan, JitScan) for scan, _ in scans)  # PCRE2 is installed: not vacuous
    if not byte_spans:
        monkeypatch.setattr(patterns, "_raw_spans", lambda: None)
    scans = [(JitScan(scan.pattern), folded) for scan, folded in scans]
    assert all((scan._raw_span is not None) == byte_spans for scan, _ in scans)
    pieces = ["Acme", "ACME", "Nike", "Inc", "Inc.", "Corp", "L.L.C.", "GmbH", "Co", "Company",
              "and", "of", "the", "x.com", "&", "3M", "John", "Smith", "J.", "Mr. ", "Dear ",
              "/s/", "Name:", "I, ", "individual", "(the “", "\"", "(", ")", ",", ", ", " ", "  ",
              "\n", "\t", "\u00a0", "\u2028", "\x1c", "\x1f", "\u180e", "e\u0301", "\U00010d41",
              "É", "Łódź", "½", "_", "New York", "two (2)", "years", "months", "Jr.", "between ",
              "nStor", "a ", "an ", "Delaware ", "corporation", "J.H. ", "A ", "12", "one-year"]

    def found(matches, plain: re.Pattern):
        groups = [*range(plain.groups + 1), *plain.groupindex]
        return [([m.span(g) for g in groups],
                 " ".join(m.group(1).split()) if plain.groups and m.group(1) else None)
                for m in matches]

    for text in _random_texts(pieces, seed=23, count=1500, length=18):
        for scan, folded in scans:
            subject = lowered(text) if folded else text
            plain = re.compile(scan.pattern)
            assert (found(scan.finditer(subject), plain)
                    == found(plain.finditer(subject), plain)), (scan.pattern[:40], text)


def test_every_character_the_engines_class_differently_gets_an_agreed_stand_in():
    """Over all of Unicode: where ``re`` and PCRE2 disagree on whitespace, word characters or
    digits, the stand-in is classed by both as ``re`` classes the original."""
    import pcre2

    from extract.fields.rules.patterns import _stand_in

    every = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)
    differ: set[str] = set()
    for name in (r"\s", r"\w", r"\d"):
        by_re = set(re.findall(name, every))
        by_jit = {m.group() for m in pcre2.compile(name, flags=pcre2.UNICODE).finditer(every)}
        differ |= by_re ^ by_jit
    assert "\x1c" in differ and "\u0301" in differ  # the known cases are found
    jit = [pcre2.compile(c, flags=pcre2.UNICODE) for c in (r"\s", r"\w", r"\d")]
    for char in differ:
        stand_in = _stand_in(char)
        assert stand_in is not None, hex(ord(char))
        wanted = [bool(re.fullmatch(c, char)) for c in (r"\s", r"\w", r"\d")]
        assert [bool(re.fullmatch(c, stand_in)) for c in (r"\s", r"\w", r"\d")] == wanted
        assert [bool(c.match(stand_in)) for c in jit] == wanted


def test_lowercase_words_answers_as_the_set_of_every_lowercase_word_would():
    from extract.fields.rules.features import _LowercaseWords

    pieces = ["acme", "Acme", "inc", "including", "the", "The", "_the", "the1", "é", "x", " ",
              ",", ".", "\n", "-", "co", "corp", "½", "e\u0301"]
    words = ["acme", "inc", "the", "co", "corp", "x", "including", "Acme", "the1", "", "é"]
    for text in _random_texts(pieces, seed=31, count=800, length=10):
        every = set(re.findall(r"\b[a-z]+\b", text))
        asked = _LowercaseWords(text)
        assert {w for w in words if w in asked} == {w for w in words if w in every}, text


def test_a_words_uses_are_counted_as_re_counts_them_standing_alone():
    """``features._uses`` counts a word with ``str.find`` and a look either side; ``re`` with a
    lookbehind and a lookahead is the reference, on random texts of word characters, accented
    letters, digits, punctuation and line breaks (a word may itself hold punctuation)."""
    from extract.fields.rules.features import _uses

    rng = random.Random(11)
    for _ in range(5000):
        text = "".join(rng.choice("ab_ é1.&-’\n") for _ in range(rng.randint(0, 40)))
        word = "".join(rng.choice("ab_1é.&-") for _ in range(rng.randint(1, 3)))
        expected = len(re.findall(rf"(?<![\w]){re.escape(word)}(?![\w])", text))
        assert _uses.__wrapped__(text, word) == expected, (text, word)


def test_the_byte_to_character_map_holds_for_few_and_for_many_wide_characters():
    """``_utf8``'s map from a character's byte offset to its character offset, on texts whose
    characters outside ASCII are few (found one by one) and many (another script: one scan),
    two to four bytes each, checked at every character's start."""
    import random

    from extract.fields.rules.patterns import _FEW_WIDE, _utf8

    rng = random.Random(29)
    few = ["a", " ", "\n", "“", "”", "é", "—", "\U0001f600"]
    many = few + [chr(0x4E00 + i) for i in range(3 * _FEW_WIDE)]
    for alphabet in (few, many):
        for _ in range(200):
            text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 120)))
            _utf8.cache_clear()
            data, to_char = _utf8(text)
            assert data == text.encode("utf-8")
            for index in range(len(text)):
                assert to_char(len(text[:index].encode("utf-8"))) == index, (text, index)
