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
from functools import lru_cache

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
# Each mention's own features are asked twice: when its candidate is scored, and again alone
# when the candidate is chosen and its deciding mention is looked for (``strategy``: up to
# eight mentions a value, each featurised as if it were the value's only one). They depend on
# the text and the mention only, so each is computed once a document (2 % of the rules'
# instructions on the 83 NDAs).
_MENTIONS_CACHED = 4096
_SENTENCE_FIELDS = ("term", "effective_date")  # decided by the sentence, not the next word


@lru_cache(maxsize=_MENTIONS_CACHED)
def _sentence_words(text: str, start: int, end: int) -> set[str]:
    """The words of the sentence around a mention (200 characters either side at most): "the
    term of this Agreement ... two years" against "obligations survive ... two years"
    (shared: not to be changed by a caller)."""
    left = text[max(0, start - 200):start]
    cut = [m.end() for m in _SENTENCE_END.finditer(left)]
    left = left[cut[-1]:] if cut else left
    right = text[end:end + 200]
    stop = _SENTENCE_END.search(right)
    right = right[:stop.start()] if stop else right
    return {w for w in _words(left + " " + right) if w.isalpha()}


# Fields whose context is their sentence and the word pair either side only. A term has few
# labelled examples (61 in the development part), and the wider windows repeat the sentence's
# words: the model then spreads its weight over thousands of near-copies and the clause cues
# drown (grouped CV over three fold seeds: term F1 74.6 -> 78.9).
_SENTENCE_ONLY = frozenset({"term"})


@lru_cache(maxsize=_MENTIONS_CACHED)
def _words_around(text: str, start: int, end: int) -> tuple[list[str], list[str]]:
    """The ``_LEFT`` words before a mention and the ``_RIGHT`` after it (shared: not to be
    changed by a caller)."""
    return (_words(text[max(0, start - 80):start])[-_LEFT:],
            _words(text[end:end + 60])[:_RIGHT])


def _context(candidate: Candidate, text: str) -> dict[str, float]:
    feats: dict[str, float] = {}
    sentences = candidate.field in _SENTENCE_FIELDS
    for index, (start, end) in enumerate(sorted(candidate.mentions)[:_MAX_MENTIONS]):
        if sentences:
            for word in _sentence_words(text, start, end):
                feats[f"S:{word}"] = 1.0
        left, right = _words_around(text, start, end)
        if candidate.field in _SENTENCE_ONLY:
            feats.update(_word_pairs(left, right))
            continue
        for word in left:
            feats[f"L:{word}"] = 1.0
        for word in right:
            feats[f"R:{word}"] = 1.0
        if left:
            feats[f"L1:{left[-1]}"] = 1.0
        if right:
            feats[f"R1:{right[0]}"] = 1.0
        feats.update(_word_pairs(left, right))
        if index == 0:
            for word in left:
                feats[f"first_L:{word}"] = 1.0
    return feats


def _word_pairs(left: list[str], right: list[str]) -> dict[str, float]:
    """The two words before and the two after: "period of", "laws of", "between (": a phrase,
    not a word."""
    feats = {}
    if len(left) >= 2:
        feats[f"LB:{left[-2]}_{left[-1]}"] = 1.0
    if len(right) >= 2:
        feats[f"RB:{right[0]}_{right[1]}"] = 1.0
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


@lru_cache(maxsize=8)
def _lowercase_words_of(text: str) -> _LowercaseWords:
    """One text's lowercase words, shared by every ``featurise`` of it: the deciding mention
    featurises a value's mentions one at a time (``strategy._deciding_mention``), and a fresh
    cache a call asked the same words again (1,234 searches over the 83 NDAs' decisions)."""
    return _LowercaseWords(text)


_ROLE_ALIAS = re.compile(r"\(\s*(?:the\s+|hereinafter\s+(?:the\s+)?|collectively,?\s+)?[“\"]")


def _name_in_use(words: list[str], text: str,
                 lowercase_words: _LowercaseWords | set[str]) -> dict[str, float]:
    """How much the document uses the name's own first word ("Kite" for "Kite Pharma, Inc."):
    a party is referred to throughout, a company named once in a recital is not."""
    first = words[0].strip(".,“”\"'") if words else ""
    if len(first) < 3 or first.lower() in lowercase_words or first.lower() in _COMMON_FIRST:
        return {"first_word_generic": 1.0}
    count = _uses(text, first)
    return {"first_word_uses_log": math.log1p(count), "first_word_uses>=5": float(count >= 5)}


