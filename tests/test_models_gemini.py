"""The model client against a fake Gemini on 127.0.0.1: google-genai builds and parses for real."""

from __future__ import annotations

import asyncio
import base64
import time

import pytest
from support.fake_gemini import Call, FakeGemini, answer, blocked_prompt, error

from extract.errors import TerminalError
from extract.models import CallSite, Image, Ledger, ModelConfig, ModelFailed, Prompt
from extract.models.clients import ModelsUnavailable, build_models

PRIMARY, FALLBACK = "gemini-2.5-flash", "gemini-2.5-flash-lite"
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAACklEQVR4nGNgAAAAAgABSK+kcQAAAABJRU5ErkJggg==")


class ListSink:
    def __init__(self) -> None:
        self.events: list = []

    async def commit(self, events) -> None:
        self.events.extend(events)


def config(fake: FakeGemini, **overrides) -> ModelConfig:
    values = {"gemini_api_key": "test-key", "gemini_base_url": fake.url,
              "model_retry_initial_s": 0.01, "model_retry_max_delay_s": 0.05,
              "model_retry_budget_s": 0.5, "model_timeout_s": 5.0, **overrides}
    return ModelConfig(**values)


async def read(fake: FakeGemini, **overrides):
    models = build_models(config(fake, **overrides))
    sink = ListSink()
    result = await models.call(Prompt("Transcribe", (Image(PNG, "image/png"),)),
                               CallSite("read_page", job_id="j", page_number=3), Ledger(sink))
    return result, sink.events


async def test_a_normal_page_is_read_and_its_call_recorded():
    with FakeGemini(lambda call: answer("# Page three\n\nHello.", 1290, 9, thoughts=3)) as fake:
        result, events = await read(fake)
    assert result.text == "# Page three\n\nHello." and result.model == f"gemini:{PRIMARY}"
    assert not result.fell_back
    [call] = fake.calls
    assert call.model == PRIMARY and call.path.endswith(f"models/{PRIMARY}:generateContent")
    assert (call.image.get("mimeType") or call.image.get("mime_type")) == "image/png"
    assert base64.urlsafe_b64decode(call.image["data"]) == PNG
    assert "Transcribe" in call.text
    [event] = events
    # usage metadata: prompt tokens in, candidates + thoughts out (thinking is billed as output)
    assert (event.outcome, event.http_status, event.input_tokens, event.output_tokens) == \
        ("ok", 200, 1290, 12)
    assert event.cost_usd == pytest.approx((1290 * 0.30 + 12 * 2.50) / 1e6)
    assert (event.provider, event.model, event.purpose, event.page_number, event.job_id) == \
        ("gemini", PRIMARY, "read_page", 3, "j")
    assert event.latency_ms > 0 and event.call_attempt == 1


async def test_503_then_success_is_retried_on_the_same_model():
    def respond(call: Call):
        return error(503) if call.n == 1 else answer("text")

    with FakeGemini(respond) as fake:
        result, events = await read(fake)
    assert result.text == "text" and result.model == f"gemini:{PRIMARY}"
    assert [(e.model, e.outcome, e.http_status, e.call_attempt) for e in events] == \
        [(PRIMARY, "error", 503, 1), (PRIMARY, "ok", 200, 2)]
    assert events[0].cost_usd == 0 and "503" in events[0].detail


async def test_a_permanent_503_ends_on_the_fallback():
    def respond(call: Call):
        return error(503) if call.model == PRIMARY else answer("from the fallback")

    # The budget counts from the first attempt, whose cold client took over 0.3 s once on a busy
    # CI machine (one attempt, then the fallback): a second leaves room for several tries.
    with FakeGemini(respond) as fake:
        result, events = await read(fake, model_retry_budget_s=1.0)
    assert result.text == "from the fallback" and result.model == f"gemini:{FALLBACK}"
    assert result.fell_back
    assert fake.count(PRIMARY) >= 3, "the primary is retried until its budget is spent"
    assert fake.count(FALLBACK) == 1
    assert {e.outcome for e in events if e.model == PRIMARY} == {"error"}


