"""The model-client port, and the logic every provider shares: retries, throttling, cost, ledger.

A provider (``gemini.py``; Bedrock later) implements one primitive, ``generate``: send one prompt
to one model once and turn the answer, or the failure, into a ``Reply`` or a ``ProviderError``.
``ModelClient`` owns the rest, so each provider gets it for free and behaves the same:

- every attempt waits for a slot from the process-wide AIMD limiter (``limiter.py``) and tells it
  how the call went: 429 and 503 shrink the in-flight limit, successes grow it back;
- failures that may pass (429, 5xx, a dropped connection) are retried with exponential backoff and
  full jitter (tenacity's ``wait_random_exponential``) until ``RetryPolicy.budget_s`` has passed;
  a timeout, a 400, a blocked or empty answer is not retried here: the caller's fallback takes it;
- every attempt, successful or not, is one ``ModelCalled`` event on the ledger, made durable before
  the answer is returned, so the ledger is never behind what was paid for; an attempt that may be
  billed but got no usage metadata (a timeout after its request was sent, a cancellation in
  flight) carries its input tokens estimated from the request, flagged ``tokens_estimated``.

::

    ProviderError              one failed attempt (carries outcome and HTTP status)
    ModelFailed (transient)    a model gave up on a prompt: retries spent, or no retry can help
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

import tenacity

from extract.errors import TransientError
from extract.models.estimate import estimate_input_tokens
from extract.models.limiter import AimdLimiter
from extract.models.pricing import PriceTable
from extract.ports import EventSink
from lake.events import ModelCalled

__all__ = ["CallSite", "Image", "Ledger", "ModelClient", "ModelFailed", "ModelKeyNotSet",
           "ModelProvider",
           "Outcome", "Prompt", "ProviderError", "Reply", "RetryPolicy"]


class Outcome(StrEnum):
    OK = "ok"
    ERROR = "error"
    TIMEOUT = "timeout"
    BLOCKED = "blocked"
    EMPTY = "empty"


# 429 and 503 mean "slow down": they shrink the AIMD limit. 500, 502 and 504 are retried too, but
# say nothing about our rate. Any other 4xx cannot succeed by asking again.
THROTTLE_STATUSES = frozenset({429, 503})
RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})


@dataclass(frozen=True)
class Image:
    data: bytes
    mime_type: str


@dataclass(frozen=True)
class Prompt:
    """One request: text, optional images, and for structured output a JSON schema (a pydantic
    model class or a dict) the answer must follow."""

    text: str
    images: tuple[Image, ...] = ()
    system: str | None = None
    response_schema: Any = None
    max_output_tokens: int | None = None


@dataclass(frozen=True)
class Reply:
    """A provider's answer; ``outcome`` is ok, blocked or empty (a 200 can still be useless)."""

    text: str
    outcome: Outcome
    input_tokens: int = 0
    output_tokens: int = 0
    http_status: int | None = 200
    detail: str | None = None  # the block reason or finish reason, when not a plain stop


class ProviderError(Exception):
    """One failed attempt. ``http_status`` is None when no answer came (timeout, network)."""

    def __init__(self, message: str, *, outcome: Outcome = Outcome.ERROR,
                 http_status: int | None = None, network: bool = False, sent: bool = True,
                 key_rejected: bool = False):
        super().__init__(message)
        self.outcome = outcome
        self.http_status = http_status
        self.network = network
        self.sent = sent  # False: the request never left (a connect or pool timeout)
        self.key_rejected = key_rejected
        """The provider refused the API key (or none is set yet): ``ModelKeyNotSet``."""

    @property
    def maybe_billed(self) -> bool:
        """A timeout after the request was sent: the provider may have read it and bill it, and
        no answer says the tokens. An error with an HTTP status is not billed."""
        return self.outcome is Outcome.TIMEOUT and self.sent

    @property
    def throttled(self) -> bool:
        return self.http_status in THROTTLE_STATUSES

    @property
    def retryable(self) -> bool:
        """Worth the same model again after a pause; a timeout goes to the fallback instead."""
        if self.outcome is Outcome.TIMEOUT:
            return False
        return self.network or self.http_status in RETRY_STATUSES


