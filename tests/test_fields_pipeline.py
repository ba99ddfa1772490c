"""The fields stage in the pipeline: claim, extract, settle, publish; redelivery, dead claims,
failed strategies and one JSON per document version."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel
from support import fields_fakes
from support.helpers import Harness
from support.pdfgen import make_pdf

from extract.errors import TerminalError, TransientError
from extract.fields.kinds import KINDS
from extract.fields.publish import publish_pending, publish_results
from extract.fields.strategies import STRATEGIES
from extract.handlers.split import plan_pdf_units
from extract.handling import Outcome, handle_dead_letter, handle_message
from extract.messages import FIELDS_QUEUE, SPLIT_QUEUE, FieldsMessage, dead_letter_queue
from extract.poller import send_fields_messages
from extract.state import ClaimStatus, JobStatus
from lake.events import utc_now
from lake.layout import page_key, result_key


@pytest.fixture(autouse=True)
def fake_strategy(monkeypatch):
    """``fake`` and ``fake2`` answer through ``fields_fakes``; its counters start empty."""
    monkeypatch.setitem(STRATEGIES, "fake", "support.fields_fakes:build")
    monkeypatch.setitem(STRATEGIES, "fake2", "support.fields_fakes:build")
    monkeypatch.setattr(fields_fakes, "CALLS", [])
    monkeypatch.setattr(fields_fakes, "BEHAVIOUR", None)
    # These documents are a few words, not NDAs: every one counts as one here, since the claim
    # and the publication are under test (the classifier is, in test_fields_kinds.py).
    monkeypatch.setitem(KINDS, "nda", lambda text: 1.0)


class CountingObjects:
    """The harness's object store, counting the result JSONs written."""

    def __init__(self, inner):
        self.inner = inner
        self.results: list[tuple[str, bytes]] = []

    def put(self, key, data, *, metadata=None):
        self.put_many([(key, data, metadata)])

    def put_many(self, objects):
        self.results += [(key, data) for key, data, _ in objects if key.startswith("results/")]
        self.inner.put_many(objects)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def finished_job(harness: Harness, folder, texts: list[str], name: str = "nda.pdf"):
    """A document whose job succeeded and was indexed, its pages stored as the read stage does."""
    folder.mkdir(exist_ok=True)
    ingested = harness.planner.ingest(make_pdf(folder / name, texts))
    for message in harness.receive(SPLIT_QUEUE):
        harness.queue.delete(message)
    store, job_id = harness.store, ingested.job_id
    store.add_units(job_id, plan_pdf_units(len(texts), 5), pages=len(texts), detected_format="pdf")
    for unit in store.list_units(job_id):
        store.finish_unit(job_id, unit.unit_id)
    harness.objects.put_many([(page_key(ingested.document_id, job_id, n), text.encode(), None)
                              for n, text in enumerate(texts, start=1)])
    assert store.transition_job(job_id, JobStatus.QUEUED, JobStatus.SUCCEEDED, at=utc_now())
    store.mark_indexed(job_id, utc_now())
    return ingested


def fields_messages(harness: Harness, queue: str = FIELDS_QUEUE):
    return harness.queue.receive(queue, max_messages=10, visibility_timeout_s=60)


async def handle_fields_of(harness: Harness, docs, strategy: str, schema: str = "nda"):
    """Ask for ``docs``' fields, send their messages and handle each; returns the outcomes."""
    harness.store.request_fields([doc.job_id for doc in docs], schema, strategy)
    send_fields_messages(harness.ctx)
    return [await handle_message(harness.ctx, message) for message in fields_messages(harness)]


