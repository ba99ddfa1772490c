"""What the two LLM strategies share: the models, the ledger tally, and reading an answer.

The models are the page reader's (``extract.models.clients.build_models``): the primary model, then
the fallback, the same retries, AIMD limiter, prices and ledger. They are built once per event loop
and settings (one google-genai client and one connection pool for every document a worker
handles), from ``--reader simulated`` the process's simulated server, else Gemini, which needs an
API key: without one the strategy is unavailable and says which variable to set.
"""

from __future__ import annotations

import asyncio
import json
import re
import weakref
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from extract.errors import TerminalError
from extract.fields.base import TokenUsage
from extract.fields.llm.prompts import Quote
from extract.fields.strategies import StrategyUnavailable
from extract.models.base import CallSite, Ledger, Outcome, Prompt
from extract.models.clients import ModelsUnavailable, build_models
from extract.models.fallback import Answer, FallbackModels
from extract.ports import EventSink
from lake.events import ModelCalled

if TYPE_CHECKING:
    from extract.context import Delivery, HandlerContext

# About 100k tokens: a 40-page contract fits whole (a Kleister NDA is 5-30k characters); past it
# the cost of one call passes $0.03 on Flash and the answer rarely needs the tail.
DEFAULT_MAX_CHARS = 400_000
DEFAULT_ATTEMPTS = 3  # tries for a valid answer, each a call on the ledger

__all__ = ["DEFAULT_ATTEMPTS", "DEFAULT_MAX_CHARS", "PURPOSE", "InvalidOutput", "TallyLedger",
           "ask", "call_site", "models_for", "problems", "read_answer", "validate",
           "without_fences"]

PURPOSE = "extract_fields"

_built: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, FallbackModels]] = (
    weakref.WeakKeyDictionary())


class InvalidOutput(TerminalError):
    """The model's answers stayed invalid (not JSON, or not the schema) after every retry."""

    error_type = "invalid_output"


def models_for(ctx: HandlerContext, strategy: str) -> FallbackModels:
    """The models this worker's loop calls; ``StrategyUnavailable`` without an API key."""
    provider = "simulated" if ctx.config.reader == "simulated" else "gemini"
    config = ctx.config.models
    key = provider + config.model_dump_json()
    per_loop = _built.setdefault(asyncio.get_running_loop(), {})
    if key not in per_loop:
        if provider == "gemini" and config.gemini_api_key is None:
            raise StrategyUnavailable(
                f"the {strategy} strategy calls Gemini and needs an API key: set "
                "DOCLAKE_GEMINI_API_KEY (and DOCLAKE_GEMINI_BASE_URL for a proxy), use --reader "
                "simulated for an offline demo, or --strategy rules offline")
        try:
            per_loop[key] = build_models(config, provider)
        except ModelsUnavailable as error:
            raise StrategyUnavailable(f"the {strategy} strategy cannot call a model: "
                                      f"{error}") from None
    return per_loop[key]


def call_site(delivery: Delivery) -> CallSite:
    """Every call of an extraction is on the ledger under the delivery's document and job."""
    return CallSite(purpose=PURPOSE, document_id=delivery.document_id, job_id=delivery.job_id,
                    attempt=delivery.attempt, worker=delivery.worker)


class TallyLedger(Ledger):
    """The ledger, also adding up what one extraction spent (every attempt, failed or not) and
    writing ``note`` (a truncated document, say) into each call's ``detail``."""

    def __init__(self, sink: EventSink, note: str | None = None):
        super().__init__(sink)
        self.note = note
        self.calls = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.cost_usd = 0.0

    async def record(self, site: CallSite, *, answered: bool = False,
                     **fields: Any) -> ModelCalled:
        if self.note:
            fields["detail"] = "; ".join(filter(None, (fields.get("detail"), self.note)))[:500]
        event = await super().record(site, answered=answered, **fields)
        self.calls += 1
        self.input_tokens += event.input_tokens
        self.output_tokens += event.output_tokens
        self.cost_usd += event.cost_usd
        return event

    @property
    def usage(self) -> TokenUsage:
        return TokenUsage(self.input_tokens, self.output_tokens)


async def ask(models: FallbackModels, prompt: Prompt, site: CallSite, ledger: Ledger) -> Answer:
    """One call through the fallback chain. A blocked document is final (asking again gets the
    same refusal); an empty answer comes back with no text, for the caller to count as invalid.
    ``ModelFailed`` (throttling, 5xx, timeouts) propagates: the queue retries the message."""
    answer = await models.call(prompt, site, ledger)
    if answer.outcome is Outcome.BLOCKED:
        raise TerminalError(f"{answer.model} blocked the document (the ledger row says why)",
                            error_type="model_blocked")
    return answer


_FENCE = re.compile(r"^\s*```(?:json)?\s*\n(.*?)\n?```\s*$", re.DOTALL)


def without_fences(text: str) -> str:
    """The JSON inside a Markdown code fence, which some models add despite the schema."""
    match = _FENCE.match(text)
    return match.group(1) if match else text


def problems(error: ValidationError | ValueError, limit: int = 5) -> str:
    """A short list of what was wrong, for the retry prompt and the failure message."""
    if not isinstance(error, ValidationError):
        return str(error)[:300]
    parts = [f"{'.'.join(map(str, e['loc'])) or '(root)'}: {e['msg']}"
             for e in error.errors()[:limit]]
    return "; ".join(parts)


def validate(text: str, schema: type[BaseModel]) -> BaseModel:
    """The answer as an instance of ``schema``; ``ValidationError`` when it is not one."""
    return read_answer(text, schema)[0]


def read_answer(text: str, schema: type[BaseModel]) -> tuple[BaseModel, list[Quote]]:
    """The record and its evidence quotes from an answer shaped by ``answer_schema``
    (``{"fields": ..., "evidence": [...]}``); a bare record is read too, with no quotes.
    ``ValidationError`` (or ``ValueError`` for text that is not JSON) when the record is not an
    instance of ``schema``; evidence that is malformed is dropped, never fatal."""
    body = without_fences(text) or "null"
    try:
        data = json.loads(body)
    except json.JSONDecodeError:
        return schema.model_validate_json(body), []  # raises with pydantic's own message
    if isinstance(data, dict) and "fields" in data and set(data) <= {"fields", "evidence"} \
            and "fields" not in schema.model_fields:
        record = schema.model_validate(data["fields"])
        quotes = []
        for item in data.get("evidence") or []:
            if not isinstance(item, dict) or not isinstance(item.get("quote"), str):
                continue
            page, index = item.get("page"), item.get("value_index") or 0
            quotes.append(Quote(str(item.get("field", "")), index if isinstance(index, int) else 0,
                                item["quote"], page if isinstance(page, int) else None))
        return record, quotes
    return schema.model_validate(data), []
