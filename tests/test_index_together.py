"""Index messages received together are handled together: one call that indexes their jobs,
one commit of their events; a message the batch cannot settle goes on its own, with its own
failure, and a batch that fails leaves every message to be handled alone."""

from __future__ import annotations

import asyncio

import pytest
from support.helpers import Harness, handle_together, watch_batches

import extract.handlers.index as index_module
from extract.handling import Outcome
from extract.messages import INDEX_QUEUE, READ_QUEUE, SPLIT_QUEUE, IndexMessage
from extract.poller import poll_once
from extract.ports import ReceivedMessage
from extract.state import JobStatus


@pytest.fixture
def calls(monkeypatch):
    """The job ids of each indexing call, in order."""
    made: list[list[str]] = []
    real = index_module.index_stored_jobs

    def counted(index, objects, jobs):
        made.append([job_id for _, _, job_id, _ in jobs])
        return real(index, objects, jobs)

    monkeypatch.setattr(index_module, "index_stored_jobs", counted)
    return made


async def _succeeded(harness: Harness, pdf_factory, pages: dict[str, int]):
    """Documents read to success, their index messages sent and received together."""
    ingested = {name: harness.planner.ingest(pdf_factory(name, count, word=name.split(".")[0]))
                for name, count in pages.items()}
    await harness.drain(SPLIT_QUEUE, READ_QUEUE)
    await poll_once(harness.ctx)
    return ingested, harness.receive(INDEX_QUEUE)


async def test_index_messages_received_together_are_indexed_in_one_call(tmp_path, pdf_factory,
                                                                        calls):
    harness = Harness(tmp_path)
    ingested, received = await _succeeded(harness, pdf_factory,
                                          {"ant.pdf": 2, "bee.pdf": 3, "cat.pdf": 1})
    assert len(received) == 3

    outcomes = await handle_together(harness.ctx, received)

    assert outcomes == [Outcome.ACK] * 3
    assert [sorted(call) for call in calls] == [sorted(i.job_id for i in ingested.values())]
    jobs = harness.store.list_jobs([i.job_id for i in ingested.values()])
    assert all(job.indexed_at is not None for job in jobs)
    indexed = {e.job_id: e.pages for e in harness.sink.of_type("document_indexed")}
    assert indexed == {ingested["ant.pdf"].job_id: 2, ingested["bee.pdf"].job_id: 3,
                       ingested["cat.pdf"].job_id: 1}
    assert harness.index.search("bee page 3")[0].source_name == "bee.pdf"
    assert harness.index.search("cat")[0].source_name == "cat.pdf"


async def test_a_job_with_a_lost_page_or_no_job_fails_alone(tmp_path, pdf_factory, calls):
    """The others of the batch are indexed together; the lost page fails its own job's indexing
    (``missing_pages``), and a message for a job the store does not know is dropped with its own
    failure, as each would be on its own."""
    harness = Harness(tmp_path)
    ingested, received = await _succeeded(harness, pdf_factory,
                                          {"ant.pdf": 2, "bee.pdf": 3, "cat.pdf": 1})
    bee = ingested["bee.pdf"]
    harness.objects.delete_prefix(harness.objects.list(f"pages/{bee.document_id}/")[0])
    stray = IndexMessage(document_id="nobody", job_id="no-such-job").model_dump_json()
    received.append(ReceivedMessage(INDEX_QUEUE, "m-stray", stray, "r-stray", 1))

    outcomes = await handle_together(harness.ctx, received)

    assert outcomes == [Outcome.ACK] * 4
    assert [sorted(call) for call in calls] == [sorted([ingested["ant.pdf"].job_id,
                                                        ingested["cat.pdf"].job_id])]
    job = harness.store.get_job(bee.job_id)
    assert (job.status, job.index_error, job.indexed_at) == (JobStatus.SUCCEEDED,
                                                             "missing_pages", None)
    failures = {(f.job_id, f.error_type, f.final) for f in harness.sink.of_type("failure")}
    assert failures == {(bee.job_id, "missing_pages", True),
                        ("no-such-job", "unknown_job", True)}
    assert {e.job_id for e in harness.sink.of_type("document_indexed")} == {
        ingested["ant.pdf"].job_id, ingested["cat.pdf"].job_id}


