"""Primary, then fallback: the page goes to the next model when one times out, blocks the content,
returns nothing, or gives up after its retries.

What happens when no model gave text decides whether the message is retried:

- some model failed in a way a later delivery may not (throttling, 5xx, a timeout):
  ``ModelFailed`` (transient), so the queue redelivers after its backoff;
- every model answered, but blocked or empty: an ``Answer`` with no text (the page is stored
  empty, its ledger rows say why), since asking again gets the same answer;
- every model refused the request (a 400): ``TerminalError`` ``model_rejected``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from extract.errors import TerminalError
from extract.models.base import CallSite, Ledger, ModelClient, ModelFailed, Outcome, Prompt

__all__ = ["Answer", "FallbackModels"]


@dataclass(frozen=True)
class Answer:
    text: str
    outcome: Outcome
    model: str  # provider:model of the model that answered, or the last one asked
    fell_back: bool = False


class FallbackModels:
    def __init__(self, clients: Sequence[ModelClient]):
        if not clients:
            raise ValueError("at least one model")
        self.clients = list(clients)

    @property
    def primary(self) -> ModelClient:
        return self.clients[0]

    async def call(self, prompt: Prompt, site: CallSite, ledger: Ledger) -> Answer:
        failures: list[ModelFailed] = []
        useless: Answer | None = None
        for index, client in enumerate(self.clients):
            try:
                reply = await client.call(prompt, site, ledger)
            except ModelFailed as failure:
                failures.append(failure)
                continue
            if reply.outcome is Outcome.OK:
                return Answer(reply.text, Outcome.OK, client.name, fell_back=index > 0)
            useless = Answer("", reply.outcome, client.name, fell_back=index > 0)
        again = [f for f in failures if f.retryable or f.outcome is Outcome.TIMEOUT]
        if again:
            last = again[-1]
            raise ModelFailed(f"no model answered; last: {last}", outcome=last.outcome,
                              http_status=last.http_status, retryable=True, model=last.model)
        if useless is not None:
            return useless
        raise TerminalError(f"every model refused the request; last: {failures[-1]}",
                            error_type="model_rejected")
