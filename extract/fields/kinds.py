"""Which documents a schema applies to: each schema names its kind of document, an offline
scorer decides per document, and a document not of the kind gets no values.

A schema says ``document_kind: ClassVar[str] = "nda"``; one without a kind applies to every
document. A kind's scorer reads the document's text and gives a probability-like score in
[0, 1] (a logistic over a few counts, weights set by hand and checked on the Kleister NDAs and the
shared corpus of other files, see the README); the document is of the kind at ``THRESHOLD`` or
above. The decision and its score are recorded with the result either way, and a document that
is not of the kind is settled ``not_applicable``: no strategy runs, no model is paid, no value is
published. Milliseconds a document, no network.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pydantic import BaseModel

from extract.errors import TerminalError
from extract.fields.base import PageText

__all__ = ["KINDS", "THRESHOLD", "Applicability", "applicability", "document_kind", "nda_score"]

THRESHOLD = 0.5
_HEAD = 3000  # where a title is looked for: the first characters of the document

_NDA_TITLE = re.compile(r"non-?\s?disclosure|nondisclosure|confidentiality(?:\s+and)?(?:\s+[\w-]+){0,3}\s+"
                        r"agreement|confidential\s+disclosure|secrecy\s+agreement|"
                        r"proprietary\s+information")
_COUNTS = {name: re.compile(pattern) for name, pattern in (
    ("confidential", r"confidential"),
    ("disclose", r"disclos"),
    ("agreement", r"\bagreement\b"),
    ("parties", r"recipient|receiving\s+party|disclosing\s+party|\bparties\b"),
    ("governing", r"governed\s+by|laws\s+of\s+the\s+state|governing\s+law"),
)}


def nda_score(text: str) -> float:
    """How much ``text`` reads like a non-disclosure agreement: a title in its head, and the
    words an NDA cannot do without (confidential, disclose, agreement, its parties, a governing
    law), counted on a log scale so a long document does not win by length alone."""
    folded = text.lower()
    counts = {name: len(pattern.findall(folded)) for name, pattern in _COUNTS.items()}
    titled = _NDA_TITLE.search(folded, 0, _HEAD) is not None
    z = (-7.0 + 4.5 * titled + 0.6 * math.log1p(len(_NDA_TITLE.findall(folded)))
         + 1.0 * math.log1p(counts["confidential"]) + 0.9 * math.log1p(counts["disclose"])
         + 0.8 * math.log1p(counts["agreement"]) + 0.3 * math.log1p(counts["parties"])
         + 0.8 * (counts["governing"] > 0))
    if not counts["disclose"] or not counts["agreement"]:  # an NDA states both, always
        z -= 4.0
    return 1.0 / (1.0 + math.exp(-z))


KINDS: dict[str, Callable[[str], float]] = {"nda": nda_score}


@dataclass(frozen=True)
class Applicability:
    """The decision for one document and one schema: ``kind`` None means the schema names none
    (it applies to everything, with no score)."""

    kind: str | None
    applies: bool
    score: float | None


def document_kind(schema: type[BaseModel]) -> str | None:
    """The kind of document ``schema`` is for (its ``document_kind`` class attribute)."""
    kind = getattr(schema, "document_kind", None)
    return kind if isinstance(kind, str) and kind else None


def applicability(schema: type[BaseModel], pages: Sequence[PageText]) -> Applicability:
    """Whether ``schema`` applies to the document of ``pages``, and the score behind it."""
    kind = document_kind(schema)
    if kind is None:
        return Applicability(None, True, None)
    scorer = KINDS.get(kind)
    if scorer is None:
        raise TerminalError(f"{schema.__name__} is for documents of kind {kind!r}, which has no "
                            f"scorer; the kinds are {', '.join(sorted(KINDS))}",
                            error_type="schema_unavailable")
    score = scorer("\n\n".join(page.text for page in pages))
    return Applicability(kind, score >= THRESHOLD, round(score, 4))