def short_and_long_docs(harness: Harness, tmp_path):
    """A two-page letter and a document past the long-text limit; and the long one's page."""
    from extract.fields.long_text import LONG_TEXT_CHARS

    long_page = "Acme Beta confidential. " * (LONG_TEXT_CHARS // 20)
    short_doc = finished_job(harness, tmp_path / "short", ["Acme Beta", "page two"])
    long_doc = finished_job(harness, tmp_path / "long", [long_page, "page two"])
    return short_doc, long_doc, long_page


async def test_a_finished_job_gets_one_result_and_a_redelivery_does_no_work(tmp_path):
    harness = Harness(tmp_path)
    doc = finished_job(harness, tmp_path / "docs", ["Acme Beta", "page two"])
    assert harness.store.request_fields([doc.job_id], "nda", "fake") == 1
    assert not harness.store.get_job(doc.job_id).settled  # waits for its fields now

    assert send_fields_messages(harness.ctx) == 1
    assert send_fields_messages(harness.ctx) == 0  # the outbox flag holds
    (message,) = fields_messages(harness)
    assert await handle_message(harness.ctx, message) is Outcome.ACK
    harness.queue.delete(message)
    row = harness.store.get_field_claim(doc.job_id, "fake")
    assert row.status is ClaimStatus.DONE and fields_fakes.CALLS == [1]

    harness.queue.send(FIELDS_QUEUE, message.body)  # the same message, delivered again
    (again,) = fields_messages(harness)
    assert await handle_message(harness.ctx, again) is Outcome.ACK
    assert fields_fakes.CALLS == [1]
    assert harness.store.get_field_claim(doc.job_id, "fake") == row

    assert await publish_pending(harness.ctx) == 1
    assert await publish_pending(harness.ctx) == 0
    published = json.loads(harness.objects.get(result_key(doc.document_id)))
    assert published == {
        "document_id": doc.document_id, "status": "succeeded",
        "extracted_fields": {"effective_date": None, "jurisdiction": "Acme", "party": ["Acme", "Beta"],
                             "term": None},
        "model_version": "fake-1", "token_usage": {"input": 120, "output": 30},
        "processing_ms": published["processing_ms"], "job_id": doc.job_id,
        "source_path": "nda.pdf", "strategy": "fake",
        "schema": "nda", "values": published["values"],
        "applicability": {"kind": "nda", "applies": True, "score": 1.0}}
    assert [(v["field"], v["value"], v["page_number"], v["char_offset"], v["confidence"])
            for v in published["values"]] == [("jurisdiction", "Acme", 1, 0, None),
                                              ("party", "Acme", 1, 0, None),
                                              ("party", "Beta", 1, 5, None)]
    assert isinstance(published["processing_ms"], int)
    assert harness.store.get_job(doc.job_id).settled
    values = [(e.field, e.value, e.value_index, e.page_number, e.char_offset)
              for e in harness.sink.of_type("result_field")]
    assert values == [("jurisdiction", "Acme", 0, 1, 0), ("party", "Acme", 0, 1, 0),
                      ("party", "Beta", 1, 1, 5)]
    (result,) = harness.sink.of_type("result_published")
    assert (result.jurisdiction, result.party, result.input_tokens) == ("Acme", ["Acme", "Beta"], 120)


async def test_the_document_kind_is_scored_by_a_cpu_worker_not_on_the_event_loop(tmp_path):
    """On the event loop the score held a run's main process 2.6 ms an NDA and 160 ms a
    363-page book, every other message waiting: it is a CPU call, with the pages' text."""
    harness = Harness(tmp_path)
    doc = finished_job(harness, tmp_path / "docs", ["Acme Beta", "page two"])
    harness.store.request_fields([doc.job_id], "nda", "fake")
    send_fields_messages(harness.ctx)
    (message,) = fields_messages(harness)
    assert await handle_message(harness.ctx, message) is Outcome.ACK

    scored = [args for name, args in harness.cpu.calls if name == "kind_score"]
    assert [(kind, [page.text for page in pages]) for kind, pages in scored] == [
        ("nda", ["Acme Beta", "page two"])]
    assert harness.store.get_field_claim(doc.job_id, "fake").status is ClaimStatus.DONE


async def test_a_long_documents_kind_is_scored_under_the_long_texts_name(tmp_path):
    """The runtime's lanes send a call by its name: a long text's score (0.17 s on a 363-page
    book) must not take the short lane, where every document's sniff and score wait."""
    harness = Harness(tmp_path)
    short_doc, long_doc, long_page = short_and_long_docs(harness, tmp_path)
    assert await handle_fields_of(harness, [short_doc, long_doc], "fake") == [Outcome.ACK] * 2

    names = {len(args[1][0].text): name for name, args in harness.cpu.calls
             if name.startswith("kind_score")}
    assert names == {len("Acme Beta"): "kind_score", len(long_page): "kind_score_long_text"}


async def test_a_runner_that_starts_a_process_a_call_is_not_used_for_the_kind_score(tmp_path):
    """Lambda's runner starts a Python a call: the score (milliseconds) stays in the handler's
    process there, off its event loop."""
    harness = Harness(tmp_path)
    harness.cpu.process_per_call = True
    doc = finished_job(harness, tmp_path / "docs", ["Acme Beta", "page two"])
    assert await handle_fields_of(harness, [doc], "fake") == [Outcome.ACK]

    assert "kind_score" not in [name for name, _ in harness.cpu.calls]
    row = harness.store.get_field_claim(doc.job_id, "fake")
    assert row.status is ClaimStatus.DONE and fields_fakes.CALLS == [1]


async def test_the_rules_check_the_kind_and_extract_in_one_cpu_call(tmp_path):
    """An NDA's fields waited for the short lane twice (the kind score, then the rules: 0.35 and
    0.19 s at the median of 83 NDAs in a run): the offline rules take the check with them, one
    call a document, long texts under the long name."""
    harness = Harness(tmp_path)
    short_doc, long_doc, long_page = short_and_long_docs(harness, tmp_path)
    assert await handle_fields_of(harness, [short_doc, long_doc], "rules") == [Outcome.ACK] * 2

    calls = sorted((len(args[1][0].text), name, args[0]) for name, args in harness.cpu.calls)
    assert calls == [(len("Acme Beta"), "run_rules_of_kind", "nda"),
                     (len(long_page), "run_rules_of_kind_long_text", "nda")]
    for doc in (short_doc, long_doc):
        assert harness.store.get_field_claim(doc.job_id, "rules").status is ClaimStatus.DONE
    await publish_pending(harness.ctx)
    published = json.loads(harness.objects.get(result_key(short_doc.document_id)))
    assert (published["status"], published["applicability"]) == (
        "succeeded", {"kind": "nda", "applies": True, "score": 1.0})


async def test_a_document_not_of_the_kind_gets_no_rules_in_that_one_call(tmp_path, monkeypatch):
    from extract.fields.rules import offline

    def no_rules(pages):
        raise AssertionError("the rules ran on a document that is not an NDA")

    monkeypatch.setattr(offline, "run_rules", no_rules)
    monkeypatch.setitem(KINDS, "nda", lambda text: 0.2)
    harness = Harness(tmp_path)
    doc = finished_job(harness, tmp_path / "docs", ["Dear Sir, the invoice is attached."])
    assert await handle_fields_of(harness, [doc], "rules") == [Outcome.ACK]

    assert [name for name, _ in harness.cpu.calls] == ["run_rules_of_kind"]
    await publish_pending(harness.ctx)
    published = json.loads(harness.objects.get(result_key(doc.document_id)))
    assert (published["status"], published["applicability"]) == (
        "not_applicable", {"kind": "nda", "applies": False, "score": 0.2})


@pytest.mark.parametrize("score, status", [(1.0, "failed"), (0.2, "not_applicable")])
async def test_a_schema_the_rules_refuse_is_refused_for_documents_of_its_kind_only(
        tmp_path, monkeypatch, score, status):
    """The check before the refusal, as for every strategy: a document not of the schema's kind
    is ``not_applicable``, one of it fails ``unsupported_schema``."""
    monkeypatch.setitem(KINDS, "nda", lambda text: score)
    harness = Harness(tmp_path)
    doc = finished_job(harness, tmp_path / "docs", ["Acme Beta", "page two"])
    assert len(await handle_fields_of(harness, [doc], "rules",
                                      "support.fields_fakes:NdaInvoice")) == 1

    await publish_pending(harness.ctx)
    published = json.loads(harness.objects.get(result_key(doc.document_id)))
    assert published["status"] == status
    if status == "failed":
        assert published["error"]["reason"] == "unsupported_schema"
    assert [name for name, _ in harness.cpu.calls] == ["kind_score"]


@pytest.mark.parametrize("score, rules_calls", [(1.0, ["run_rules"]), (0.2, [])])
async def test_on_lambdas_runner_the_rules_score_the_kind_in_the_handlers_process(
        tmp_path, monkeypatch, score, rules_calls):
    """A process a call costs more than a score: on Lambda's runner the rules strategy scores
    in the handler's process, and starts a process for the rules of an NDA only."""
    monkeypatch.setitem(KINDS, "nda", lambda text: score)
    harness = Harness(tmp_path)
    harness.cpu.process_per_call = True
    doc = finished_job(harness, tmp_path / "docs", ["Acme Beta", "page two"])
    assert await handle_fields_of(harness, [doc], "rules") == [Outcome.ACK]

    assert [name for name, _ in harness.cpu.calls] == rules_calls
    assert harness.store.get_field_claim(doc.job_id, "rules").status is ClaimStatus.DONE


async def test_a_claim_left_by_a_dead_worker_is_not_seized_and_ends_in_the_dead_letter_queue(
        tmp_path):
    harness = Harness(tmp_path)  # three deliveries allowed
    doc = finished_job(harness, tmp_path / "docs", ["Acme Beta"])
    harness.store.request_fields([doc.job_id], "nda", "fake")
    assert harness.store.claim_fields(doc.job_id, "fake", document_id=doc.document_id,
                                      claimant="gone:4242/attempt-1", at=utc_now())
    send_fields_messages(harness.ctx)
    for delivery in (1, 2, 3):  # the last one too: left for the dead-letter queue, not acked
        (message,) = fields_messages(harness)
        assert message.receive_count == delivery
        assert await handle_message(harness.ctx, message) is Outcome.RETRY
        harness.queue.change_visibility(message, 0)
    assert fields_messages(harness) == []  # moved on this receive
    claim = harness.store.get_field_claim(doc.job_id, "fake")
    assert (claim.status, claim.claimant) == (ClaimStatus.CLAIMED, "gone:4242/attempt-1")
    assert fields_fakes.CALLS == []

    (dead,) = fields_messages(harness, dead_letter_queue(FIELDS_QUEUE))
    assert await handle_dead_letter(harness.ctx, dead) is Outcome.ACK
    assert harness.store.get_field_claim(doc.job_id, "fake").status is ClaimStatus.FAILED
    assert await publish_pending(harness.ctx) == 1
    published = json.loads(harness.objects.get(result_key(doc.document_id)))
    assert published["status"] == "failed" and published["extracted_fields"] is None
    assert published["error"]["reason"] == "dead_letter"
    failures = [(f.error_type, f.final) for f in harness.sink.of_type("failure")]
    assert failures == [("claim_held", False)] * 3 + [("dead_letter", True)]
    (result,) = harness.sink.of_type("result_published")
    assert (result.status, result.failure_reason) == ("failed", "dead_letter")
    assert harness.store.get_job(doc.job_id).settled


async def test_the_publisher_writes_one_json_per_document_version(tmp_path):
    harness = Harness(tmp_path)
    objects = harness.ctx.objects = CountingObjects(harness.objects)
    first = finished_job(harness, tmp_path / "docs", ["Acme"])

    async def extract(job_id: str, strategy: str = "fake") -> None:
        harness.store.request_fields([job_id], "nda", strategy)
        send_fields_messages(harness.ctx)
        (message,) = fields_messages(harness)
        assert await handle_message(harness.ctx, message) is Outcome.ACK
        harness.queue.delete(message)

    await extract(first.job_id)
    # A publisher that dies after the JSON and the events, before its flag: the next one
    # publishes again, with the same bytes and the same event ids.
    rows = harness.store.unpublished_results()
    harness.store.mark_result_published = lambda *a, **k: False  # the crash
    await publish_results(harness.ctx, rows)
    del harness.store.mark_result_published
    assert await publish_pending(harness.ctx) == 1
    assert await publish_pending(harness.ctx) == 0
    assert len(objects.results) == 2 and objects.results[0] == objects.results[1]
    emitted = [e.event_id for e in harness.sink.events if e.event_type.startswith("result")]
    assert len(emitted) == 6 and len(set(emitted)) == 3  # a result and two values, twice

    second = finished_job(harness, tmp_path / "docs", ["Beta"])  # a new version, same name
    assert (second.document_id, second.job_id != first.job_id) == (first.document_id, True)
    await extract(second.job_id)
    assert await publish_pending(harness.ctx) == 1
    await extract(first.job_id, "fake2")  # the old version's late result: lake only
    assert await publish_pending(harness.ctx) == 1
    assert [json.loads(data)["job_id"] for _, data in objects.results[2:]] == [second.job_id]
    assert json.loads(harness.objects.get(result_key(first.document_id)))["job_id"] == second.job_id
    late = [e for e in harness.sink.of_type("result_published") if e.strategy == "fake2"]
    assert [e.job_id for e in late] == [first.job_id]


def _raise(error: Exception):
    def behave(pages, schema):
        raise error
    return behave


class _Strict(BaseModel):
    count: int


def _invalid(pages, schema):
    _Strict.model_validate({"count": "many"})


@pytest.mark.parametrize("behaviour, reason", [
    (_raise(TerminalError("still invalid after 3 tries", error_type="invalid_output")),
     "invalid_output"),
    (_invalid, "invalid_output"),
    (_raise(TerminalError("not this schema", error_type="unsupported_schema")),
     "unsupported_schema"),
])
async def test_a_strategy_that_fails_gives_a_failed_result_with_its_reason(
        tmp_path, monkeypatch, behaviour, reason):
    monkeypatch.setattr(fields_fakes, "BEHAVIOUR", behaviour)
    harness = Harness(tmp_path)
    doc = finished_job(harness, tmp_path / "docs", ["Acme"])
    harness.store.request_fields([doc.job_id], "nda", "fake")
    send_fields_messages(harness.ctx)
    (message,) = fields_messages(harness)
    assert await handle_message(harness.ctx, message) is Outcome.ACK
    assert await publish_pending(harness.ctx) == 1
    published = json.loads(harness.objects.get(result_key(doc.document_id)))
    assert (published["status"], published["error"]["reason"]) == ("failed", reason)
    assert [(f.stage, f.error_type, f.final) for f in harness.sink.of_type("failure")] == [
        ("fields", reason, True)]


async def test_a_missing_strategy_gives_a_failed_result_saying_so(tmp_path, monkeypatch):
    monkeypatch.setitem(STRATEGIES, "ghost", "extract.fields.ghost_strategy:build")
    harness = Harness(tmp_path)
    doc = finished_job(harness, tmp_path / "docs", ["Acme"])
    harness.store.request_fields([doc.job_id], "nda", "ghost")
    send_fields_messages(harness.ctx)
    (message,) = fields_messages(harness)
    assert await handle_message(harness.ctx, message) is Outcome.ACK
    await publish_pending(harness.ctx)
    (result,) = harness.sink.of_type("result_published")
    assert (result.status, result.failure_reason) == ("failed", "strategy_unavailable")


async def test_a_transient_failure_releases_the_claim_and_fails_only_on_the_last_delivery(
        tmp_path, monkeypatch):
    monkeypatch.setattr(fields_fakes, "BEHAVIOUR", _raise(TransientError("provider 503")))
    harness = Harness(tmp_path)
    doc = finished_job(harness, tmp_path / "docs", ["Acme"])
    harness.store.request_fields([doc.job_id], "nda", "fake")
    send_fields_messages(harness.ctx)
    for _ in (1, 2):
        (message,) = fields_messages(harness)
        assert await handle_message(harness.ctx, message) is Outcome.RETRY
        assert harness.store.get_field_claim(doc.job_id, "fake") is None  # released
        harness.queue.change_visibility(message, 0)
    (last,) = fields_messages(harness)
    assert await handle_message(harness.ctx, last) is Outcome.ACK
    assert fields_fakes.CALLS == [1, 1, 1]
    row = harness.store.get_field_claim(doc.job_id, "fake")
    assert row.status is ClaimStatus.FAILED and json.loads(row.result)["failure_reason"] == "transient"


async def test_a_job_that_failed_gets_a_failed_result_not_silence(tmp_path):
    harness = Harness(tmp_path)
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "bad.pdf").write_bytes(b"not a pdf")
    doc = harness.planner.ingest(folder / "bad.pdf")
    harness.store.request_fields([doc.job_id], "nda", "fake")
    assert send_fields_messages(harness.ctx) == 0  # not finished: nothing to send yet
    assert harness.store.transition_job(doc.job_id, JobStatus.QUEUED, JobStatus.FAILED,
                                        failure_reason="unsupported_format", at=utc_now())
    assert not harness.store.get_job(doc.job_id).settled
    assert send_fields_messages(harness.ctx) == 1
    (message,) = fields_messages(harness)
    assert FieldsMessage.model_validate_json(message.body).schema_name == "nda"
    assert await handle_message(harness.ctx, message) is Outcome.ACK
    await publish_pending(harness.ctx)
    (result,) = harness.sink.of_type("result_published")
    assert (result.status, result.failure_reason) == ("failed", "job_failed")
    assert fields_fakes.CALLS == [] and harness.store.get_job(doc.job_id).settled


