"""Regex building blocks for the candidate generators, shaped for speed without changing what
they match (the rules run once per document inside the pipeline's fields stage)."""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache

__all__ = ["alternation", "compile_scan", "lowered", "matches_at", "JitScan", "CharMatch"]


def compile_scan(pattern: str) -> re.Pattern[str] | JitScan:
    """``pattern`` compiled to scan whole documents: with PCRE2's JIT (the ``pcre2`` package),
    which runs the party patterns 4x to 9x faster than ``re``; ``re`` where it is missing.

    Only patterns both engines read alike go here (Python's syntax: named groups, possessive
    quantifiers, lookbehind; no ``.``, no case folding), and ``tests/test_fields_patterns.py``
    checks every one against ``re`` on random text; on the 254 Kleister NDAs every match is the
    same. Offsets are characters in both engines.
    """
    try:
        import pcre2  # noqa: F401
    except ImportError:  # no wheel for this platform: the same matches, slower
        return re.compile(pattern)
    return JitScan(pattern)


def _raw_spans() -> Callable | None:
    """The binding's function that reads a match's group span in bytes: ``None`` if this
    version of the binding has none, or keeps its matches' data elsewhere (both are its
    internals: version 0.7's)."""
    import pcre2

    try:
        from pcre2 import _cy
    except ImportError:
        return None
    if "_pcre2_match_data" not in getattr(pcre2.Match, "__slots__", ()):
        return None
    return getattr(_cy, "match_substring_span_bynumber", None)


class JitScan:
    """A PCRE2 pattern that matches as ``re`` does: before a scan, the few characters the two
    engines class differently are replaced, one for one, by a character both class as ``re``
    does. They are ``\\x1c``-``\\x1f`` (whitespace to ``re`` only), combining marks and the
    newest Unicode digits (word characters to PCRE2 only) and U+180E (whitespace to PCRE2 only).
    Spans are ``re``'s; a group's text differs only where such a character sat inside a run of
    whitespace, which the generators collapse anyway."""

    def __init__(self, pattern: str) -> None:
        import pcre2

        self.pattern = pattern
        self._raw_span = _raw_spans()
        source = pattern if self._raw_span is not None else pattern.encode("utf-8")
        self._compiled = pcre2.compile(source, flags=pcre2.UNICODE, jit=True)
        self.groups = self._compiled.groups
        self._group_numbers = dict(self._compiled.groupindex)

    def finditer(self, text: str) -> Iterator[CharMatch]:
        """The matches over ``text``, offsets in characters.

        The subject is the ``str``: for one, the binding tells PCRE2 the UTF-8 is valid
        (Python made it), where for ``bytes`` PCRE2 checks it again at every match, from the
        match's start to the text's end (quadratic: 44 % of the company scan's instructions,
        a seventh of the rules'). The spans are read in bytes, not through the binding's
        ``str`` spans, which walk the text from its start for every offset (quadratic too: 10 s
        of a 363-page document's rules), and mapped through the text's multi-byte characters
        (``_utf8``, once per text): none in ASCII text. A binding without the byte spans gets
        the ``bytes`` subject and its checks: the same matches."""
        agreed = _agreed(text)
        data, to_char = _utf8(agreed)
        subject = agreed if self._raw_span is not None else data
        for match in self._compiled.finditer(subject):
            yield CharMatch(match, agreed, to_char, data, self)

    def byte_span(self, match, data: bytes, group: int | str) -> tuple[int, int]:
        """``group``'s span in ``match`` as byte offsets into ``data`` (-1s: it took no part)."""
        if self._raw_span is None:  # the binding's spans over the bytes subject
            return match.span(group)
        number = self._group_numbers[group] if isinstance(group, str) else group
        if not 0 <= number <= self.groups:
            raise IndexError("no such group")
        return self._raw_span(match._pcre2_match_data, data, number)