@lru_cache(maxsize=4096)
def _uses(text: str, word: str) -> int:
    """How often ``word`` stands on its own in ``text``: asked once per document and word (the
    deciding mention re-scores a value's mentions one by one). Counted as
    ``re.findall(r"(?<![\\w])WORD(?![\\w])", text)`` counts (non-overlapping, left to right),
    but with ``str.find`` and a look at the character on each side: ``re`` tried the lookbehind
    at every position, 24 ms a word on a 363-page document (7 of its 10 s)."""
    count, at = 0, text.find(word)
    while at >= 0:
        end = at + len(word)
        if (at == 0 or not _is_word(text[at - 1])) and (end == len(text)
                                                        or not _is_word(text[end])):
            count += 1
            at = text.find(word, end)
        else:
            at = text.find(word, at + 1)
    return count


_COMMON_FIRST = frozenset({"the", "and", "new", "first", "american", "national", "united",
                           "general", "international", "global"})


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
        feats.update(_name_in_use(words, text, lowercase_words))
    elif candidate.field == "term":
        number, unit = value.split()
        feats[f"unit={unit.rstrip('s')}"] = 1.0
        feats["number_log"] = math.log1p(float(number))
        for start, end in sorted(candidate.mentions)[:_MAX_MENTIONS]:
            feats.update(_term_clause(text, start, end))
    return feats


# A clause headed "Term" ("4. Term.", "TERM AND TERMINATION:", "Term; Return of Material.",
# "Duration of Agreement"): the duration in it is the agreement's, not a notice period's.
_TERM_HEADING = re.compile(r"(?:^|\n|[.;]\s)\s*(?:(?:section\s+)?\d+(?:\.\d+)*\.?\s*|\([a-z0-9]+\)\s*)?"
                           r"(?:term|duration)(?:\s+(?:of|and)\s+[a-z]+(?:\s+[a-z]+)?)?\s*[.:;]",
                           re.IGNORECASE)
# The agreement itself lasting: "this Agreement shall expire", "shall continue for", "remain in
# effect", "the Term shall be"; against an obligation surviving it or a notice period.
_AGREEMENT_LASTS = re.compile(
    r"\b(?:this|the)\s+(?:letter\s+)?(?:agreement|nda|undertaking)\b[^.;]{0,80}?\b(?:expire|"
    r"terminate|continue|remain|(?:be|is)\s+(?:valid|effective|in\s+effect)|have\s+a\s+term|"
    r"govern|cover)"
    r"|\bthe\s+[“\"]?term[”\"]?\s+(?:of\s+this\s+agreement\s+)?(?:shall|will|is|means)",
    re.IGNORECASE)
_SURVIVES = re.compile(r"\bsurviv|\bnotice\b|\bwithin\b", re.IGNORECASE)
# The parties' obligations lasting ("your obligations hereunder shall terminate", "bound by their
# obligations of confidentiality for"): a term when counted from signing, survival when from an
# event; the model learns which from the cues beside it.
_OBLIGATIONS = re.compile(r"\b(?:obligations?|undertakings?|covenants|restrictions)\b",
                          re.IGNORECASE)


@lru_cache(maxsize=_MENTIONS_CACHED)
def _term_clause(text: str, start: int, end: int) -> dict[str, float]:
    """Where a duration sits: under a "Term" heading, in a sentence about the agreement
    lasting, or in one about surviving it or giving notice (shared: not to be changed by a
    caller)."""
    feats: dict[str, float] = {}
    paragraph = text.rfind("\n\n", max(0, start - 400), start)
    before = text[max(paragraph, start - 300, 0):start]
    if _TERM_HEADING.search(before):
        feats["term_heading"] = 1.0
    cut = [m.end() for m in _SENTENCE_END.finditer(text, max(0, start - 250), start)]
    sentence = text[cut[-1] if cut else max(0, start - 250):start]
    if _AGREEMENT_LASTS.search(sentence):
        feats["agreement_lasts"] = 1.0
    if _SURVIVES.search(sentence + text[end:end + 40]):
        feats["survives_or_notice"] = 1.0
    if _OBLIGATIONS.search(sentence):
        feats["obligations_last"] = 1.0
    feats.update(_heading(text, start))
    after = text[end:end + 70]
    if _FROM_SIGNING.match(after):
        feats["from_signing"] = 1.0
    elif _FROM_EVENT.match(after):
        feats["from_event"] = 1.0
    return _with_pairs(feats)


