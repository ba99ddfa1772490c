"""The vision reader inside the read handler: each page stored as soon as it is read, so a unit
whose one page keeps failing is retried for that page only (the others are not paid again)."""

from __future__ import annotations

from support.fake_gemini import Call, FakeGemini, answer, error
from support.helpers import Harness
from test_handlers import _split_and_read

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