async def test_a_claim_older_than_its_lease_is_taken_over_and_the_document_gets_its_fields(
        tmp_path):
    """Issue 19: a worker killed (kill -9) during an extraction left its claim; once the claim
    is older than the fields stage's time limit (no live delivery runs past it), the next
    delivery takes it over and extracts, rather than ending in a permanent dead_letter."""
    from datetime import timedelta

    harness = Harness(tmp_path)
    doc = finished_job(harness, tmp_path / "docs", ["Acme Beta"])
    harness.store.request_fields([doc.job_id], "nda", "fake")
    assert harness.store.claim_fields(doc.job_id, "fake", document_id=doc.document_id,
                                      claimant="gone:4242/attempt-1",
                                      at=utc_now() - timedelta(hours=3))
    send_fields_messages(harness.ctx)
    (message,) = fields_messages(harness)
    assert await handle_message(harness.ctx, message) is Outcome.ACK
    claim = harness.store.get_field_claim(doc.job_id, "fake")
    assert claim.status is ClaimStatus.DONE and claim.claimant != "gone:4242/attempt-1"
    assert fields_fakes.CALLS == [1]


async def test_a_cancelled_extraction_releases_its_claim(tmp_path, monkeypatch):
    """Issue 19: a cancellation (a stop, the stage's time limit) during an extraction used to
    skip the claim's release, leaving a claim nobody would take."""
    import asyncio

    harness = Harness(tmp_path)
    doc = finished_job(harness, tmp_path / "docs", ["Acme Beta"])
    harness.store.request_fields([doc.job_id], "nda", "fake")
    send_fields_messages(harness.ctx)

    def cancelled(pages, schema):
        raise asyncio.CancelledError  # what the await inside a real strategy receives

    monkeypatch.setattr(fields_fakes, "BEHAVIOUR", cancelled)
    (message,) = fields_messages(harness)
    with pytest.raises(asyncio.CancelledError):
        await handle_message(harness.ctx, message)
    assert harness.store.get_field_claim(doc.job_id, "fake") is None