def _with_pairs(cues: dict[str, float]) -> dict[str, float]:
    """The cues with each pair of them ("agreement_lasts&from_signing"): a term is the
    agreement lasting from its signing, which either cue alone says far less often (in the
    development part 38 of the 42 durations with both are the gold term, 4 of the 80 with
    "from_signing" alone), a conjunction a linear model cannot add up from the two."""
    names = sorted(k for k in cues if not k.startswith("H:"))
    pairs = {f"{a}&{b}": 1.0 for i, a in enumerate(names) for b in names[i + 1:]}
    return {**cues, **pairs}


# A numbered clause's title: "7. Term and Termination.", "12. Employment Solicitation:",
# "Section 5 Non-Solicitation." (after a line break or the end of the previous sentence).
_CLAUSE_TITLE = re.compile(r"(?:^|\n|[.;]\s)\s*(?:(?:Section|SECTION)\s+)?\d{1,2}(?:\.\d{1,2})*\.?\s+"
                           r"([A-Z][A-Za-z-]*(?:\s+(?:[A-Z][A-Za-z-]*|of|and|or|to|the|on|for|&)){0,5})"
                           r"\s*[.:]")
_TITLE_WINDOW = 1500


def _heading(text: str, start: int) -> dict[str, float]:
    """The words of the title of the numbered clause the duration sits in ("Term", "Non-
    Solicitation", "Standstill", "Notices"): the clause says whose duration it is. Looked for in
    the ``_TITLE_WINDOW`` characters before the mention only, so the cost stays linear."""
    titles = list(_CLAUSE_TITLE.finditer(text, max(0, start - _TITLE_WINDOW), start))
    if not titles:
        return {}
    return {f"H:{word}": 1.0 for word in _words(titles[-1].group(1)) if word.isalpha()}


# What a duration runs from: the agreement's own date ("from the date hereof", "after the
# Effective Date", "the two-year anniversary of this Agreement") or a later event ("after the
# Director ceases", "following termination").
_FROM_SIGNING = re.compile(
    r"\W{0,3}\s*(?:anniversary\s+)?(?:from|after|following|of)\s+(?:the\s+)?(?:date\s+(?:hereof|of\s+th(?:is|e)\s+"
    r"(?:letter\s+)?agreement|first\s+(?:above\s+)?written)|effective\s+date|execution|"
    r"commencement|this\s+(?:letter\s+)?agreement\b)", re.IGNORECASE)
_FROM_EVENT = re.compile(
    r"\W{0,3}\s*(?:anniversary\s+)?(?:from|after|following|of)\s+(?:the\s+)?(?:termination|expiration|date\s+(?:on\s+"
    r"which|that|of\s+(?:termination|disclosure|receipt))|receipt|disclosure|completion|closing|"
    r"last|[A-Z]\w*\s+ceases)", re.IGNORECASE)


_ENTITY_DESCRIPTION = re.compile(
    r"\W{0,3}\s*(?:an?|the)\s+(?:[A-Z][\w.]*\s+){0,4}?(?:corporation|company|limited|"
    r"partnership|bank|association|trust|entity|organization|individual|resident|national)\b")
_ADDRESS = re.compile(r"\W{0,3}\s*(?:\d{2,}|P\.?\s?O\.?\s+Box|c/o)\b|\W{0,3}\s*(?:[A-Z][\w.]*\s+)"
                      r"{0,3}(?:Street|Avenue|Road|Suite|Drive|Boulevard|Floor)\b")
_SIGNATURE = re.compile(r"(?:\bby\s*:|/s/|\bname\s*:|\bsignature\b|\btitle\s*:)")
_PREAMBLE_START = re.compile(r"\b(?:between|among|by and between|by and among)\b")