@pytest.mark.parametrize("useless", [
    blocked_prompt("PROHIBITED_CONTENT"),
    answer("", finish="SAFETY"),
    answer("", finish="STOP"),
    answer("   \n", finish="STOP"),
], ids=["prompt_blocked", "finish_safety", "no_parts", "blank_text"])
async def test_blocked_and_empty_answers_go_straight_to_the_fallback(useless):
    def respond(call: Call):
        return useless if call.model == PRIMARY else answer("read by the fallback")

    with FakeGemini(respond) as fake:
        result, events = await read(fake)
    assert result.model == f"gemini:{FALLBACK}" and result.text == "read by the fallback"
    assert fake.count(PRIMARY) == 1, "a block or an empty answer is not retried"
    assert events[0].outcome in ("blocked", "empty") and events[0].detail


async def test_blocked_by_every_model_stores_an_empty_page():
    with FakeGemini(lambda call: blocked_prompt()) as fake:
        result, events = await read(fake)
    assert (result.text, result.outcome.value, result.model) == ("", "blocked", f"gemini:{FALLBACK}")
    assert [e.outcome for e in events] == ["blocked", "blocked"]


async def test_a_400_is_not_retried():
    def respond(call: Call):
        return error(400, "INVALID_ARGUMENT") if call.model == PRIMARY else answer("ok")

    with FakeGemini(respond) as fake:
        result, events = await read(fake)
    assert fake.count(PRIMARY) == 1 and result.model == f"gemini:{FALLBACK}"
    assert events[0].http_status == 400

    with (FakeGemini(lambda call: error(400, "INVALID_ARGUMENT")) as fake,
          pytest.raises(TerminalError) as failure):
        await read(fake)
    assert failure.value.error_type == "model_rejected"
    assert fake.count() == 2


async def test_a_timeout_goes_to_the_fallback_without_retrying():
    with FakeGemini(lambda call: answer("late" if call.model == PRIMARY else "on time"),
                    delay=lambda call: 3.0 if call.model == PRIMARY else 0.0) as fake:
        result, events = await read(fake, model_timeout_s=0.5)
    assert result.text == "on time" and fake.count(PRIMARY) == 1
    assert events[0].outcome == "timeout" and events[0].http_status is None


async def test_a_timed_out_call_is_on_the_ledger_at_its_estimated_input(tmp_path):
    """Issue 19, item 9: a call that times out got a $0 row, though the provider read (and may
    bill) what was sent. Its row carries the input tokens estimated from the request (a 1 x 1
    image is one tile, 258 tokens; "Transcribe", 10 characters, 3 more), their cost, the flag;
    the lake's model_calls table shows them."""
    from lake.catalog import query
    from lake.writer import ParquetEventWriter

    with FakeGemini(lambda call: answer("late" if call.model == PRIMARY else "on time", 261, 2),
                    delay=lambda call: 3.0 if call.model == PRIMARY else 0.0) as fake:
        result, events = await read(fake, model_timeout_s=0.5)
    timed_out, answered = events
    assert (timed_out.outcome, timed_out.input_tokens, timed_out.output_tokens) == (
        "timeout", 258 + 3, 0)
    assert timed_out.tokens_estimated and timed_out.cost_usd == pytest.approx(261 * 0.30 / 1e6)
    assert (answered.outcome, answered.tokens_estimated) == ("ok", False)

    lake = str(tmp_path / "lake")
    ParquetEventWriter.for_uri(lake).write(events)
    rows = query(lake, "SELECT outcome, input_tokens, cost_usd > 0 AS billed, tokens_estimated "
                       "FROM model_calls ORDER BY occurred_at").to_pylist()
    assert rows == [
        {"outcome": "timeout", "input_tokens": 261, "billed": True, "tokens_estimated": True},
        {"outcome": "ok", "input_tokens": 261, "billed": True, "tokens_estimated": False}]