class CharMatch:
    """A PCRE2 match, read as ``re.Match`` reads one over the text. Each group's span is asked
    of PCRE2 once, in bytes, and mapped to characters once, however often the generators read
    it."""

    __slots__ = ("_match", "_text", "_to_char", "_data", "_scan", "_spans")

    def __init__(self, match, text: str, to_char: Callable[[int], int], data: bytes,
                 scan: JitScan) -> None:
        self._match, self._text, self._to_char, self._data = match, text, to_char, data
        self._scan = scan
        self._spans: dict[int | str, tuple[int, int]] = {}

    def span(self, group: int | str = 0) -> tuple[int, int]:
        span = self._spans.get(group)
        if span is None:
            start, end = self._scan.byte_span(self._match, self._data, group)
            span = (-1, -1) if start < 0 else (self._to_char(start), self._to_char(end))
            self._spans[group] = span
        return span

    def start(self, group: int | str = 0) -> int:
        return self.span(group)[0]

    def end(self, group: int | str = 0) -> int:
        return self.span(group)[1]

    def group(self, group: int | str = 0) -> str | None:
        start, end = self.span(group)
        return None if start < 0 else self._text[start:end]


def _same(offset: int) -> int:
    return offset


@lru_cache(maxsize=8)
def _utf8(text: str) -> tuple[bytes, Callable[[int], int]]:
    """``text`` in UTF-8, and the map from a byte offset (at a character's start) to its
    character offset: the bytes each multi-byte character adds, summed up to the offset. The
    multi-byte characters are found by ``str.find``, each distinct one from its bytes (a few
    curly quotes and dashes in an English text), not by a scan of every character in Python's
    regex engine (0.14 ms of a 19,000-character NDA, twice a document); a text with many of
    them (another script) is scanned once instead."""
    data = text.encode("utf-8")
    if len(data) == len(text):
        return data, _same
    starts: list[int] = []  # byte offset of each multi-byte character
    added: list[int] = []  # bytes added by it and every one before it
    extra = 0
    wide = _chars_of(data, _ASCII_BYTES)
    if len(wide) > _FEW_WIDE:  # a text in another script: one scan, not a search a character
        offsets: Iterable[int] = (found.start() for found in _NON_ASCII.finditer(text))
    else:
        offsets = sorted(at for char in wide for at in _finds(text, char))
    for at in offsets:
        starts.append(at + extra)
        extra += len(text[at].encode("utf-8")) - 1
        added.append(extra)

    def to_char(offset: int) -> int:
        before = bisect.bisect_left(starts, offset)
        return offset - (added[before - 1] if before else 0)

    return data, to_char


def _chars_of(data: bytes, dropped: bytes) -> set[str]:
    """The characters of UTF-8 ``data`` left once the ASCII bytes in ``dropped`` are deleted (a
    multi-byte character's bytes are never ASCII, so every one survives whole)."""
    return set(data.translate(None, dropped).decode("utf-8"))


def _finds(text: str, char: str) -> Iterator[int]:
    """Every offset of ``char`` in ``text``."""
    at = text.find(char)
    while at >= 0:
        yield at
        at = text.find(char, at + 1)


_FEW_WIDE = 32  # distinct multi-byte characters found one by one (each costs a pass)
_NON_ASCII = re.compile(r"[^\x00-\x7f]")  # the characters UTF-8 writes in more than a byte
_ASCII_BYTES = bytes(range(0x80))  # deleted, they leave the characters UTF-8 writes in more bytes
# Characters outside printable ASCII (\x1c-\x1f, \x7f and every non-ASCII one) are the only ones
# the engines may class differently: deleting the rest leaves them.
_USUAL_BYTES = bytes([*range(0x1c), *range(0x20, 0x7f)])
_CLASSES = (r"\s", r"\w", r"\d")  # what the scans' patterns lean on: whitespace, word, digit
_RE_CLASSES = [re.compile(c) for c in _CLASSES]


