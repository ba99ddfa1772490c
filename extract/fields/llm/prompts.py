"""What the LLM strategies send: the instructions, the document as text, the schema as Gemini reads it.

The schema's field descriptions are the instructions for each field; the prompts here only say
how to read the document and what to do when a value is absent. The schema goes to Gemini as a
response schema, an OpenAPI subset: pydantic's JSON schema is inlined (no ``$ref``) and stripped of
the keywords the Gemini API refuses or ignores (``additionalProperties``, which ``extra="forbid"``
adds and the API answers with a 400; ``title``; ``default``; formats other than ``date-time``).
The answer is validated by the pydantic model itself, so nothing checked there is lost.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from extract.errors import TerminalError
from extract.fields.base import PageText, Source
from extract.models.base import Prompt

__all__ = ["AGENT_SYSTEM", "SINGLE_PASS_SYSTEM", "DocumentText", "document_text", "gemini_schema",
           "locate_values", "page_block", "single_pass_prompt"]

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
                  response_schema=gemini_schema(schema))


_DROPPED = frozenset({"additionalProperties", "title", "default", "$defs", "$schema",
                      "examples", "const"})
_FORMATS = frozenset({"date-time", "enum"})


def gemini_schema(schema: type[BaseModel]) -> dict[str, Any]:
    """The pydantic model's JSON schema as Gemini's ``responseSchema`` accepts it."""
    raw = schema.model_json_schema()
    definitions = raw.get("$defs", {})

    def clean(node: Any, depth: int) -> Any:
        if depth > 12:
            raise TerminalError(f"{schema.__name__} nests too deep (a recursive model?) for a "
                                "model's response schema", error_type="unsupported_schema")
        if isinstance(node, list):
            return [clean(item, depth + 1) for item in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            target = definitions[node["$ref"].rsplit("/", 1)[-1]]
            merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
            return clean(merged, depth + 1)
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in _DROPPED or (key == "format" and value not in _FORMATS):
                continue
            if key == "properties":  # keys are field names, not keywords: keep every one
                out[key] = {name: clean(sub, depth + 1) for name, sub in value.items()}
            else:
                out[key] = clean(value, depth + 1)
        return out

    return clean(raw, 0)


def locate_values(record: BaseModel, pages: Sequence[PageText]) -> tuple[Source, ...]:
    """Where each text value appears, found by its first case-insensitive occurrence in the
    pages (dates and numbers, which the model rewrites, are left unlocated)."""
    lowered = [(page.number, page.text.lower()) for page in pages]
    sources = []
    for name in type(record).model_fields:
        value = getattr(record, name)
        items = value if isinstance(value, list | tuple) else [value]
        for index, item in enumerate(items):
            if not isinstance(item, str) or not item.strip():
                continue
            needle = item.lower()
            for number, text in lowered:
                offset = text.find(needle)
                if offset >= 0:
                    sources.append(Source(name, index, number, offset))
                    break
    return tuple(sources)
