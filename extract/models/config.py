"""The model settings, with their defaults in one place.

``infra.settings.Settings`` inherits these fields, so each is also an environment variable
(``DOCLAKE_GEMINI_API_KEY``, ``DOCLAKE_SIMULATED_BROWNOUT_AFTER_S``...), and hands them down to the
handlers inside ``ExtractConfig.models``.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, Field, SecretStr

from extract.models.pricing import DEFAULT_PRICES, ModelPrice

__all__ = ["KEY_PLACEHOLDER", "ModelConfig"]

KEY_PLACEHOLDER = "doclake:put-the-gemini-api-key-here"
"""What a key's secret holds until an operator puts the real key (the CDK stack creates it with
this value): the model is not asked, the call fails as ``ModelKeyNotSet`` and is retried."""


class ModelConfig(BaseModel):
    gemini_api_key: SecretStr | None = Field(
        None, description="Gemini API key; without it --reader gemini is unavailable.")
    gemini_base_url: str | None = Field(
        None, description="Gemini API base URL (default: Google's); a proxy or a fake server.")
    primary_model: str = Field("gemini-2.5-flash", description="The model that reads each page.")
    fallback_model: str = Field(
        "gemini-2.5-flash-lite",
        description="The model for pages the primary times out on, blocks, returns nothing "
                    "for, or gives up on; empty for none.")
    fallback_provider: Literal["gemini", "bedrock"] = Field(
        "gemini", description="Who serves the fallback model: gemini, or bedrock (Converse API, "
                              "AWS credentials from the environment).")
    bedrock_region: str | None = Field(None, description="AWS region of the Bedrock fallback.")
    model_timeout_s: float = Field(60.0, gt=0, description="Time limit of one model call.")
    model_retry_initial_s: float = Field(
        1.0, gt=0, description="First backoff cap; each retry waits uniform(0, cap), cap doubling.")
    model_retry_max_delay_s: float = Field(60.0, gt=0, description="Largest backoff cap.")
    model_retry_budget_s: float = Field(
        300.0, gt=0, description="How long one model keeps retrying a page within one delivery "
                                 "before the fallback (or the queue) takes over.")
    model_max_attempts: int | None = Field(
        None, ge=1, description="Most attempts of one model on one prompt within one delivery "
                                "(unset: retry until model_retry_budget_s). 1 on Lambda: a page "
                                "that must wait goes back to its queue with a delay instead of "
                                "a function sleeping, billed, towards its own timeout.")
    model_sdk_attempts: int = Field(
        1, ge=1, description="Attempts inside google-genai per call (1: doclake retries instead, "
                             "so every try is on the ledger and seen by the limiter).")
    model_thinking: dict[str, str] = Field(
        default_factory=dict, description="Thinking per model, JSON: a budget in tokens for "
        "Gemini 2.5 (-1: dynamic), a level for Gemini 3 (minimal, low, medium, high); unset: "
        "off where the model allows it, else its least (extract.models.gemini.thinking_for).")
    model_max_in_flight: int = Field(
        512, ge=1, description="Most model calls in flight in one process (the AIMD ceiling).")
    model_min_in_flight: int = Field(1, ge=1, description="The AIMD floor.")
    pages_in_flight: int = Field(5, ge=1, description="Pages of one unit sent to the model at once.")
    model_prices: dict[str, ModelPrice] = Field(
        default_factory=lambda: dict(DEFAULT_PRICES),
        description="USD per 1M input and output tokens per model, with the date read (JSON).")

    render_dpi: float = Field(100.0, gt=0, description="Resolution pages are rendered at for a "
                                                       "vision model.")
    render_max_pixels: int = Field(4_000_000, ge=10_000, description="Pixel cap of a rendered page.")
    render_grayscale: bool = Field(True, description="Render pages in grayscale.")
    # Measured on the shared corpus's PDF pages at 100 dpi, grayscale (benchmark in the note):
    # PNG median 4 KB / p90 13 KB, JPEG (q85) 5 KB / 23 KB, render+encode 7 ms vs 4 ms a page.
    # Both cost the same tokens (the model bills 258 per 768-px tile, not per byte), so the
    # smaller, lossless one wins; 150 dpi would cost 1,548 tokens a letter page instead of 1,032.
    render_format: Literal["png", "jpeg"] = Field("png", description="Image format sent.")

    simulated_latency_scale: float = Field(
        1.0, gt=0, description="Simulated provider: latency factor (1.0: 2.9 s median, 7.7 s p90); "
                               "its timeouts scale with it.")
    simulated_latency_sigma: float = Field(
        math.log(7.7 / 2.9) / 1.2816, ge=0,
        description="Simulated provider: sigma of the lognormal call latency (0.762 = "
                    "ln(7.7 / 2.9) / 1.2816, the write-up's fit; lower for a low-variance load "
                    "test; the median stays 2.9 s x scale).")
    simulated_error_rate: float = Field(
        0.02, ge=0, le=1, description="Simulated provider: share of calls answering 503 or 500.")
    simulated_timeout_rate: float = Field(
        0.01, ge=0, le=1, description="Simulated provider: share of calls that never answer in time.")
    simulated_blocked_rate: float = Field(
        0.03, ge=0, le=1, description="Simulated provider: share of pages the primary blocks.")
    simulated_empty_rate: float = Field(
        0.035, ge=0, le=1, description="Simulated provider: share of empty answers from the primary.")
    simulated_brownout_after_s: float | None = Field(
        None, ge=0, description="Simulated provider: seconds after start when every call starts "
                                "answering 503.")
    simulated_brownout_for_s: float = Field(
        0.0, ge=0, description="Simulated provider: how long the brownout lasts.")
    simulated_seed: int | None = Field(None, description="Simulated provider: random seed.")