class ModelFailed(TransientError):
    """A model gave up on a prompt. ``retryable`` says whether a later delivery may succeed
    (throttling, 5xx) or not (a 400, a block); ``outcome`` is that of the last attempt."""

    error_type = "model_failed"

    def __init__(self, message: str, *, outcome: Outcome, http_status: int | None,
                 retryable: bool, model: str):
        super().__init__(message, error_type="model_unavailable" if retryable else "model_failed")
        self.outcome = outcome
        self.http_status = http_status
        self.retryable = retryable
        self.model = model


class ModelKeyNotSet(TransientError):
    """The API key is a placeholder or the provider rejects it. Retried with the queue's delay,
    never a terminal ``model_rejected``: an operator who puts the key after the first uploads
    (on AWS: the secret's value, read again within a minute) gets every document read; only a
    key still missing at the message's last delivery fails its job, with this reason."""

    error_type = "model_key_not_set"


class ModelProvider(Protocol):
    """Send one prompt to one model, once. Raise ``ProviderError`` for a failed attempt (with the
    HTTP status when there was an answer); return a ``Reply`` with outcome blocked or empty for
    an answer that carries no text."""

    provider: str

    async def generate(self, model: str, prompt: Prompt, *, timeout_s: float) -> Reply: ...


@dataclass(frozen=True)
class RetryPolicy:
    """Backoff for one model on one prompt, within one delivery of a message.

    Waits are full jitter: uniform(0, min(max_delay_s, initial_s * 2**n)). Retrying stops once
    ``budget_s`` has passed since the first attempt (time, not a count, so the budget holds
    however long each 503 takes to arrive), or after ``max_attempts`` if set.
    """

    initial_s: float = 1.0
    max_delay_s: float = 60.0
    budget_s: float = 300.0
    max_attempts: int | None = None
    timeout_s: float = 60.0


@dataclass(frozen=True)
class CallSite:
    """Who calls, for the ledger: the event envelope of the delivery, the purpose, the page."""

    purpose: str
    document_id: str | None = None
    job_id: str | None = None
    unit_id: str | None = None
    attempt: int | None = None
    worker: str | None = None
    page_number: int | None = None


class Ledger:
    """Writes one ``ModelCalled`` per attempt and waits until it is durable: the ledger is
    written before the answer is used, so a crash can lose a page's text but never a payment.

    A ledger made with ``hold_answers`` (the page reader's) keeps the row of an answered call
    (``answered=True``) in hand instead of waiting for it inside the model client: the reader
    hands it to the group commit with ``durable()`` as soon as the call returns, and frees its
    unit's slot while the commit runs, so the next unit's model call does not wait for this
    one's commit (22 ms a call, 9 % of a burst's reading time). The order the rule asks for is
    kept: the row is durable before the page is stored or its failure raised, and before this
    ledger's next call is sent (``ModelClient`` calls ``durable()`` first). Rows of failed
    calls are written at once, as before: a retry's backoff can last seconds."""

    def __init__(self, sink: EventSink, *, hold_answers: bool = False):
        self.sink = sink
        self.hold_answers = hold_answers
        self._held: list[ModelCalled] = []

    async def record(self, site: CallSite, *, answered: bool = False,
                     **fields: Any) -> ModelCalled:
        event = ModelCalled(call_id=str(uuid.uuid4()), purpose=site.purpose,
                            document_id=site.document_id, job_id=site.job_id,
                            unit_id=site.unit_id, attempt=site.attempt, worker=site.worker,
                            page_number=site.page_number, **fields)
        if answered and self.hold_answers:
            self._held.append(event)
        else:
            await self.sink.commit([*self._take_held(), event])
        return event

    async def durable(self) -> None:
        """Commit the rows held back (``hold_answers``); a no-op when there are none."""
        held = self._take_held()
        if held:
            await self.sink.commit(held)

    def _take_held(self) -> list[ModelCalled]:
        held, self._held = self._held, []
        return held


@dataclass
class ClientStats:
    """What a client saw, for benchmarks and tests (never read by the pipeline itself)."""

    calls: int = 0
    retry_waits: list[float] = field(default_factory=list)