async def test_a_batch_that_fails_leaves_each_message_to_be_handled_alone(tmp_path, pdf_factory,
                                                                          calls, monkeypatch):
    """The index refuses the batch's one transaction (a disk error, once): nothing of it was
    kept, and each message is indexed on its own call; none waits for a redelivery."""
    harness = Harness(tmp_path)
    ingested, received = await _succeeded(harness, pdf_factory, {"ant.pdf": 2, "bee.pdf": 3})
    real = type(harness.index).replace_documents
    failures = iter([OSError("disk I/O error")])

    def once_failing(self, documents):
        for error in failures:
            raise error
        return real(self, documents)

    monkeypatch.setattr(type(harness.index), "replace_documents", once_failing)

    outcomes = await handle_together(harness.ctx, received)

    assert outcomes == [Outcome.ACK, Outcome.ACK]
    assert sorted(len(call) for call in calls) == [1, 1, 2]  # together, then one each
    jobs = harness.store.list_jobs([i.job_id for i in ingested.values()])
    assert all(job.indexed_at is not None for job in jobs)
    assert len(harness.sink.of_type("document_indexed")) == 2
    assert harness.sink.of_type("failure") == []


async def test_a_large_job_is_indexed_on_its_own_call(tmp_path, pdf_factory, calls, monkeypatch):
    """A job of more than ``MAX_PAGES_TOGETHER`` pages goes alone, so small documents never
    wait behind a large one's tokenising."""
    monkeypatch.setattr(index_module, "MAX_PAGES_TOGETHER", 3)
    harness = Harness(tmp_path)
    ingested, received = await _succeeded(harness, pdf_factory,
                                          {"ant.pdf": 3, "bee.pdf": 4, "cat.pdf": 2})
    by_job = {i.job_id: name for name, i in ingested.items()}
    received.sort(key=lambda m: by_job[IndexMessage.model_validate_json(m.body).job_id])

    assert await handle_together(harness.ctx, received) == [Outcome.ACK] * 3

    assert [sorted(by_job[job_id] for job_id in call) for call in calls] == [
        ["ant.pdf", "cat.pdf"], ["bee.pdf"]]


async def test_a_duplicate_in_the_same_batch_is_indexed_once(tmp_path, pdf_factory, calls):
    harness = Harness(tmp_path)
    ingested, received = await _succeeded(harness, pdf_factory, {"ant.pdf": 2, "bee.pdf": 1})
    first = received[0]
    received.append(ReceivedMessage(INDEX_QUEUE, "m-dup", first.body, "r-dup", 1))

    assert await handle_together(harness.ctx, received) == [Outcome.ACK] * 3

    assert [len(call) for call in calls] == [2]
    assert sorted(e.job_id for e in harness.sink.of_type("document_indexed")) == sorted(
        i.job_id for i in ingested.values())


def test_the_runtime_hands_index_messages_waiting_together_to_one_worker(settings, pdf_factory,
                                                                        monkeypatch):
    """Six succeeded jobs' index messages wait on the queue (the receiver did not take them
    while the jobs ran); the next run's receiver takes them in one receive and one worker
    handles them as one batch: every job searchable, the queue empty."""
    import infra.local.runtime as runtime_module
    from infra.local.runtime import LocalRuntime

    runtime = LocalRuntime(settings)
    paths = [pdf_factory(f"doc{n}.pdf", 2, word=f"word{n}") for n in range(6)]
    ids = [i.job_id for i in runtime.planner().ingest_many(paths)]

    def succeeded():
        return all(j.status is JobStatus.SUCCEEDED for j in runtime.store.list_jobs(ids)) and \
            runtime.queue.depth(INDEX_QUEUE).visible == 6

    without_index = tuple(q for q in runtime_module.RECEIVE_ORDER if q != INDEX_QUEUE)
    monkeypatch.setattr(runtime_module, "RECEIVE_ORDER", without_index)
    asyncio.run(asyncio.wait_for(runtime.process(succeeded), timeout=120))
    monkeypatch.undo()

    batches = watch_batches(monkeypatch)

    def indexed():
        return all(j.indexed_at is not None for j in runtime.store.list_jobs(ids))

    asyncio.run(asyncio.wait_for(runtime.process(indexed), timeout=120))
    assert batches == [6]
    assert runtime.queue.depth(INDEX_QUEUE).visible == 0
    assert runtime.index.search("word4")[0].source_name == "doc4.pdf"
