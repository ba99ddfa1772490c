"""What the LLM strategies send: the instructions, the document as text, the schema as Gemini reads it.

The schema's field descriptions are the instructions for each field; the prompts here only say
how to read the document and what to do when a value is absent. The schema goes to Gemini as
``response_json_schema``, pydantic's JSON schema unchanged (dicts, ``const`` and recursive models
included), wrapped with an ``evidence`` list: for each value, the quote that states it and its
page, which ``locate_values`` aligns loosely to the text (rapidfuzz) for the value's page, offset
and evidence. The answer is validated by the pydantic model itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

from pydantic import BaseModel

from extract.fields.base import PageText, Source
from extract.models.base import Prompt

__all__ = ["AGENT_SYSTEM", "DOUBTFUL_CONFIDENCE", "SINGLE_PASS_SYSTEM", "DocumentText", "Quote",
           "answer_schema",
           "document_text", "gemini_schema", "locate_values", "page_block", "single_pass_prompt"]

SINGLE_PASS_SYSTEM = """You extract structured fields from one document.
Answer with JSON that follows the response schema. Each field's description says what it holds
and how to write it. Use only what the document states; when a field's value is not stated,
answer null (or an empty list). Copy names as the document writes them."""

AGENT_SYSTEM = """You extract structured fields from one document that you cannot see at once.
Each turn, answer with JSON choosing one action:
- "page_count": ask how many pages the document has;
- "read_pages": ask for the text of the pages listed in "pages" (1-based, at most 5 at a time);
- "answer": give the fields in "answer", following its schema, when you are sure of them.
Read the pages you need (a party named on the first page may sign on the last); do not read pages
twice. Each field's description says what it holds; use null (or an empty list) for a value the
document does not state."""

PAGE_SEPARATOR = "\n\n"


def page_block(page: PageText) -> str:
    """A page as the model sees it: a marker line, then its stored Markdown."""
    return f"--- page {page.number} ---\n{page.text.strip()}"


@dataclass(frozen=True)
class DocumentText:
    """The text sent, and how much of the document it covers: ``sent_chars`` of ``total_chars``
    (the page blocks' characters), so a truncation can be recorded with its size."""

    text: str
    sent_chars: int
    total_chars: int

    @property
    def truncated(self) -> bool:
        return self.sent_chars < self.total_chars

    def note(self) -> str | None:
        if not self.truncated:
            return None
        return f"document text truncated: {self.sent_chars} of {self.total_chars} characters sent"


def document_text(pages: Sequence[PageText], max_chars: int) -> DocumentText:
    """The pages in order, cut at ``max_chars`` (a whole page's marker is kept; the cut page ends
    with a line saying so, so the model knows the rest is missing)."""
    blocks = [page_block(page) for page in pages]
    total = sum(map(len, blocks)) + len(PAGE_SEPARATOR) * max(len(blocks) - 1, 0)
    whole = PAGE_SEPARATOR.join(blocks)
    if total <= max_chars:
        return DocumentText(whole, total, total)
    cut = whole[:max_chars]
    return DocumentText(cut + "\n[... the rest of the document is not shown ...]",
                        len(cut), total)


def single_pass_prompt(pages: Sequence[PageText], schema: type[BaseModel], max_chars: int,
                       *, system: str | None = None) -> Prompt:
    """The single-pass strategy's prompt: the system prompt, the document's text and the schema
    as the response schema. One builder for inference and for fine-tuning sets
    (``infra.evals_wiring.prompt_builder``), so a tuned model is trained on what it is sent."""
    document = document_text(pages, max_chars)
    text = (f"Extract the fields of the schema {schema.__name__} from this document.\n\n"
            f"{document.text}")
    return Prompt(text, system=SINGLE_PASS_SYSTEM if system is None else system,
                  response_schema=answer_schema(schema))


def gemini_schema(schema: type[BaseModel]) -> dict[str, Any]:
    """The record's JSON schema as pydantic writes it, sent as ``response_json_schema``: a
    ``dict[str, X]`` field (``additionalProperties``), a ``Literal`` (``const``) and a recursive
    model (``$ref`` into ``$defs``) reach the model intact; nothing is inlined or dropped."""
    return schema.model_json_schema()


EVIDENCE_ITEM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "field": {"type": "string", "description": "The field the value belongs to."},
        "value_index": {"type": "integer", "description": "The value's position in a list "
                        "field (0 for a single value)."},
        "quote": {"type": "string", "description": "The words of the document that state the "
                  "value, copied exactly as written (at most 200 characters)."},
        "page": {"type": "integer", "description": "The 1-based page the quote is on."},
    },
    "required": ["field", "quote", "page"],
}


