"""The simulated provider: a fake Gemini on 127.0.0.1 for load tests and benchmarks, named as such.

It answers the REST shapes google-genai sends and parses (``POST /v1/models/{model}:generateContent``
with ``usageMetadata``, ``promptFeedback.blockReason``, ``finishReason``), so a simulated run goes
through the same client, retries, limiter, fallback and ledger as a real one; only the host differs.

- Latency is lognormal, fitted to the write-up's model calls: median 2.9 s and p90 7.7 s give
  mu = ln 2.9 and sigma = ln(7.7 / 2.9) / 1.2816 = 0.762 (``simulated_latency_sigma``; a load
  test lowers it to take the lognormal tail out of a drain); ``simulated_latency_scale`` multiplies
  it (and the client's timeout, so a scaled run keeps the same shape).
- Faults: ``simulated_error_rate`` of calls answer 503 (or 500) after 0.3-0.5 s, as the write-up's
  errors did; the primary model times out, blocks (``finishReason: SAFETY`` or a prompt
  ``blockReason``) or answers nothing at their rates, about 8% of pages in all by default, the
  write-up's fallback share; the fallback model always reads.
- A brownout: from ``simulated_brownout_after_s`` after start, for ``simulated_brownout_for_s``,
  every call answers 503.
- Tokens: an image costs 258 tokens per 768-pixel tile (one tile when both sides are at most 384),
  plus the prompt's characters / 4; the answer is Markdown of lognormal length, around 450
  tokens, the same text for the same image.
- Structured output (a ``responseJsonSchema`` as the LLM field strategies send, or a
  ``responseSchema``): a JSON value that
  follows the schema, made from it alone (``structured_answer``): an enum's values, a string
  field's ``e.g. '...'`` example from its description, a date where the description asks for
  YYYY-MM-DD, else null when nullable; plausible, never read from the document.

It cannot show real reading quality, real rate limits or real block decisions: the README says so.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import io
import json
import math
import random
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from extract.models.config import ModelConfig
from extract.models.estimate import image_tokens
from extract.models.loopback import LoopbackServer, Reply

__all__ = ["LATENCY_MU", "LATENCY_SIGMA", "SimulatedGemini", "ensure_server", "image_tokens",
           "structured_answer"]

LATENCY_MU = math.log(2.9)
LATENCY_SIGMA = math.log(7.7 / 2.9) / 1.2816

WORDS = ("agreement", "party", "confidential", "information", "disclosure", "term",
         "obligations", "recipient", "governing", "law", "jurisdiction", "effective", "date",
         "notice", "breach", "remedy", "section", "schedule", "table", "revenue", "total",
         "quarter", "figure", "chart", "note")


@dataclass
class Arrival:
    at: float  # seconds since the server started
    model: str
    status: int
    outcome: str
    hold_s: float | None = None  # the latency drawn for an answered call: the server's own hold


@dataclass
class SimulatedGemini:
    """The request handler; ``arrivals`` records every call for tests and benchmarks."""

    config: ModelConfig
    started: float = field(default_factory=time.monotonic)
    arrivals: list[Arrival] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.config.simulated_seed)

    @property
    def scale(self) -> float:
        return self.config.simulated_latency_scale

    def in_brownout(self, now: float) -> bool:
        after = self.config.simulated_brownout_after_s
        return after is not None and after <= now < after + self.config.simulated_brownout_for_s

    def _log(self, now: float, model: str, status: int, outcome: str,
             hold_s: float | None = None) -> None:
        self.arrivals.append(Arrival(now, model, status, outcome, hold_s))

    async def __call__(self, method: str, path: str, body: bytes) -> Reply:
        now = time.monotonic() - self.started
        if method != "POST" or ":generateContent" not in path:
            return 404, _error(404, "NOT_FOUND", f"no such method: {method} {path}"), {}
        model = path.rsplit("/", 1)[-1].split(":", 1)[0]
        config = self.config
        if self.in_brownout(now):
            self._log(now, model, 503, "brownout")
            await asyncio.sleep(self.rng.uniform(0.3, 0.5) * self.scale)
            return 503, _error(503, "UNAVAILABLE", "The model is overloaded. Try again later."), {}
        draw = self.rng.random()
        if draw < config.simulated_error_rate:
            status = 503 if self.rng.random() < 0.8 else 500
            self._log(now, model, status, "error")
            await asyncio.sleep(self.rng.uniform(0.3, 0.5) * self.scale)
            return status, _error(status, "UNAVAILABLE" if status == 503 else "INTERNAL",
                                  "simulated error"), {}
        request = json.loads(body)
        width, height, digest = _image_of(request)
        prompt_chars = sum(len(p.get("text", "")) for c in request.get("contents", [])
                           for p in c.get("parts", []))
        input_tokens = (image_tokens(width, height) if width else 0) + max(1, prompt_chars // 4)
        primary = model == config.primary_model
        draw = self.rng.random()
        faults = [("timeout", config.simulated_timeout_rate),
                  ("blocked", config.simulated_blocked_rate),
                  ("empty", config.simulated_empty_rate)] if primary else []
        fault = None
        for name, rate in faults:
            if draw < rate:
                fault = name
                break
            draw -= rate
        if fault == "timeout":
            self._log(now, model, 200, "timeout")
            await asyncio.sleep(config.model_timeout_s * self.scale * 1.5)
            return 200, _answer("", input_tokens, 0, "STOP"), {}
        hold = self.rng.lognormvariate(LATENCY_MU, config.simulated_latency_sigma) * self.scale
        await asyncio.sleep(hold)
        if fault == "blocked":
            self._log(now, model, 200, "blocked", hold)
            if self.rng.random() < 0.5:
                return 200, {"promptFeedback": {"blockReason": "OTHER"},
                             "usageMetadata": {"promptTokenCount": input_tokens,
                                               "totalTokenCount": input_tokens},
                             "modelVersion": model}, {}
            return 200, _answer("", input_tokens, 0, "SAFETY"), {}
        if fault == "empty":
            self._log(now, model, 200, "empty", hold)
            return 200, _answer("", input_tokens, 0, "STOP"), {}
        generation = request.get("generationConfig") or {}
        schema = generation.get("responseJsonSchema") or generation.get("responseSchema")
        # Drawn per call (the server's seeded generator), not per request: an agent's first
        # turn is the same request for every document, and should not always choose alike.
        text = (json.dumps(structured_answer(schema, f"{digest}:{self.rng.random()}"))
                if schema is not None else _page_text(digest))
        self._log(now, model, 200, "ok", hold)
        return 200, _answer(text, input_tokens, max(1, len(text) // 4), "STOP", model), {}


def _error(code: int, status: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "status": status}}


def _answer(text: str, input_tokens: int, output_tokens: int, finish: str,
            model: str = "") -> dict[str, Any]:
    parts = [{"text": text}] if text else []
    return {
        "candidates": [{"content": {"parts": parts, "role": "model"}, "finishReason": finish,
                        "index": 0}],
        "usageMetadata": {"promptTokenCount": input_tokens,
                          "candidatesTokenCount": output_tokens,
                          "totalTokenCount": input_tokens + output_tokens},
        "modelVersion": model,
    }


def _image_of(request: dict[str, Any]) -> tuple[int, int, str]:
    """Width, height and a digest of the first inline image (0, 0 and the text's digest if none)."""
    for content in request.get("contents", []):
        for part in content.get("parts", []):
            inline = part.get("inlineData") or part.get("inline_data")
            if inline:
                data = base64.urlsafe_b64decode(  # google-genai sends the URL-safe alphabet
                    inline["data"].replace("+", "-").replace("/", "_"))
                from PIL import Image  # reads the header only

                with Image.open(io.BytesIO(data)) as image:
                    width, height = image.size
                return width, height, hashlib.sha256(data).hexdigest()
    return 0, 0, hashlib.sha256(json.dumps(request).encode()).hexdigest()


_EXAMPLE = re.compile(r"e\.g\.,? '([^']+)'")


def structured_answer(schema: dict[str, Any], seed: str) -> Any:
    """A value that follows a Gemini response schema (the request's JSON, either key spelling;
    a JSON Schema with ``$ref``, ``const`` and ``additionalProperties`` too), the same for the
    same request: plausible values, or null where the schema allows it."""
    rng = random.Random(seed)
    definitions = schema.get("$defs") or {}

    def value(node: dict[str, Any], depth: int) -> Any:
        if "$ref" in node:  # a recursive model ends in null or [] past a few levels
            if depth > 8:
                return None
            target = definitions.get(str(node["$ref"]).rsplit("/", 1)[-1], {})
            return value({**target, **{k: v for k, v in node.items() if k != "$ref"}}, depth + 1)
        if "const" in node:
            return node["const"]
        options = node.get("anyOf") or node.get("any_of")
        if options:  # a JSON-schema union, as sent before the SDK folds null into nullable
            if depth > 8 and any(str(o.get("type", "")).upper() == "NULL" for o in options):
                return None
            concrete = [o for o in options if str(o.get("type", "")).upper() != "NULL"]
            merged = {**node, **(concrete[0] if concrete else {"type": "STRING"}),
                      "nullable": len(concrete) < len(options)}
            merged.pop("anyOf", None), merged.pop("any_of", None)
            return value(merged, depth + 1)
        kind = str(node.get("type", "OBJECT")).upper()
        nullable = bool(node.get("nullable"))
        description = node.get("description") or ""
        if node.get("enum"):
            return rng.choice(node["enum"])
        if kind == "OBJECT":
            properties = node.get("properties") or {}
            extra = node.get("additionalProperties")
            if not properties and isinstance(extra, dict):  # a dict[str, X]
                return {f"key{i}": value(extra, depth + 1) for i in range(rng.randint(1, 2))}
            return {name: value(sub, depth + 1) for name, sub in properties.items()}
        if kind == "ARRAY":
            if depth > 6:
                return []
            items = {"description": description, **(node.get("items") or {"type": "STRING"})}
            return [value(items, depth + 1) for _ in range(rng.randint(1, 2))]
        if kind == "INTEGER":
            return rng.randint(1, 3)
        if kind == "NUMBER":
            return round(rng.uniform(1, 100), 2)
        if kind == "BOOLEAN":
            return rng.random() < 0.5
        if "YYYY-MM-DD" in description:
            return f"20{rng.randint(10, 24)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
        example = _EXAMPLE.search(description)
        if example:
            return example.group(1)
        return None if nullable else f"simulated {rng.choice(WORDS)}"

    return value(schema, 0)


def _page_text(digest: str) -> str:
    """Plausible Markdown of lognormal length (median ~450 tokens), the same for the same image."""
    rng = random.Random(digest)
    words = max(40, int(rng.lognormvariate(math.log(260), 0.5)))
    lines = [f"## Simulated page {digest[:12]}", ""]
    line: list[str] = []
    for _ in range(words):
        line.append(rng.choice(WORDS))
        if len(line) >= 12:
            lines.append(" ".join(line))
            line = []
    if line:
        lines.append(" ".join(line))
    lines += ["", "| item | amount |", "| --- | --- |",
              f"| {rng.choice(WORDS)} | {rng.randint(1, 99_999)} |"]
    return "\n".join(lines) + "\n"


_servers: dict[str, tuple[LoopbackServer, SimulatedGemini]] = {}
_lock = threading.Lock()


def ensure_server(config: ModelConfig) -> tuple[str, SimulatedGemini]:
    """The process's simulated server for these settings, started on first use; its base URL."""
    key = config.model_dump_json(include={f for f in ModelConfig.model_fields
                                          if f.startswith("simulated_")
                                          or f in ("primary_model", "model_timeout_s")})
    with _lock:
        running = _servers.get(key)
        if running is None:
            handler = SimulatedGemini(config)
            server = LoopbackServer(handler)
            server.start()
            running = _servers[key] = (server, handler)
    return running[0].base_url, running[1]
