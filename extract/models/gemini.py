"""Gemini through google-genai: one prompt to one model, once; errors become ``ProviderError``.

The SDK builds the request, talks HTTP and parses the answer; this adapter only maps. The SDK's
own retries (``HttpRetryOptions``) are set to ``sdk_attempts``, 1 by default: a retry inside the
SDK is invisible to the ledger and to the AIMD limiter, and its jitter is additive (up to 1 s on
top of the exponential delay) rather than full, so 500 workers that fail together retry within
the same second. ``ModelClient`` retries instead, one ledger row and one limiter signal per try.

``base_url`` points the SDK at another host: the simulated provider and the tests' fake server on
127.0.0.1 speak the same REST shapes, so everything below runs for real against them.
"""

from __future__ import annotations

import json
from typing import Any

from extract.models.base import Outcome, Prompt, ProviderError, Reply
from extract.models.config import KEY_PLACEHOLDER

__all__ = ["BLOCKING_FINISH_REASONS", "GeminiProvider", "thinking_for"]

THINKING_LEVELS = ("minimal", "low", "medium", "high")

# Finish reasons that mean the model refused (or was stopped from) answering: a fallback may not.
BLOCKING_FINISH_REASONS = frozenset({
    "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY",
    "LANGUAGE", "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION",
})


def thinking_for(model: str, setting: str | None = None) -> dict[str, Any] | None:
    """``ThinkingConfig``'s arguments for ``model`` (None: send none), from ``setting`` (a
    budget in tokens or a level name) or the model's default. Thinking is per model family:

    - Gemini 3 takes a level (``thinking_level``; a budget is refused); its Pro cannot stop
      thinking and takes only ``low`` or ``high``. Default ``low``: reading a page needs little.
    - Gemini 2.5 takes a budget: Flash and Flash-Lite may be 0 (off, the default); Pro cannot be
      off (0 is a 400), so its default is 128, its least (-1 lets it decide).
    - Any other model gets no thinking setting unless one is given.
    """
    name = model.rsplit("/", 1)[-1].lower()
    given = (setting or "").strip().lower() or None
    if name.startswith("gemini-3"):
        level = given or "low"
        allowed = ("low", "high") if "-pro" in name else THINKING_LEVELS
        if level not in allowed:
            raise ValueError(f"{model} takes a thinking level ({', '.join(allowed)}), "
                             f"not {setting!r}")
        return {"thinking_level": level.upper()}
    if given in THINKING_LEVELS and not name.startswith("gemini-2.5"):
        return {"thinking_level": given.upper()}
    if given is None and not name.startswith("gemini-2.5"):
        return None
    try:
        budget = int(given) if given is not None else (128 if "-pro" in name else 0)
    except ValueError:
        raise ValueError(f"{model} takes a thinking budget in tokens (-1: dynamic), "
                         f"not {setting!r}") from None
    if "-pro" in name and budget == 0:
        raise ValueError(f"{model} cannot turn thinking off (a budget of 0 is refused): use "
                         "-1 (dynamic) or 128 and up")
    return {"thinking_budget": budget}


def _enum_name(value: Any) -> str | None:
    if value is None:
        return None
    return getattr(value, "name", None) or str(value)


def key_rejected(code: int | None, message: str | None, details: Any) -> bool:
    """Whether an error answer refuses the API key itself: Gemini answers a bad key with 400
    ``INVALID_ARGUMENT`` "API key not valid" (reason ``API_KEY_INVALID``), an expired or
    revoked one with 400 or 403. Any other 400 is about the request."""
    if code not in (400, 401, 403):
        return False
    text = f"{message or ''} {json.dumps(details, default=str) if details else ''}"
    return "API_KEY_INVALID" in text or "api key" in text.lower()