class PicklingRunner:
    """Sends each call's arguments through pickle, as the runtime's process pool does, and
    notes what crossed (and whether the handler's process had read the pages before)."""

    def __init__(self):
        self.calls: list[tuple[str, bytes, bool]] = []

    async def run(self, fn, *args, timeout_s: float):
        import asyncio
        import pickle

        from extract.fields.stored_pages import PagesOnDisk

        read_here = any(isinstance(a, PagesOnDisk) and a._pages is not None for a in args)
        sent = pickle.dumps(args)
        self.calls.append((fn.__name__, sent, read_here))
        return await asyncio.to_thread(fn, *pickle.loads(sent))


async def test_the_rules_worker_reads_the_pages_only_their_paths_travel(tmp_path):
    """The run's own process (its CPU is the run's ceiling) read every page and the pool
    pickled the texts to the rules' worker: 0.7 ms of its 5 ms of fields work an NDA. With the
    pages kept as files here, only their paths cross; the worker reads them, and the result
    is the one the texts give."""
    harness = Harness(tmp_path)
    harness.ctx.cpu = harness.cpu = PicklingRunner()
    texts = ["MUTUAL NON-DISCLOSURE AGREEMENT between Acme Beta, Inc. and Zeta LLC",
             "The laws of the State of Delaware govern. " * 50]
    doc = finished_job(harness, tmp_path / "docs", texts)
    assert await handle_fields_of(harness, [doc], "rules") == [Outcome.ACK]

    ((name, sent, read_here),) = harness.cpu.calls
    assert name == "run_rules_of_kind" and not read_here
    assert b"Delaware" not in sent and len(sent) < 1000
    await publish_pending(harness.ctx)
    published = json.loads(harness.objects.get(result_key(doc.document_id)))
    assert published["status"] == "succeeded"
    assert published["extracted_fields"]["jurisdiction"] == "Delaware"


def test_a_page_gone_before_the_worker_reads_it_is_a_missing_page(tmp_path):
    import pickle

    from extract.fields.stored_pages import PagesOnDisk

    (tmp_path / "00001.md").write_text("one")
    (tmp_path / "00002.md").write_text("two")
    pages = PagesOnDisk.of([(2, tmp_path / "00002.md"), (1, tmp_path / "00001.md")])
    copy = pickle.loads(pickle.dumps(pages))
    assert [(p.number, p.text) for p in copy] == [(1, "one"), (2, "two")]
    (tmp_path / "00002.md").unlink()
    again = pickle.loads(pickle.dumps(pages))
    with pytest.raises(TerminalError) as raised:
        list(again)
    error = pickle.loads(pickle.dumps(raised.value))  # as the pool hands it back
    assert error.error_type == "missing_pages" and "page 2" in str(error)