@lru_cache(maxsize=1)
def _jit_classes() -> list:
    import pcre2

    return [pcre2.compile(c, flags=pcre2.UNICODE) for c in _CLASSES]


@lru_cache(maxsize=4096)
def _stand_in(char: str) -> str | None:
    """A character both engines class as ``re`` classes ``char``; None if they already agree."""
    wanted = tuple(bool(c.fullmatch(char)) for c in _RE_CLASSES)
    seen = tuple(bool(c.match(char)) for c in _jit_classes())
    if wanted == seen:
        return None
    space, word, digit = wanted
    # Vertical tab: whitespace to both, in no explicit class of ours (those name space, tab and
    # newline). DEL: nothing to both. The others never differ this way (checked in the tests).
    return "\x0b" if space else "\x7f" if not (word or digit) else None


@lru_cache(maxsize=8)
def _agreed(text: str) -> str:
    """``text`` as every scan of one document sees it (computed once per text)."""
    table = {}
    for char in _chars_of(text.encode("utf-8"), _USUAL_BYTES):
        stand_in = _stand_in(char)
        if stand_in is not None:
            table[ord(char)] = stand_in
    return text.translate(table) if table else text


_ASCII_LOWER = str.maketrans({chr(c): chr(c + 32) for c in range(ord("A"), ord("Z") + 1)})


@lru_cache(maxsize=8)
def lowered(text: str) -> str:
    """``text`` lower-cased with every offset unchanged, computed once per document.

    The case-blind patterns run case-sensitive (lower-case) over this instead of with
    ``re.IGNORECASE``, which compares every character through a case table: 2.6x faster on the
    US-state alternation, the same matches. ``str.lower`` is used when it keeps the length (it
    then maps each character to one); otherwise (a dotted capital I, say) only ASCII is lowered.
    """
    folded = text.lower()
    return folded if len(folded) == len(text) else text.translate(_ASCII_LOWER)


def alternation(words: Iterable[str]) -> str:
    """``words`` as one regex alternation shaped as a prefix tree: 'New (?:Jersey|York|...)',
    'sep(?:t(?:ember|)|)'. It matches what 'A|B|...' sorted longest first matches (two words that
    match at one place are prefixes of each other, and the tree tries the longer first), without
    re trying every word at every position: re does not factor an alternation itself. Words are
    lower-cased (match them against ``lowered`` text); a space matches any run of whitespace."""
    tree: dict = {}
    for word in words:
        node = tree
        for char in word.lower():
            node = node.setdefault(char, {})
        node[""] = {}

    def pattern(node: dict) -> str:
        branches = [(r"\s+" if char == " " else re.escape(char)) + pattern(child)
                    for char, child in sorted(node.items()) if char]
        if not branches:
            return ""
        if "" in node:  # a word ends here and a longer one goes on: the longer is tried first
            branches.append("")
        return branches[0] if len(branches) == 1 else f"(?:{'|'.join(branches)})"

    return pattern(tree)


def matches_at(pattern: re.Pattern[str], text: str, starts: Iterable[int]) -> Iterator[re.Match[str]]:
    """What ``pattern.finditer(text)`` yields, trying only the positions in ``starts`` (sorted).

    Exact when every position at which ``pattern`` can match is in ``starts``. ``re`` skips
    ahead quickly only for a pattern that begins with a literal or a character set; one that
    begins with ``\\b`` or a lookaround is tried at every position of the text. A date cannot
    begin anywhere but at a run of digits or a month's first three letters, which one fast scan
    finds. ``match`` at a position sees the text before it, so ``\\b`` and lookbehinds behave as
    in ``finditer``.
    """
    end = 0
    for start in starts:
        if start < end:
            continue  # inside the previous match: finditer resumes after it
        match = pattern.match(text, start)
        if match is not None:
            end = match.end() if match.end() > start else start + 1
            yield match
