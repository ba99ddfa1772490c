"""A strategy for tests, registered under a name with ``monkeypatch.setitem(STRATEGIES, ...)``.

``BEHAVIOUR`` decides what it answers (a record, or an error to raise); ``CALLS`` counts the
extractions it ran, so a test can prove a redelivery did no work.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar

from pydantic import BaseModel, ValidationError

from extract.fields.base import Extraction, PageText, Source, TokenUsage

CALLS: list[int] = []


class NdaInvoice(BaseModel):
    """A user's schema for NDAs that the offline rules have no rules for (``--fields
    support.fields_fakes:NdaInvoice``)."""

    document_kind: ClassVar[str] = "nda"
    number: str | None = None

BEHAVIOUR: Callable[[Sequence[PageText], type[BaseModel]], Extraction] | None = None


def words_as_fields(pages: Sequence[PageText], schema: type[BaseModel]) -> Extraction:
    """Fill every list field with the first page's words, and every other field the first word
    is valid for (so the NDA schema gets a jurisdiction and parties, no date or term)."""
    words = pages[0].text.split() if pages else []
    values: dict[str, object] = {}
    for name, info in schema.model_fields.items():
        if "list" in str(info.annotation):
            values[name] = words
            continue
        try:
            schema.model_validate({**values, name: words[0] if words else None})
        except ValidationError:
            continue
        values[name] = words[0] if words else None
    sources = tuple(Source(name, i, 1, pages[0].text.find(w)) for name in values
                    for i, w in enumerate(words))
    return Extraction(schema.model_validate(values), sources, TokenUsage(120, 30), "fake-1")


class FakeStrategy:
    name = "fake"
    model_version = "fake-1"

    async def extract(self, pages: Sequence[PageText], schema: type[BaseModel]) -> Extraction:
        CALLS.append(1)
        return (BEHAVIOUR or words_as_fields)(pages, schema)


def build(ctx, delivery) -> FakeStrategy:
    return FakeStrategy()
