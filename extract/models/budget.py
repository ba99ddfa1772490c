"""How long a page keeps being retried through a provider outage, added up across every layer.

The write-up's queue gave up after 60 seconds against a 25-minute brownout. Retries happen at
three layers here, and the total is what matters:

1. the SDK, inside one call: ``model_sdk_attempts`` (1 by default: no hidden retries);
2. the worker, within one delivery: each model (primary, then fallback) retries with full jitter
   until ``model_retry_budget_s`` has passed; tenacity's ``stop_after_delay`` stops only after
   that time, so it is a lower bound whatever the jitter drew;
3. the queue: ``max_receives`` deliveries, each hidden after a failure for
   ``min(2 ** receive_count, visibility_timeout_s) * uniform(0.5, 1)`` seconds (the runtime's
   rule, ``infra/local/runtime.py``; counted here at its lower bound, half).

The poller fails a job after ``no_progress_timeout_s`` without progress, so the outage a run
survives is the smaller of the two. Pure arithmetic from the settings: ``doclake status --config``
prints it and a test holds the defaults above 30 minutes.
"""

from __future__ import annotations

from dataclasses import dataclass

from extract.models.config import ModelConfig

__all__ = ["RetryBudget", "retry_budget"]


@dataclass(frozen=True)
class Layer:
    name: str
    seconds: float
    how: str


@dataclass(frozen=True)
class RetryBudget:
    layers: tuple[Layer, ...]
    total_s: float  # retrying stops no earlier than this after a page's first failed call
    no_progress_timeout_s: float

    @property
    def survives_s(self) -> float:
        """The longest outage a run outlasts: the retries, unless the poller's clock ends first."""
        return min(self.total_s, self.no_progress_timeout_s)

    def rows(self) -> list[tuple[str, str, str]]:
        rows = [(layer.name, f"{layer.seconds:.0f}", layer.how) for layer in self.layers]
        rows.append(("total retry budget", f"{self.total_s:.0f}",
                     f"{self.total_s / 60:.1f} min before a page's unit fails for good"))
        rows.append(("no-progress timeout", f"{self.no_progress_timeout_s:.0f}",
                     "the poller fails a job that moved for this long"))
        rows.append(("outage survived", f"{self.survives_s:.0f}",
                     f"{self.survives_s / 60:.1f} min (the smaller of the two)"))
        return rows


def _sdk_waits(config: ModelConfig) -> float:
    # google-genai waits initial * 2**n plus up to 1 s between its attempts (1 s initial, 60 cap)
    return sum(min(60.0, 2.0 ** n) for n in range(config.model_sdk_attempts - 1))


def retry_budget(config: ModelConfig, *, max_receives: int, visibility_timeout_s: float,
                 no_progress_timeout_s: float) -> RetryBudget:
    models = 2 if config.fallback_model else 1
    per_delivery = models * config.model_retry_budget_s
    redelivery = sum(0.5 * min(2.0 ** n, visibility_timeout_s) for n in range(1, max_receives))
    layers = (
        Layer("sdk (per call)", _sdk_waits(config),
              f"{config.model_sdk_attempts} attempt(s) inside google-genai; within the worker's "
              "time budget, not added"),
        Layer("worker (per delivery)", per_delivery,
              f"{models} model(s) x {config.model_retry_budget_s:g} s of retries with full jitter "
              f"(waits up to {config.model_retry_max_delay_s:g} s)"),
        Layer("queue (redeliveries)", redelivery,
              f"{max_receives} deliveries; hidden min(2^n, {visibility_timeout_s:g}) x 0.5..1 s "
              "between them"),
    )
    total = max_receives * per_delivery + redelivery
    return RetryBudget(layers, total, no_progress_timeout_s)
