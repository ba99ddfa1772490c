"""The ``agentic`` strategy: the model reads the document on demand and answers when it is sure.

A small tool protocol over structured output rather than Gemini function calling, so it runs
through the same one-prompt port, fallback chain and ledger as every other call (and any provider
that does structured output can serve it). Each turn the model answers one JSON step:

- ``{"action": "page_count"}``: we tell it how many pages there are;
- ``{"action": "read_pages", "pages": [2, 3]}``: we show those pages' stored Markdown (at most
  ``pages_per_turn`` a turn, ``max_chars`` over the whole conversation, the cut recorded on the
  ledger rows);
- ``{"action": "answer", "answer": {...}}``: the record, validated by the schema.

Each call carries the conversation so far (the API is stateless). Bounds: after ``max_turns - 1``
tool turns the response schema becomes the record's schema itself, so the model can only answer;
an invalid step or answer is told what was wrong and counts against ``attempts``, after which the
extraction fails with ``invalid_output``. Every call is on the ledger with purpose
``extract_fields``. The write-up measured this loop at about twice single-pass's cost and time,
with no better accuracy on NDAs: it earns its keep on long documents whose text will not fit.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, cast

from pydantic import BaseModel, ValidationError

from extract.fields.base import Extraction, PageText
from extract.fields.llm.prompts import (
    AGENT_SYSTEM,
    EVIDENCE_ITEM,
    Quote,
    answer_schema,
    gemini_schema,
    locate_values,
    page_block,
)
from extract.fields.llm.shared import (
    DEFAULT_ATTEMPTS,
    DEFAULT_MAX_CHARS,
    InvalidOutput,
    TallyLedger,
    ask,
    call_site,
    models_for,
    problems,
    read_answer,
    validate,
)
from extract.fields.version import code_digest, llm_version
from extract.models.base import CallSite, Prompt
from extract.models.fallback import FallbackModels
from extract.ports import EventSink

if TYPE_CHECKING:
    from extract.context import Delivery, HandlerContext

__all__ = ["AgentStep", "Agentic", "build", "step_schema"]

DEFAULT_MAX_TURNS = 8
PAGES_PER_TURN = 5


class AgentStep(BaseModel):
    action: Literal["page_count", "read_pages", "answer"]
    pages: list[int] = []
    answer: dict[str, Any] | None = None
    evidence: list[dict[str, Any]] = []


def step_schema(schema: type[BaseModel]) -> dict[str, Any]:
    """The response schema of a tool turn: an action, the pages it wants, or the record."""
    record = gemini_schema(schema)
    definitions = record.pop("$defs", None)
    step: dict[str, Any] = {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["page_count", "read_pages", "answer"],
                       "description": "What you do this turn."},
            "pages": {"type": "array", "items": {"type": "integer"},
                      "description": "For read_pages: the 1-based page numbers to read."},
            "answer": {"anyOf": [record, {"type": "null"}],
                       "description": "For answer: the extracted fields."},
            "evidence": {"type": "array", "items": EVIDENCE_ITEM, "description": "For answer: "
                         "for each value, the quote of the document that states it."},
        },
        "required": ["action"],
    }
    if definitions:
        step["$defs"] = definitions
    return step


class Agentic:
    """Several calls per document: tool requests, then an answer."""

    name = "agentic"

    def __init__(self, models: FallbackModels, sink: EventSink, site: CallSite, *,
                 max_turns: int = DEFAULT_MAX_TURNS, attempts: int = DEFAULT_ATTEMPTS,
                 max_chars: int = DEFAULT_MAX_CHARS, pages_per_turn: int = PAGES_PER_TURN):
        self.models = models
        self.sink = sink
        self.site = site
        self.max_turns = max(1, max_turns)
        self.attempts = max(1, attempts)
        self.max_chars = max_chars
        self.pages_per_turn = pages_per_turn
        self.model_version = models.primary.name

    def version(self, schema: type[BaseModel], model: str | None = None) -> str:
        """The model plus the hash of the system prompt, the schema and this code."""
        return llm_version(model or self.model_version, AGENT_SYSTEM, schema,
                           code_digest(__name__, "extract.fields.llm.prompts"))

    async def extract(self, pages: Sequence[PageText], schema: type[BaseModel]) -> Extraction:
        ledger = TallyLedger(self.sink)
        by_number = {page.number: page for page in pages}
        shown: set[int] = set()
        budget = self.max_chars
        transcript: list[str] = []
        errors: list[str] = []
        turns = 0
        final_schema, tool_schema = answer_schema(schema), step_schema(schema)
        header = (f"Extract the fields of the schema {schema.__name__} from a document.\n"
                  "What happened so far:\n")
        while True:
            forced = turns >= self.max_turns - 1
            ending = ("This is your last turn: answer now with the fields as JSON."
                      if forced else "Choose your next action.")
            text = header + ("\n\n".join(transcript) or "(nothing yet)") + "\n\n" + ending
            reply = await ask(self.models, Prompt(text, system=AGENT_SYSTEM, response_schema=(
                final_schema if forced else tool_schema)), self.site, ledger)
            try:
                if forced:
                    record, quotes = read_answer(reply.text, schema)
                    return self._done(record, pages, ledger, self.version(schema, reply.model),
                                      quotes)
                step = cast(AgentStep, validate(reply.text, AgentStep))
                if step.action == "answer":
                    if step.answer is None:
                        raise ValueError("action answer without an answer")
                    record = validate(json.dumps(step.answer), schema)
                    quotes = read_answer(json.dumps({"fields": step.answer,
                                                     "evidence": step.evidence}), schema)[1]
                    return self._done(record, pages, ledger, self.version(schema, reply.model),
                                      quotes)
            except (ValidationError, ValueError) as error:
                errors.append(problems(error) if reply.text else "no answer")
                if len(errors) >= self.attempts:
                    raise InvalidOutput(f"no valid {schema.__name__} from the agent after "
                                        f"{ledger.calls} calls: " + " | ".join(errors)) from None
                transcript.append(f"Your last reply was not valid: {errors[-1]}. Reply again.")
                continue
            turns += 1
            if step.action == "page_count":
                transcript.append(f"Turn {turns}: page_count -> the document has {len(pages)} "
                                  f"pages, numbered {min(by_number, default=0)} to "
                                  f"{max(by_number, default=0)}.")
                continue
            result, budget = self._read(step.pages, by_number, shown, budget, ledger)
            transcript.append(f"Turn {turns}: read_pages {step.pages} ->\n{result}")

    def _read(self, wanted: list[int], by_number: dict[int, PageText], shown: set[int],
              budget: int, ledger: TallyLedger) -> tuple[str, int]:
        """The asked pages' text within the budget, and what is left of it; pages that do not
        exist or were shown already are named instead."""
        notes, blocks = [], []
        missing = [n for n in wanted if n not in by_number]
        again = [n for n in wanted if n in shown]
        fresh = [n for n in dict.fromkeys(wanted) if n in by_number and n not in shown]
        if missing:
            notes.append(f"no such pages: {missing}")
        if again:
            notes.append(f"already shown above: {again}")
        if len(fresh) > self.pages_per_turn:
            notes.append(f"only {self.pages_per_turn} pages a turn; not shown: "
                         f"{fresh[self.pages_per_turn:]}")
            fresh = fresh[:self.pages_per_turn]
        for number in fresh:
            block = page_block(by_number[number])
            if len(block) > budget:
                block = block[:budget] + "\n[... the rest is not shown: the text limit is spent]"
                ledger.note = (f"document text truncated: the agent's {self.max_chars}-character "
                               "limit was spent")
            budget = max(0, budget - len(block))
            shown.add(number)
            blocks.append(block)
        return "\n\n".join(notes + blocks) or "(nothing to show)", budget

    @staticmethod
    def _done(record: BaseModel, pages: Sequence[PageText], ledger: TallyLedger,
              model: str, quotes: Sequence[Quote] = ()) -> Extraction:
        return Extraction(record, locate_values(record, pages, quotes), ledger.usage, model)


def build(ctx: HandlerContext, delivery: Delivery) -> Agentic:
    return Agentic(models_for(ctx, "agentic"), ctx.sink, call_site(delivery))