class ModelClient:
    """One model of one provider, with retries, the shared limiter, pricing and the ledger."""

    def __init__(self, provider: ModelProvider, model: str, *, policy: RetryPolicy,
                 limiter: AimdLimiter, prices: PriceTable,
                 sleep: Callable[[float], Awaitable[None]] | None = None):
        self.provider = provider
        self.model = model
        self.policy = policy
        self.limiter = limiter
        self.prices = prices
        self.stats = ClientStats()
        self._sleep = sleep

    @property
    def name(self) -> str:
        """How a page's reader is recorded: provider and model, e.g. ``gemini:gemini-2.5-flash``."""
        return f"{self.provider.provider}:{self.model}"

    def _retrying(self) -> tenacity.AsyncRetrying:
        policy = self.policy
        stop = tenacity.stop_after_delay(policy.budget_s)
        if policy.max_attempts:
            stop = stop | tenacity.stop_after_attempt(policy.max_attempts)
        kwargs: dict[str, Any] = {}
        if self._sleep is not None:
            kwargs["sleep"] = self._sleep
        return tenacity.AsyncRetrying(
            wait=tenacity.wait_random_exponential(multiplier=policy.initial_s,
                                                  max=policy.max_delay_s),
            stop=stop,
            retry=tenacity.retry_if_exception(
                lambda error: isinstance(error, ProviderError) and error.retryable),
            before_sleep=lambda state: self.stats.retry_waits.append(state.upcoming_sleep),
            reraise=True,
            **kwargs,
        )

    async def call(self, prompt: Prompt, site: CallSite, ledger: Ledger) -> Reply:
        """The model's reply (outcome ok, blocked or empty); ``ModelFailed`` once it gives up."""
        try:
            async for attempt in self._retrying():
                with attempt:
                    return await self._attempt(prompt, site, ledger,
                                               attempt.retry_state.attempt_number)
        except ProviderError as error:
            if error.key_rejected:  # the same key for every model: no fallback helps
                raise ModelKeyNotSet(f"{self.name}: the API key is not set or not valid "
                                     f"({error})") from error
            raise ModelFailed(f"{self.name}: {error}", outcome=error.outcome,
                              http_status=error.http_status, retryable=error.retryable,
                              model=self.name) from error
        raise AssertionError("unreachable: tenacity reraises the last error")

    async def _attempt(self, prompt: Prompt, site: CallSite, ledger: Ledger,
                       number: int) -> Reply:
        await ledger.durable()  # rows held from an earlier answer, before a new call is sent
        permit = await self.limiter.acquire()
        started = time.perf_counter()
        self.stats.calls += 1
        try:
            reply = await self.provider.generate(self.model, prompt,
                                                 timeout_s=self.policy.timeout_s)
        except ProviderError as error:
            self.limiter.release(permit, throttled=error.throttled)
            await ledger.record(site, provider=self.provider.provider, model=self.model,
                                outcome=error.outcome.value, http_status=error.http_status,
                                latency_ms=(time.perf_counter() - started) * 1000,
                                call_attempt=number, detail=str(error)[:500],
                                **(self._estimate(prompt) if error.maybe_billed else {}))
            raise
        except BaseException as error:
            # Cancelled, or failed after the answer arrived (a reply that cannot be parsed):
            # the call was made and may be billed, so it is on the ledger all the same, with
            # its input tokens estimated from the request.
            self.limiter.release(permit, throttled=False, success=False)
            cancelled = isinstance(error, asyncio.CancelledError)
            with contextlib.suppress(Exception):
                await asyncio.shield(ledger.record(
                    site, provider=self.provider.provider, model=self.model,
                    outcome=(Outcome.TIMEOUT if cancelled else Outcome.ERROR).value,
                    latency_ms=(time.perf_counter() - started) * 1000, call_attempt=number,
                    detail=("cancelled in flight (the delivery's deadline)" if cancelled
                            else repr(error)[:500]), **self._estimate(prompt)))
            raise
        self.limiter.release(permit, throttled=False, success=True)
        await ledger.record(site, answered=True, provider=self.provider.provider,
                            model=self.model,
                            outcome=reply.outcome.value, http_status=reply.http_status,
                            input_tokens=reply.input_tokens, output_tokens=reply.output_tokens,
                            latency_ms=(time.perf_counter() - started) * 1000,
                            cost_usd=self.prices.cost(self.model, reply.input_tokens,
                                                      reply.output_tokens),
                            call_attempt=number, detail=reply.detail)
        return reply

    def _estimate(self, prompt: Prompt) -> dict[str, Any]:
        """Ledger fields of a call that may be billed but got no usage metadata: the input
        tokens estimated from the request (``estimate.py``), their cost, and the flag."""
        tokens = estimate_input_tokens(prompt)
        return {"input_tokens": tokens, "cost_usd": self.prices.cost(self.model, tokens, 0),
                "tokens_estimated": True}
