"""A scripted fake Gemini on 127.0.0.1 that speaks the REST shapes google-genai sends and parses.

Like httpx's ``MockTransport``, it wraps a plain function: ``respond(call) -> (status, json)``,
where ``call`` says which model was asked, the request body, and how many calls that model has
had. Response builders below follow the public API reference: ``candidates[].content.parts[].text``
and ``finishReason``; ``usageMetadata.promptTokenCount``, ``candidatesTokenCount``,
``thoughtsTokenCount``; ``promptFeedback.blockReason`` for a blocked prompt; errors as
``{"error": {"code", "message", "status"}}``.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from extract.models.loopback import LoopbackServer


@dataclass
class Call:
    model: str
    path: str
    body: dict[str, Any]
    n: int  # 1 for the model's first call
    at: float  # monotonic time of arrival
    api_key: str | None = None  # the x-goog-api-key header the client sent

    @property
    def image(self) -> dict[str, Any] | None:
        for content in self.body.get("contents", []):
            for part in content.get("parts", []):
                if "inlineData" in part:
                    return part["inlineData"]
        return None

    @property
    def text(self) -> str:
        return "".join(part.get("text", "") for content in self.body.get("contents", [])
                       for part in content.get("parts", []))


Response = tuple[int, dict[str, Any]]


def answer(text: str, prompt_tokens: int = 1300, output_tokens: int | None = None,
           thoughts: int | None = None, finish: str = "STOP") -> Response:
    usage: dict[str, Any] = {"promptTokenCount": prompt_tokens,
                             "candidatesTokenCount": output_tokens if output_tokens is not None
                             else max(1, len(text) // 4)}
    if thoughts:
        usage["thoughtsTokenCount"] = thoughts
    usage["totalTokenCount"] = sum(usage.values())
    parts = [{"text": text}] if text else []
    return 200, {"candidates": [{"content": {"role": "model", "parts": parts},
                                 "finishReason": finish, "index": 0}],
                 "usageMetadata": usage, "modelVersion": "fake"}


def blocked_prompt(reason: str = "SAFETY", prompt_tokens: int = 1300) -> Response:
    return 200, {"promptFeedback": {"blockReason": reason},
                 "usageMetadata": {"promptTokenCount": prompt_tokens,
                                   "totalTokenCount": prompt_tokens}}


def error(code: int, status: str = "UNAVAILABLE", message: str = "fake error") -> Response:
    return code, {"error": {"code": code, "message": message, "status": status}}


@dataclass
class FakeGemini:
    respond: Callable[[Call], Response]
    delay: Callable[[Call], float] = lambda call: 0.0
    calls: list[Call] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._counts: Counter[str] = Counter()
        self.server = LoopbackServer(self._handle, with_headers=True)

    @property
    def url(self) -> str:
        return self.server.base_url

    def count(self, model: str | None = None) -> int:
        return sum(1 for c in self.calls if model is None or c.model == model)

    async def _handle(self, method: str, path: str, body: bytes,
                      headers: dict[str, str] | None = None):
        model = path.rsplit("/", 1)[-1].split(":", 1)[0]
        self._counts[model] += 1
        call = Call(model, path, json.loads(body or b"{}"), self._counts[model], time.monotonic(),
                    (headers or {}).get("x-goog-api-key"))
        self.calls.append(call)
        wait = self.delay(call)
        if wait:
            await asyncio.sleep(wait)
        status, payload = self.respond(call)
        return status, payload, {}

    def __enter__(self) -> FakeGemini:
        self.server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.stop()
