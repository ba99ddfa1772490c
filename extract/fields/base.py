"""The Strategy port: a document's page texts in, a validated schema instance out.

Every strategy (offline rules, single-pass LLM, agentic LLM) returns the same ``Extraction``: the
record, where each value was found when the strategy knows (page and character offset, so the
quality team can show a failure in context), the tokens it spent and the version to record. The
port is async because the LLM strategies wait on the network; an offline strategy simply does its
work inside ``extract``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Protocol, runtime_checkable

from pydantic import BaseModel

__all__ = ["Extraction", "FieldValue", "KindChecking", "PageText", "Source", "Strategy",
           "TokenUsage", "field_values"]


@dataclass(frozen=True)
class PageText:
    """One page's text as the pipeline stored it; ``number`` is 1-based."""

    number: int
    text: str


@dataclass(frozen=True)
class Source:
    """Where one value was found: ``value_index`` is its position in a list field (else 0);
    ``char_offset`` counts characters from the start of that page's text; ``evidence`` is the
    text there that decided the value (the best-scoring mention with its words around, for the
    rules; the aligned quote, for an LLM), and it is exactly ``page_text[evidence_start:
    evidence_end]``; ``confidence`` a calibrated probability that the value is right when the
    strategy has one; ``flag`` a reason to doubt the value (``evidence_lacks_value``: the
    model's quote does not state it; ``not_found``: no page states it)."""

    field: str
    value_index: int
    page_number: int | None = None
    char_offset: int | None = None
    evidence: str | None = None
    confidence: float | None = None
    evidence_start: int | None = None
    evidence_end: int | None = None
    flag: str | None = None


@dataclass(frozen=True)
class TokenUsage:
    input: int = 0
    output: int = 0


@dataclass(frozen=True)
class Extraction:
    """A strategy's answer: ``fields`` is always an instance of the schema it was asked for."""

    fields: BaseModel
    sources: tuple[Source, ...] = ()
    token_usage: TokenUsage = field(default_factory=TokenUsage)
    model_version: str = ""

    def source_of(self, name: str, value_index: int = 0) -> Source | None:
        return next((s for s in self.sources
                     if s.field == name and s.value_index == value_index), None)


class Strategy(Protocol):
    """Extracts one schema from one document. Raises ``TransientError`` when trying again can
    help (a provider timed out) and ``TerminalError`` when it cannot (the schema is not one this
    strategy supports, the output stayed invalid after its retries)."""

    name: str
    model_version: str

    async def extract(self, pages: Sequence[PageText], schema: type[BaseModel]) -> Extraction: ...


@dataclass(frozen=True)
class FieldValue:
    """One extracted value as text, the shape of a ``result_fields`` row for any schema."""

    field: str
    value: str
    value_index: int


def _text(value: object) -> str:
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    return str(value)


def field_values(record: BaseModel) -> list[FieldValue]:
    """Flatten a record: one row per scalar, one per list item, nothing for None or []."""
    rows = []
    for name in type(record).model_fields:
        value = getattr(record, name)
        items = value if isinstance(value, list | tuple) else [value]
        rows += [FieldValue(name, _text(item), index)
                 for index, item in enumerate(items) if item is not None]
    return rows


@runtime_checkable
class KindChecking(Protocol):
    """A strategy that checks the document's kind where it extracts, in one call: the offline
    rules, whose extraction is a CPU call of milliseconds like the kind score. As two calls, an
    NDA's fields waited twice for the short lane (0.35 and 0.19 s at the median of 83 NDAs in a
    run), each with its pages pickled. Returns the kind's score, and the extraction for a
    document of the kind (None for any other: nothing extracted). Only strategies built before
    the check are asked (``extract.fields.strategies.OFFLINE``): a model strategy is built only
    for a document of the kind, never paid for another."""

    async def extract_of_kind(self, kind: str, pages: Sequence[PageText],
                              schema: type[BaseModel]) -> tuple[float, Extraction | None]: ...
