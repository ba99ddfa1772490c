"""The vision reader inside the read handler: each page stored as soon as it is read, so a unit
whose one page keeps failing is retried for that page only (the others are not paid again)."""

from __future__ import annotations

import asyncio
import contextlib

from support.fake_gemini import Call, FakeGemini, answer, error
from support.helpers import Harness
from test_handlers import _split_and_read

from extract.context import SLOT_RELEASE
from extract.handling import Outcome, handle_message
from extract.messages import READ_QUEUE
from extract.models import ModelConfig
from extract.state import UnitStatus


async def test_a_failing_page_is_retried_alone_and_the_others_paid_once(tmp_path, pdf_factory):
    broken = {"on": True}
    images: dict[str, int] = {}

    def respond(call: Call):
        page = images.setdefault(call.image["data"], len(images) + 1)
        if broken["on"] and page == 3:  # whichever page's image arrived third
            return error(503)
        return answer(f"# Page image {page}\n")

    with FakeGemini(respond) as fake:
        models = ModelConfig(gemini_api_key="k", gemini_base_url=fake.url,
                             model_retry_initial_s=0.01, model_retry_max_delay_s=0.02,
                             model_retry_budget_s=0.2)
        harness = Harness(tmp_path, reader="gemini", models=models)
        ingested = await _split_and_read(harness, pdf_factory("a.pdf", 5))
        (message,) = harness.receive(READ_QUEUE)
        assert await handle_message(harness.ctx, message) is Outcome.RETRY
        keys = harness.objects.list(f"pages/{ingested.document_id}/{ingested.job_id}/")
        assert len(keys) == 4, "the four pages read were stored before the unit failed"
        first_calls = fake.count()

        broken["on"] = False
        harness.queue.change_visibility(message, 0)
        (again,) = harness.receive(READ_QUEUE)
        assert await handle_message(harness.ctx, again) is Outcome.ACK
        assert fake.count() == first_calls + 1, "only the missing page is sent again"

    (unit,) = harness.store.list_units(ingested.job_id)
    assert unit.status is UnitStatus.DONE
    calls = harness.sink.of_type("model_call")
    ok = [(c.page_number, c.model) for c in calls if c.outcome == "ok"]
    assert sorted(p for p, _ in ok) == [1, 2, 3, 4, 5]
    assert {c.unit_id for c in calls} == {unit.unit_id}
    (failing,) = {c.page_number for c in calls if c.outcome == "error"}
    assert {c.attempt for c in calls if c.outcome == "ok" and c.page_number == failing} == {2}
    assert {c.attempt for c in calls if c.outcome == "ok" and c.page_number != failing} == {1}
    reads = {e.page_number: e.reader for e in harness.sink.of_type("page_read")}
    assert set(reads.values()) == {"gemini:gemini-2.5-flash"}


async def test_the_slot_is_freed_once_every_call_is_answered_not_after_the_ledger(
        tmp_path, pdf_factory):
    """A model unit frees its reader's slot when its calls are answered: the ledger rows'
    group commit and the page writes only wait, and the next unit's calls go out meanwhile. The
    order that keeps every payment is unchanged: each page's row is durable before the page is
    stored, and the message is acknowledged after both."""
    log: list[tuple] = []

    def respond(call: Call):
        log.append(("asked", call.n))
        return answer("# A page\n")

    with FakeGemini(respond) as fake:
        harness = Harness(tmp_path, reader="gemini",
                          models=ModelConfig(gemini_api_key="k", gemini_base_url=fake.url))
        ingested = await _split_and_read(harness, pdf_factory("a.pdf", 3))
        (message,) = harness.receive(READ_QUEUE)
        real_commit, real_put_many = harness.sink.commit, harness.objects.put_many

        async def slow_commit(events):
            await asyncio.sleep(0.1)  # the group commit's wait
            await real_commit(events)
            log.extend(("durable", e.page_number) for e in events if e.event_type == "model_call")

        def put_many(objects):
            real_put_many(objects)
            log.extend(("stored", int(key.rsplit("/", 1)[-1].split(".")[0])) for key, _, _ in objects)

        harness.sink.commit, harness.objects.put_many = slow_commit, put_many
        token = SLOT_RELEASE.set(lambda: log.append(("released",)))
        try:
            assert await handle_message(harness.ctx, message) is Outcome.ACK
        finally:
            SLOT_RELEASE.reset(token)

    released = log.index(("released",))
    assert [e for e in log[:released] if e[0] == "asked"] == [("asked", n) for n in (1, 2, 3)]
    assert not [e for e in log[:released] if e[0] in ("durable", "stored")], log
    for page in (1, 2, 3):
        assert log.index(("durable", page)) < log.index(("stored", page)), log
    stored = harness.objects.list(f"pages/{ingested.document_id}/{ingested.job_id}/")
    assert len(stored) == 3


async def test_a_unit_cancelled_with_a_call_in_flight_keeps_its_slot_and_every_payment(
        tmp_path, pdf_factory):
    """The stage's deadline cancels a unit whose third call hangs: the slot is never freed
    while a call is in flight, the two pages answered are stored after their rows, and the
    hanging call is on the ledger too (cancelled in flight, its input tokens estimated)."""
    released: list[str] = []

    with FakeGemini(lambda call: answer("# A page\n"),
                    delay=lambda call: 30.0 if call.n == 3 else 0.0) as fake:
        harness = Harness(tmp_path, reader="gemini",
                          models=ModelConfig(gemini_api_key="k", gemini_base_url=fake.url))
        ingested = await _split_and_read(harness, pdf_factory("a.pdf", 3))
        (message,) = harness.receive(READ_QUEUE)
        token = SLOT_RELEASE.set(lambda: released.append("released"))
        try:
            handling = asyncio.ensure_future(handle_message(harness.ctx, message))
            deadline = asyncio.get_running_loop().time() + 30
            while fake.count() < 3 or len(harness.objects.list("pages/")) < 2:
                assert asyncio.get_running_loop().time() < deadline, "the calls never went out"
                await asyncio.sleep(0.02)
            assert released == [], "a call is still in flight: the slot is held"
            handling.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await handling
        finally:
            SLOT_RELEASE.reset(token)

    calls = harness.sink.of_type("model_call")
    assert sorted(c.outcome for c in calls) == ["ok", "ok", "timeout"], calls
    (hung,) = [c for c in calls if c.outcome == "timeout"]
    assert hung.tokens_estimated and "cancelled" in (hung.detail or "")
    stored = harness.objects.list(f"pages/{ingested.document_id}/{ingested.job_id}/")
    assert len(stored) == 2
    assert hung.page_number not in {int(k.rsplit("/", 1)[-1].split(".")[0]) for k in stored}
