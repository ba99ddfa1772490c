"""Features of a candidate value: the words around its mentions, where and how often it occurs,
and a few facts about its shape.

Features describe contexts ("preceded by 'laws of'", "first mentioned in the first 500
characters"), never the value itself, so a model trained on them carries no names or dates from
its training documents to new ones: a party's last word is a feature only from the closed
``LEGAL_SUFFIXES`` list, and training keeps only context words that many documents write in lower
case (``training.MIN_DOCUMENT_FREQUENCY``).
"""

from __future__ import annotations

import math
import re

from extract.fields.rules.candidates import Candidate

__all__ = ["LEGAL_SUFFIXES", "featurise"]

# The only last words a party feature may name: legal forms and name suffixes, a closed list, so
# a surname ("suffix=hewes") can never become a feature.
LEGAL_SUFFIXES = frozenset({
    "inc", "incorporated", "corporation", "corp", "company", "co", "llc", "l.l.c", "ltd",
    "limited", "lp", "l.p", "llp", "l.l.p", "n.v", "b.v", "ag", "a.g", "plc", "s.a", "sa",
    "gmbh", "bancorp", "bank", "trust", "holdings", "group", "partners", "associates", "fund",
    "jr", "sr", "ii", "iii", "iv", "m.d", "ph.d",
})
_WORD = re.compile(r"[a-z]+|[“”\"(),:;/$]")
_MAX_MENTIONS = 8
_LEFT, _RIGHT = 6, 4


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


_SENTENCE_END = re.compile(r"[.;:!?]\s|\n\s*\n")
_SENTENCE_FIELDS = ("term", "effective_date")  # decided by the sentence, not the next word


def _sentence_words(text: str, start: int, end: int) -> set[str]:
    """The words of the sentence around a mention (200 characters either side at most): "the
    term of this Agreement ... two years" against "obligations survive ... two years"."""
    left = text[max(0, start - 200):start]
    cut = [m.end() for m in _SENTENCE_END.finditer(left)]
    left = left[cut[-1]:] if cut else left
    right = text[end:end + 200]
    stop = _SENTENCE_END.search(right)
    right = right[:stop.start()] if stop else right
    return {w for w in _words(left + " " + right) if w.isalpha()}


def _context(candidate: Candidate, text: str) -> dict[str, float]:
    feats: dict[str, float] = {}
    sentences = candidate.field in _SENTENCE_FIELDS
    for index, (start, end) in enumerate(sorted(candidate.mentions)[:_MAX_MENTIONS]):
        if sentences:
            for word in _sentence_words(text, start, end):
                feats[f"S:{word}"] = 1.0
        left = _words(text[max(0, start - 80):start])[-_LEFT:]
        right = _words(text[end:end + 60])[:_RIGHT]
        for word in left:
            feats[f"L:{word}"] = 1.0
        for word in right:
            feats[f"R:{word}"] = 1.0
        if left:
            feats[f"L1:{left[-1]}"] = 1.0
        if right:
            feats[f"R1:{right[0]}"] = 1.0
        if index == 0:
            for word in left:
                feats[f"first_L:{word}"] = 1.0
    return feats


def _position(candidate: Candidate, text: str, rank: int) -> dict[str, float]:
    first, size = candidate.first, max(len(text), 1)
    relative = first / size
    count = len(candidate.mentions)
    feats = {
        "count_log": math.log1p(count), "count_1": float(count == 1), "count_3+": float(count >= 3),
        "pos_rel": relative, "pos_rel<0.05": float(relative < 0.05), "pos_rel>0.8": float(relative > 0.8),
        "pos<500": float(first < 500), "pos<1500": float(first < 1500),
        f"rank={min(rank, 3)}": 1.0,
    }
    if any(start > 0.8 * size for start, _ in candidate.mentions):
        feats["in_last_fifth"] = 1.0
    return feats


_LOWER_WORD = re.compile(r"[a-z]+")


def _is_word(char: str) -> bool:
    """``re``'s ``\\w`` for one character of a ``str``: ``isalnum()`` or the underscore."""
    return char.isalnum() or char == "_"


class _LowercaseWords:
    """Which words the text uses on their own in lower case (the words of
    ``\\b[a-z]+\\b``), asked only for the words of party candidates: a few finds per word
    instead of listing the document's every word (0.6 ms a document, the rules' largest scan)."""

    def __init__(self, text: str):
        self.text = text
        self._known: dict[str, bool] = {}

    def __contains__(self, word: object) -> bool:
        if not isinstance(word, str):
            return False
        if word not in self._known:
            self._known[word] = self._alone_somewhere(word)
        return self._known[word]

    def _alone_somewhere(self, word: str) -> bool:
        if not _LOWER_WORD.fullmatch(word):
            return False
        text, at = self.text, self.text.find(word)
        while at >= 0:  # \b on both sides
            end = at + len(word)
            before_ok = at == 0 or not _is_word(text[at - 1])
            if before_ok and (end == len(text) or not _is_word(text[end])):
                return True
            at = text.find(word, at + 1)
        return False


def _shape(candidate: Candidate, text: str, lowercase_words: _LowercaseWords | set[str],
           others: set[str]) -> dict[str, float]:
    value = candidate.value
    feats: dict[str, float] = {}
    if candidate.field == "party":
        words = value.split()
        feats[f"words={min(len(words), 6)}"] = 1.0
        feats["all_caps"] = float(value.isupper())
        known = [w for w in words if w.lower().strip(".,") in lowercase_words]
        feats["common_words"] = len(known) / len(words)
        last = words[-1].lower().strip(".,")
        feats["suffix=" + (last if last in LEGAL_SUFFIXES else "other")] = 1.0
        feats["is_company"] = float(any(k.startswith("company") for k in candidate.kinds))
        feats["has_newline"] = float(any("\n" in text[s:e] for s, e in candidate.mentions))
        longer = [k for k in others if k != candidate.key and candidate.key in k]
        feats["part_of_longer"] = float(bool(longer))
        feats["contains_shorter"] = float(any(k != candidate.key and k in candidate.key
                                              for k in others))
    elif candidate.field == "term":
        number, unit = value.split()
        feats[f"unit={unit.rstrip('s')}"] = 1.0
        feats["number_log"] = math.log1p(float(number))
    return feats


def featurise(candidates: list[Candidate], text: str) -> list[dict[str, float]]:
    """One feature dict per candidate of one field; ``rank`` orders them by first mention."""
    parties = any(c.field == "party" for c in candidates)  # only party shapes read the words
    lowercase_words = _LowercaseWords(text) if parties else set()
    keys = {c.key for c in candidates}
    order = {id(c): rank for rank, c in enumerate(sorted(candidates, key=lambda c: c.first))}

    rows = []
    for candidate in candidates:
        feats = {f"kind={kind}": 1.0 for kind in candidate.kinds}
        feats.update(_context(candidate, text))
        feats.update(_position(candidate, text, order[id(candidate)]))
        feats.update(_shape(candidate, text, lowercase_words, keys))
        rows.append(feats)
    return rows