class GeminiProvider:
    """``ModelProvider`` on google-genai's async client (one client, one connection pool)."""

    def __init__(self, api_key: str, *, base_url: str | None = None, provider: str = "gemini",
                 sdk_attempts: int = 1, thinking: dict[str, str] | None = None,
                 temperature: float | None = 0.0, max_connections: int = 512):
        from google import genai
        from google.genai import types

        self.provider = provider
        self._types = types
        self.thinking = dict(thinking or {})  # model -> a budget or a level (thinking_for)
        self.temperature = temperature
        options = types.HttpOptions(
            base_url=base_url,
            retry_options=types.HttpRetryOptions(attempts=max(1, sdk_attempts)),
            # httpx pools 100 connections by default: past that, calls queue inside the client
            # and the wait shows up as model latency. The AIMD ceiling is the real limit.
            async_client_args={"limits": _limits(max_connections)},
        )
        self._client = genai.Client(api_key=api_key, http_options=options)
        self._placeholder = api_key.strip() in ("", KEY_PLACEHOLDER)

    def _config(self, model: str, prompt: Prompt, timeout_s: float) -> Any:
        types = self._types
        config: dict[str, Any] = {
            "http_options": types.HttpOptions(timeout=int(timeout_s * 1000)),
            "temperature": self.temperature,
        }
        thinking = thinking_for(model, self.thinking.get(model))
        if thinking is not None:
            config["thinking_config"] = types.ThinkingConfig(**thinking)
        if prompt.system:
            config["system_instruction"] = prompt.system
        if prompt.max_output_tokens:
            config["max_output_tokens"] = prompt.max_output_tokens
        if prompt.response_schema is not None:
            config["response_mime_type"] = "application/json"
            # Sent as JSON Schema (``response_json_schema``), not the OpenAPI subset of
            # ``response_schema``: dict fields, ``const`` and recursive models ($ref) survive.
            config["response_json_schema"] = prompt.response_schema
        return types.GenerateContentConfig(**config)

    async def generate(self, model: str, prompt: Prompt, *, timeout_s: float) -> Reply:
        from google.genai import errors

        if self._placeholder:
            raise ProviderError("no API key yet: the key's secret still holds its placeholder",
                                sent=False, key_rejected=True)
        types = self._types
        parts: list[Any] = [types.Part.from_bytes(data=image.data, mime_type=image.mime_type)
                            for image in prompt.images]
        parts.append(types.Part.from_text(text=prompt.text))
        try:
            response = await self._client.aio.models.generate_content(
                model=model, contents=[types.Content(role="user", parts=parts)],
                config=self._config(model, prompt, timeout_s))
        except errors.APIError as error:
            raise ProviderError(f"HTTP {error.code} {error.status or ''}: {error.message}"[:500],
                                http_status=error.code,
                                key_rejected=key_rejected(error.code, error.message,
                                                          error.details)) from error
        except Exception as error:
            raise _network_error(error) from error
        return _reply(response)


def _limits(max_connections: int) -> Any:
    try:
        import httpx2 as httpx
    except ImportError:  # the SDK runs on httpx when httpx2 is absent
        import httpx
    return httpx.Limits(max_connections=max_connections,
                        max_keepalive_connections=max_connections)


def _network_error(error: Exception) -> ProviderError:
    """httpx/httpx2 timeouts and connection errors, whichever backend the SDK picked."""
    name = type(error).__name__
    if "Timeout" in name:  # a connect or pool timeout: the request never left, nothing billed
        return ProviderError(f"timed out ({name})", outcome=Outcome.TIMEOUT,
                             sent=name not in ("ConnectTimeout", "PoolTimeout"))
    network = isinstance(error, OSError) or any(
        word in name for word in ("Connect", "Network", "Protocol", "Read", "Write", "Remote"))
    if not network:
        raise error
    return ProviderError(f"network error: {name}: {error}"[:500], network=True)


def _reply(response: Any) -> Reply:
    usage = response.usage_metadata
    input_tokens = (usage.prompt_token_count or 0) if usage else 0
    output_tokens = ((usage.candidates_token_count or 0) + (usage.thoughts_token_count or 0)
                     if usage else 0)
    feedback = response.prompt_feedback
    block_reason = _enum_name(feedback.block_reason) if feedback else None
    if block_reason:
        return Reply("", Outcome.BLOCKED, input_tokens, output_tokens,
                     detail=f"prompt blocked: {block_reason}")
    if not response.candidates:
        return Reply("", Outcome.EMPTY, input_tokens, output_tokens, detail="no candidates")
    candidate = response.candidates[0]
    finish = _enum_name(candidate.finish_reason)
    if finish in BLOCKING_FINISH_REASONS:
        return Reply("", Outcome.BLOCKED, input_tokens, output_tokens,
                     detail=f"finish reason {finish}")
    parts = candidate.content.parts if candidate.content and candidate.content.parts else []
    text = "".join(part.text for part in parts if part.text and not part.thought)
    if not text.strip():
        return Reply("", Outcome.EMPTY, input_tokens, output_tokens,
                     detail=f"no text (finish reason {finish})")
    detail = None if finish in (None, "STOP") else f"finish reason {finish}"
    return Reply(text, Outcome.OK, input_tokens, output_tokens, detail=detail)
