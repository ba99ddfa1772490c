"""A label's value as the document writes it: the span of the stored text that states it.

Production's prompt tells the model to "copy names as the document writes them", so a
fine-tuning target must do the same: a labeller's "Redprairie Holding Inc." is taught as the
page's "RedPrairie Holding, Inc.", and a Kleister token ``Nike_Inc.`` as "NIKE, Inc.". The
comparison is normalised for case, punctuation and spacing: both sides are reduced to their
letters and digits, lower-cased, and the value's reduced form must occur in the text's, starting
at the start of a word and ending at the end of one; ``and`` and ``&`` are the same word. The
span returned is the text's own, white space collapsed, with the full stop of a short final
abbreviation kept ("Inc.", "L.P."). None when the text never states the value: the caller
leaves the value out and counts it.
"""

from __future__ import annotations

import re

__all__ = ["document_spelling"]

_SPLIT = re.compile(r"[\s_]+")
_ABBREVIATIONS = frozenset({"inc", "corp", "co", "ltd", "llc", "lp", "llp", "plc", "na", "sa",
                            "ag", "nv", "bv", "jr", "sr", "bros", "pty", "ltda", "cie", "intl"})
"""Final words whose full stop belongs to the name ("Inc."), not to the sentence."""


def _variants(value: str) -> list[list[str]]:
    """The value's words, and the same with ``and`` <-> ``&`` (which reduces to nothing)."""
    words = [w for w in _SPLIT.split(value.strip()) if w]
    swapped = [w for w in words if w.lower() not in ("and", "&")]
    return [words] if swapped == words else [words, swapped]


def _reduced(text: str) -> tuple[str, list[int]]:
    """Letters and digits of ``text``, lower-cased, and each one's index in ``text``."""
    keep = [(i, c.lower()) for i, c in enumerate(text) if c.isalnum()]
    return "".join(c for _, c in keep), [i for i, _ in keep]


def document_spelling(value: str, text: str) -> str | None:
    """How ``text`` spells ``value`` (a plain value or a Kleister token), or None."""
    reduced, where = _reduced(text)
    for words in _variants(value):
        needle = _reduced(" ".join(words))[0]
        if not needle:
            continue
        at = reduced.find(needle)
        while at >= 0:
            start, end = where[at], where[at + len(needle) - 1] + 1
            if (start == 0 or not text[start - 1].isalnum()) and (
                    end == len(text) or not text[end].isalnum()):
                last = re.sub(r"\W", "", words[-1]).lower()
                if end < len(text) and text[end] == "." and (
                        value.rstrip().endswith(".") or last in _ABBREVIATIONS):
                    end += 1  # "Inc.", "Corp.", "L.P.": the abbreviation's own full stop
                return " ".join(text[start:end].split())
            at = reduced.find(needle, at + 1)
    return None
