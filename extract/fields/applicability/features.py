"""What the kind classifier reads in a document: the words of its head (where a title is), the
words and word pairs of the whole text (sublinear counts, scaled to a fixed length so a long
document does not win by length), whether the head carries an NDA-like title, and whether it
names another kind of agreement or paper (merger, lease, offer...).

Words are runs of three or more letters, lower-cased; the tokens of an EDGAR exhibit header
(``EX-10.3 4 dex103.htm``) are dropped, so the filing format says nothing about the kind.
Shared by training and run time: the model's weights are for exactly these names.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from itertools import filterfalse
from typing import NamedTuple

__all__ = ["HEAD_CHARS", "NDA_TITLE", "Counted", "counted", "features"]

HEAD_CHARS = 400
HEAD_VALUE = 1.0  # a head word's value (0.5 and 0.3 lowered grouped-fold recall)
BODY_LENGTH = 5.0
"""The body vector's length: at 1 its many small values were outweighed by the head's words
(grouped cross-validation, ``doclake fields cv --applicability``: recall 0.895 at 1, 0.973
at 5)."""
# A word is a run of three or more of a-z (``re.findall(r"[a-z]{3,}")``). Every byte but a-z
# made a space, a text's maximal runs of a-z are its whitespace-split tokens (a character outside
# ASCII, encoded as "?", ends a run as it ends a match).
_LETTERS_ONLY = bytes(byte if 0x61 <= byte <= 0x7a else 0x20 for byte in range(256))
_IGNORED = frozenset({"htm", "html", "txt", "dex", "exhibit", "exv", "execution", "version"})
_LOWER = "abcdefghijklmnopqrstuvwxyz"
# Runs too short to be words, and the ignored words: one set lookup a run, in C.
_SHORT_OR_IGNORED = frozenset([*_LOWER, *(a + b for a in _LOWER for b in _LOWER), *_IGNORED])
NDA_TITLE = re.compile(r"non-?\s?disclosure|nondisclosure|confidentiality(?:\s+and)?(?:\s+[\w-]+)"
                       r"{0,3}\s+agreement|confidential\s+disclosure|secrecy\s+agreement|"
                       r"proprietary\s+information")
OTHER_TITLE = re.compile(r"\b(?:merger|purchase|credit|loan|employment|lease|license|services|"
                         r"supply|subscription|settlement|operating|indemnification|minutes|"
                         r"offer|engagement|intent|policy|press|release)\b")


def _words(text: str) -> list[str]:
    """``re.findall(r"[a-z]{3,}", text)`` less ``_IGNORED``: the runs of three or more of a-z, each whole
    (a greedy match takes a run to its end). Found by a byte table and ``split`` rather than
    ``re``, which tried the pattern at every character (0.76 of a 2.3 ms score)."""
    runs = text.encode("ascii", "replace").translate(_LETTERS_ONLY).decode("ascii").split()
    return list(filterfalse(_SHORT_OR_IGNORED.__contains__, runs))


class Counted(NamedTuple):
    """A document as the classifier reads it, before the features are named: the head's words,
    the body's word and word-pair counts, and the head's two title cues."""

    head_words: set[str]
    counts: Counter[str]
    title: bool
    other_title: bool

    def body_norm(self) -> float:
        """The length of the body's (1 + log count) vector, counts of a value taken together."""
        return math.sqrt(sum(times * (1.0 + math.log(count)) ** 2
                             for count, times in Counter(self.counts.values()).items())) or 1.0


def _folded_head(lowered: str) -> str:
    """``" ".join(lowered.split())[:HEAD_CHARS]``, folding only as much of the text as it
    needs: a prefix's folding is the start of the whole text's (its last word may be cut, but
    only where the prefix ends), so once it is ``HEAD_CHARS`` long its first ``HEAD_CHARS``
    are the head."""
    size = 2 * HEAD_CHARS
    while size < len(lowered):
        folded = " ".join(lowered[:size].split())
        if len(folded) >= HEAD_CHARS:
            return folded[:HEAD_CHARS]
        size *= 2
    return " ".join(lowered.split())[:HEAD_CHARS]


def counted(text: str) -> Counted:
    """What ``features`` names, counted once: the scorer reads the counts of its weighted words
    only instead of naming every feature of the document.

    The words are read from the lower-cased text as it is: folding its white space (which the
    head needs) never joins or splits a run of letters, and folding the whole text cost a fifth
    of the score (0.3 of 1.6 ms an NDA). Only the head is folded, from a prefix."""
    lowered = text.lower()
    head = _folded_head(lowered)
    words = _words(lowered)
    counts = Counter(words)
    counts.update(map("_".join, zip(words, words[1:], strict=False)))
    return Counted(set(_words(head)), counts, NDA_TITLE.search(head) is not None,
                   OTHER_TITLE.search(head) is not None)


def features(text: str) -> dict[str, float]:
    """Feature name -> value: ``h:WORD`` (1 when the head has it), ``w:WORD`` and
    ``w:WORD_WORD`` (1 + log count, the body's vector scaled to ``BODY_LENGTH``), ``title``
    and ``other_title`` (1 when the head has such a title)."""
    document = counted(text)
    found: dict[str, float] = {f"h:{w}": HEAD_VALUE for w in document.head_words}
    scale = BODY_LENGTH / document.body_norm()
    found.update({f"w:{k}": scale * (1.0 + math.log(c)) for k, c in document.counts.items()})
    found["title"] = 1.0 if document.title else 0.0
    found["other_title"] = 1.0 if document.other_title else 0.0
    return found