def test_a_timeout_before_the_request_left_is_not_estimated():
    """A connect or pool timeout never reached the provider: nothing to bill, nothing estimated."""
    import httpx

    from extract.models.gemini import _network_error

    assert not _network_error(httpx.ConnectTimeout("connect")).maybe_billed
    assert not _network_error(httpx.PoolTimeout("pool")).maybe_billed
    assert _network_error(httpx.ReadTimeout("read")).maybe_billed


async def test_503_on_every_model_is_a_transient_failure_for_the_queue():
    # A second for each model: a cold first attempt alone can take over 0.3 s on a busy machine.
    with FakeGemini(lambda call: error(503)) as fake, pytest.raises(ModelFailed) as failure:
        await read(fake, model_retry_budget_s=1.0)
    assert failure.value.retryable and failure.value.http_status == 503
    assert fake.count(PRIMARY) >= 2 and fake.count(FALLBACK) >= 2


async def test_a_rejected_or_placeholder_key_is_retried_as_key_not_set_never_rejected():
    """A bad key is the same for every model: the fallback is not asked, and the failure is a
    ``ModelKeyNotSet`` (transient: the queue tries again later, once the key is put), not the
    terminal ``model_rejected`` a bad request gets. The placeholder asks no model at all."""
    from extract.errors import TransientError
    from extract.models.base import ModelKeyNotSet
    from extract.models.config import KEY_PLACEHOLDER

    bad_key = error(400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.")
    with FakeGemini(lambda call: bad_key) as fake, pytest.raises(ModelKeyNotSet) as failure:
        await read(fake)
    assert isinstance(failure.value, TransientError)
    assert failure.value.error_type == "model_key_not_set"
    assert [c.api_key for c in fake.calls] == ["test-key"]  # one model, once
    with (FakeGemini(lambda call: answer("ok")) as fake,
          pytest.raises(ModelKeyNotSet, match="placeholder")):
        await read(fake, gemini_api_key=KEY_PLACEHOLDER)
    assert fake.calls == []


async def test_no_api_key_means_unavailable_with_a_clear_message():
    with pytest.raises(ModelsUnavailable, match="DOCLAKE_GEMINI_API_KEY"):
        build_models(ModelConfig())


async def test_the_limiter_shrinks_under_429_and_recovers():
    """Sixty pages at once; the provider throttles the first wave. The shared limit halves (once
    per wave, not once per 429), and grows back as calls succeed."""
    throttled = 40

    def respond(call: Call):
        return error(429, "RESOURCE_EXHAUSTED") if call.n <= throttled else answer("ok")

    with FakeGemini(respond, delay=lambda call: 0.02) as fake:
        models = build_models(config(fake, model_max_in_flight=32, model_retry_budget_s=10.0,
                                     fallback_model=""))
        limiter = models.primary.limiter
        sink = ListSink()
        await asyncio.gather(*(models.call(Prompt(f"page {n}"), CallSite("read_page"), Ledger(sink))
                               for n in range(60)))
        assert limiter.lowest <= 8, f"the limit fell only to {limiter.lowest}"
        low = limiter.lowest
        assert limiter.epoch < throttled / 2, "a wave of 429s must not halve the limit per 429"
        # after the throttling: more successful calls bring the limit back up
        await asyncio.gather(*(models.call(Prompt(f"more {n}"), CallSite("read_page"), Ledger(sink))
                               for n in range(200)))
    assert limiter.limit >= 4 * low and limiter.limit > 16
    assert sum(e.outcome == "ok" for e in sink.events) == 260


@pytest.mark.parametrize(("model", "setting", "sent"), [
    ("gemini-2.5-flash", None, {"thinking_budget": 0}),
    ("gemini-2.5-pro", None, {"thinking_budget": 128}),  # 0 is refused by this model
    ("gemini-2.5-pro", "-1", {"thinking_budget": -1}),
    ("gemini-3-pro-preview", None, {"thinking_level": "LOW"}),
    ("gemini-3-flash-preview", "minimal", {"thinking_level": "MINIMAL"}),
])
async def test_thinking_is_set_per_model_in_the_request_the_sdk_sends(model, setting, sent):
    """Finding 8: not one budget of 0 for every model; each family gets its own form."""
    thinking = {model: setting} if setting else {}
    with FakeGemini(lambda call: answer("# Page", 10, 2)) as fake:
        await read(fake, primary_model=model, fallback_model="", model_thinking=thinking)
    [call] = fake.calls
    assert call.body["generationConfig"]["thinkingConfig"] == sent


@pytest.mark.parametrize(("model", "setting"), [
    ("gemini-2.5-pro", "0"), ("gemini-3-pro-preview", "minimal"), ("gemini-3-pro-preview", "512"),
    ("gemini-2.5-flash", "high")])
async def test_a_thinking_setting_the_model_refuses_fails_before_any_call(model, setting):
    with (FakeGemini(lambda call: answer("# Page", 10, 2)) as fake,
          pytest.raises(ModelsUnavailable, match="DOCLAKE_MODEL_THINKING")):
        await read(fake, primary_model=model, fallback_model="", model_thinking={model: setting})
    assert fake.calls == []


async def test_a_cancelled_call_is_on_the_ledger():
    """Issue 19: a call cancelled while the provider works on it (a stop, a stage's time limit)
    left no model_calls row, though the provider may bill it."""
    import time

    def slow(call):
        time.sleep(3)
        return answer("late", 10, 2)

    with FakeGemini(slow) as fake:
        sink = ListSink()
        models = build_models(config(fake))
        task = asyncio.ensure_future(models.call(Prompt("Transcribe"), CallSite(
            "read_page", job_id="j", page_number=1), Ledger(sink)))
        while not fake.calls:
            await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    [event] = sink.events
    assert (event.outcome, event.model, event.page_number) == ("timeout", PRIMARY, 1)
    assert "cancelled in flight" in event.detail
    # Cancelled after the request left: its input is estimated ("Transcribe": 3 tokens).
    assert (event.input_tokens, event.tokens_estimated) == (3, True) and event.cost_usd > 0


class TimedSink:
    """A sink whose commit takes a while, as a group commit does, and says when each row of the
    ledger became durable (monotonic time, like the fake's arrivals)."""

    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s
        self.durable: list[tuple[float, object]] = []

    async def commit(self, events) -> None:
        await asyncio.sleep(self.delay_s)
        self.durable += [(time.monotonic(), e) for e in events]


async def test_a_held_answer_is_durable_before_the_next_call_is_sent():
    """A page reader's ledger holds an answered row (its slot is freed meanwhile), but a blocked
    answer's row is written before the fallback model is asked: a crash during the second call
    can never lose the first one's payment."""

    def respond(call: Call):
        return blocked_prompt() if call.model == PRIMARY else answer("# Read by the fallback\n")

    with FakeGemini(respond) as fake:
        models = build_models(config(fake))
        sink = TimedSink(0.05)
        ledger = Ledger(sink, hold_answers=True)
        result = await models.call(Prompt("Transcribe", (Image(PNG, "image/png"),)),
                                   CallSite("read_page", page_number=1), ledger)
        assert result.model == f"gemini:{FALLBACK}"
        (primary_at, primary), = [(t, e) for t, e in sink.durable if e.model == PRIMARY]
        assert primary.outcome == "blocked"
        (asked,) = [c for c in fake.calls if c.model == FALLBACK]
        assert primary_at < asked.at, "the blocked answer's row was durable before the fallback"
        assert [e.model for _, e in sink.durable] == [PRIMARY], "the fallback's row is held"
        await ledger.durable()
        assert [e.model for _, e in sink.durable] == [PRIMARY, FALLBACK]


async def test_a_ledger_without_hold_answers_waits_for_every_row():
    with FakeGemini(lambda call: answer("# Page\n")) as fake:
        sink = TimedSink(0.0)
        await build_models(config(fake)).call(Prompt("Transcribe", (Image(PNG, "image/png"),)),
                                              CallSite("read_page"), Ledger(sink))
    assert [e.outcome for _, e in sink.durable] == ["ok"]
