"""From the model settings to the primary-then-fallback models a reader or a strategy calls.

``gemini`` needs an API key (``ReaderUnavailable`` says which variable otherwise); ``simulated``
points the same Gemini client at the process's simulated server and scales the call timeout with
its latency (the backoff is left as set: a brownout test runs the real retry settings).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from extract.errors import TerminalError
from extract.models.base import ModelClient, ModelProvider, RetryPolicy
from extract.models.config import ModelConfig
from extract.models.fallback import FallbackModels
from extract.models.limiter import shared
from extract.models.pricing import PriceTable

__all__ = ["ModelsUnavailable", "ProviderSetup", "build_models", "provider_setup"]


class ModelsUnavailable(TerminalError):
    """No model can be called here (no API key, no AWS credentials for the fallback)."""

    error_type = "reader_unavailable"


def _policy(config: ModelConfig, scale: float) -> RetryPolicy:
    return RetryPolicy(initial_s=config.model_retry_initial_s,
                       max_delay_s=config.model_retry_max_delay_s,
                       budget_s=config.model_retry_budget_s,
                       max_attempts=config.model_max_attempts,
                       timeout_s=config.model_timeout_s * scale)


@dataclass(frozen=True)
class ProviderSetup:
    """What ``build_models`` makes before the event loop is needed: the provider's client (its
    TLS set-up loads the CA certificates: 70 to 150 ms, so a caller on an event loop may make it
    on a thread), the endpoint its limiter is shared by, and the latency scale."""

    provider: ModelProvider
    endpoint: str
    scale: float


def provider_setup(config: ModelConfig,
                   provider: Literal["gemini", "simulated"] = "gemini") -> ProviderSetup:
    """The provider's client for ``config``; needs no event loop (safe on a thread)."""
    if provider == "simulated":
        from extract.models.simulated import ensure_server

        base_url, _ = ensure_server(config)
        return ProviderSetup(_gemini(config, "simulated-key", base_url, "simulated"),
                             f"simulated@{base_url}", config.simulated_latency_scale)
    if config.gemini_api_key is None:
        raise ModelsUnavailable(
            "the gemini reader needs an API key: set DOCLAKE_GEMINI_API_KEY (or use "
            "--reader simulated for a load test, or --reader auto to read offline)")
    base_url = config.gemini_base_url
    return ProviderSetup(_gemini(config, config.gemini_api_key.get_secret_value(), base_url,
                                 "gemini"),
                         f"gemini@{base_url or 'default'}", 1.0)


def build_models(config: ModelConfig,
                 provider: Literal["gemini", "simulated"] = "gemini", *,
                 setup: ProviderSetup | None = None) -> FallbackModels:
    """Must run on the event loop that will make the calls (the limiter is per loop).
    ``setup``: the provider's client made beforehand (``provider_setup``, e.g. on a thread)."""
    setup = setup or provider_setup(config, provider)
    prices = PriceTable(config.model_prices)
    policy = _policy(config, setup.scale)
    limiter = shared(setup.endpoint, config.model_max_in_flight,
                     minimum=config.model_min_in_flight)
    clients = [ModelClient(setup.provider, config.primary_model, policy=policy,
                           limiter=limiter, prices=prices)]
    if config.fallback_model:
        if config.fallback_provider == "bedrock" and provider == "gemini":
            # The port takes a Converse-API provider as one more module; not written yet.
            raise ModelsUnavailable("a Bedrock fallback is not built yet: set "
                                    "DOCLAKE_FALLBACK_PROVIDER=gemini (the default)")
        else:
            clients.append(ModelClient(setup.provider, config.fallback_model, policy=policy,
                                       limiter=limiter, prices=prices))
    return FallbackModels(clients)


def _gemini(config: ModelConfig, key: str, base_url: str | None, label: str) -> ModelProvider:
    from extract.models.gemini import GeminiProvider, thinking_for

    for model in filter(None, (config.primary_model, config.fallback_model)):
        try:  # a setting the API would refuse fails here, not on every page
            thinking_for(model, config.model_thinking.get(model))
        except ValueError as error:
            raise ModelsUnavailable(f"DOCLAKE_MODEL_THINKING: {error}") from None
    return GeminiProvider(key, base_url=base_url, provider=label, thinking=config.model_thinking,
                          sdk_attempts=config.model_sdk_attempts,
                          max_connections=config.model_max_in_flight)