class _Layout:
    """The text's layout cues, computed once a document: where lines begin and end, the
    preamble (from the first 'between'/'among' to the end of its paragraph), and the signature
    part (after 'IN WITNESS' or a 'By:' line)."""

    def __init__(self, text: str):
        self.text = text
        folded = text[:4000].lower()
        match = _PREAMBLE_START.search(folded)
        if match:
            stop = re.compile(r"\n\s*\n|whereas|\bnow,? therefore|recitals|agree as follows")
            end = stop.search(folded, match.end())
            self.preamble = (match.start(), min(end.start() if end else match.end() + 800,
                                                match.end() + 1200))
        else:
            self.preamble = (-1, -1)
        at = text.find("IN WITNESS")
        self.witness = at if at >= 0 else len(text) + 1

    def line_of(self, start: int, end: int) -> tuple[str, str]:
        """(the line's text before the mention, the line's text after it)."""
        begin = self.text.rfind("\n", 0, start) + 1
        stop = self.text.find("\n", end)
        return self.text[begin:start], self.text[end:stop if stop >= 0 else len(self.text)]


@lru_cache(maxsize=8)
def _layout_of(text: str) -> _Layout:
    return _Layout(text)


def _layout(candidate: Candidate, layout: _Layout) -> dict[str, float]:
    """Line starts, whole lines, capitals, the preamble and the signature part."""
    feats: dict[str, float] = {}
    party = candidate.field == "party"
    for start, end in sorted(candidate.mentions)[:_MAX_MENTIONS]:
        feats.update(_mention_layout(layout, start, end, party))
    return feats


@lru_cache(maxsize=_MENTIONS_CACHED)
def _mention_layout(layout: _Layout, start: int, end: int, party: bool) -> dict[str, float]:
    """One mention's layout cues (shared: not to be changed by a caller)."""
    feats: dict[str, float] = {}
    text = layout.text
    low, high = layout.preamble
    before, after = layout.line_of(start, end)
    if not before.strip(" \t0123456789.()"):
        feats["line_start"] = 1.0
        if not after.strip(" \t,.:;"):
            feats["line_whole"] = 1.0
    spelled = text[start:end]
    if spelled.isupper() and len(spelled) > 3:
        feats["caps"] = 1.0
    if low <= start < high:
        feats["in_preamble"] = 1.0
    if start > layout.witness:
        feats["after_witness"] = 1.0
    if party:
        left = text[max(0, start - 40):start].lower()
        if _SIGNATURE.search(left):
            feats["signature_cue"] = 1.0
        right = text[end:end + 120]
        if _ENTITY_DESCRIPTION.match(right):
            feats["entity_description"] = 1.0
        if _ROLE_ALIAS.search(right[:60]):
            feats["alias_follows"] = 1.0
        if _ADDRESS.match(right):
            feats["address_after"] = 1.0
    return feats


def _relative(candidate: Candidate, candidates: list[Candidate], most: int,
              total: int) -> dict[str, float]:
    """The candidate against the others of its field in the document: the most mentioned,
    its share of the mentions, the only one."""
    count = len(candidate.mentions)
    feats = {"share": count / total if total else 0.0,
             f"candidates={min(len(candidates), 5)}": 1.0}
    if count == most:
        feats["most_mentioned"] = 1.0
    return feats


def featurise(candidates: list[Candidate], text: str) -> list[dict[str, float]]:
    """One feature dict per candidate of one field; ``rank`` orders them by first mention."""
    parties = any(c.field == "party" for c in candidates)  # only party shapes read the words
    lowercase_words = _lowercase_words_of(text) if parties else set()
    keys = {c.key for c in candidates}
    order = {id(c): rank for rank, c in enumerate(sorted(candidates, key=lambda c: c.first))}
    layout = _layout_of(text) if candidates else None
    most = max((len(c.mentions) for c in candidates), default=0)
    total = sum(len(c.mentions) for c in candidates)

    rows = []
    for candidate in candidates:
        feats = {f"kind={kind}": 1.0 for kind in candidate.kinds}
        feats.update(_context(candidate, text))
        feats.update(_position(candidate, text, order[id(candidate)]))
        feats.update(_shape(candidate, text, lowercase_words, keys))
        feats.update(_layout(candidate, layout))
        feats.update(_relative(candidate, candidates, most, total))
        rows.append(feats)
    return rows