def answer_schema(schema: type[BaseModel]) -> dict[str, Any]:
    """The response schema of an answer: the record under ``fields`` and, for each value, the
    quote that states it and its page under ``evidence`` (aligned to the text by
    ``locate_values``). The record's ``$defs`` move to the root, where its ``$ref`` point."""
    record = gemini_schema(schema)
    definitions = record.pop("$defs", None)
    wrapper: dict[str, Any] = {
        "type": "object",
        "properties": {
            "fields": record,
            "evidence": {"type": "array", "items": EVIDENCE_ITEM, "description": "For each "
                         "value given in fields, the quote of the document that states it."},
        },
        "required": ["fields", "evidence"],
    }
    if definitions:
        wrapper["$defs"] = definitions
    return wrapper


@dataclass(frozen=True)
class Quote:
    """What the model gave as evidence for one value: the words and the page it says they are on."""

    field: str
    value_index: int
    quote: str
    page: int | None


QUOTE_CUTOFF = 80.0  # rapidfuzz partial ratio (0-100) for a quote to count as found
VALUE_CUTOFF = 90.0  # stricter for a bare value, which is short and may match anything


def _align(needle: str, pages: Sequence[PageText], first: int | None,
           cutoff: float) -> tuple[int, int, int] | None:
    """(page number, start, end) of the closest match of ``needle`` (case-blind, loose: line
    breaks, a changed letter), trying the page named first; None under ``cutoff``."""
    from rapidfuzz import fuzz

    needle = " ".join(needle.lower().split())
    if len(needle) < 2:
        return None
    ordered = sorted(pages, key=lambda page: page.number != first)
    best: tuple[float, int, int, int] | None = None
    for page in ordered:
        text = page.text.lower()
        exact = text.find(needle)
        if exact >= 0:
            return page.number, exact, exact + len(needle)
        found = fuzz.partial_ratio_alignment(needle, text, score_cutoff=cutoff)
        if found is not None and (best is None or found.score > best[0]):
            best = (found.score, page.number, found.dest_start, found.dest_end)
        if best is not None and page.number == first:
            break  # the model's page holds it: believe the page
    return best[1:] if best else None


DOUBTFUL_CONFIDENCE = 0.05
"""The confidence of an LLM value whose evidence does not state it, or that no page states: far
under any floor the rules' calibration chooses, so ``DOCLAKE_FIELDS_MIN_CONFIDENCE`` set to that
floor drops it, and low enough to sort first in a review."""


def locate_values(record: BaseModel, pages: Sequence[PageText],
                  quotes: Sequence[Quote] = ()) -> tuple[Source, ...]:
    """Where each value was found: the model's evidence quote aligned loosely to the page text
    (its page tried first), else the value's own text (a name broken across lines, a changed
    character); the matched text is kept as the evidence, with its start and end offsets in the
    page's stored text. A quote that does not state its value (``Delaware`` quoted as "...the
    State of New York", checked by ``extract.fields.quotes``, the test the fine-tuning export's
    quotes pass) is flagged ``evidence_lacks_value`` and a value found nowhere ``not_found``,
    both with ``DOUBTFUL_CONFIDENCE``; the others carry no confidence (the LLMs give none)."""
    from extract.fields.quotes import states

    by_value = {(q.field, q.value_index): q for q in quotes if q.quote.strip()}
    schema = type(record)
    sources = []
    for name in schema.model_fields:
        value = getattr(record, name)
        items = value if isinstance(value, list | tuple) else [value]
        for index, item in enumerate(items):
            if item is None:
                continue
            quote = by_value.get((name, index))
            found = _align(quote.quote, pages, quote.page, QUOTE_CUTOFF) if quote else None
            flag = None
            if found is not None:
                number, start, end = found
                page_text = next(p.text for p in pages if p.number == number)
                if isinstance(item, str | date) and not states(schema, name, item,
                                                                 page_text[start:end]):
                    flag = "evidence_lacks_value"
            if found is None and isinstance(item, str) and item.strip():
                found = _align(item, pages, None, VALUE_CUTOFF)
            if found is None:
                sources.append(Source(name, index, flag="not_found",
                                      confidence=DOUBTFUL_CONFIDENCE))
                continue
            number, start, end = found
            text = next(p.text for p in pages if p.number == number)
            sources.append(Source(name, index, number, start, evidence=text[start:end],
                                  evidence_start=start, evidence_end=end, flag=flag,
                                  confidence=DOUBTFUL_CONFIDENCE if flag else None))
    return tuple(sources)
