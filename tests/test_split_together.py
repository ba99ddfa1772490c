"""Split messages received together: the PDFs among them are counted and read in one worker
call and planned as one at a time would plan them; every other message, and a document whose
read fails, is handled alone with its own outcome."""

from __future__ import annotations

import dataclasses

import pytest
from support.helpers import Harness, handle_together, watch_batches

import extract.readers.text as text_module
from extract.handling import Outcome
from extract.messages import READ_QUEUE, SPLIT_QUEUE, SplitMessage
from extract.ports import ReceivedMessage
from extract.state import JobStatus

BATCH_CALL = "count_and_read_first_pages_of_each"


def _harness(tmp_path) -> Harness:
    """Local ports, the split reading the first 20 pages, pages stored by the worker."""
    harness = Harness(tmp_path, text_pages_at_split=20)
    harness.ctx = dataclasses.replace(harness.ctx, worker_objects=harness.objects)
    return harness


def _received(harness: Harness, paths) -> tuple[dict, list[ReceivedMessage]]:
    ingested = {path.name: harness.planner.ingest(path) for path in paths}
    return ingested, harness.receive(SPLIT_QUEUE)


async def test_pdfs_received_together_are_split_in_one_worker_call(tmp_path, pdf_factory):
    harness = _harness(tmp_path)
    ingested, received = _received(harness, [pdf_factory("a.pdf", 2, word="ant"),
                                             pdf_factory("b.pdf", 7, word="bee"),
                                             pdf_factory("c.pdf", 23, word="cat")])

    assert await handle_together(harness.ctx, received) == [Outcome.ACK] * 3

    assert [name for name, _ in harness.cpu.calls] == [BATCH_CALL]
    jobs = {j.source_name: j for j in harness.store.list_jobs(
        [i.job_id for i in ingested.values()])}
    assert {n: (j.pages, j.units, j.detected_format) for n, j in jobs.items()} == {
        "a.pdf": (2, 1, "pdf"), "b.pdf": (7, 2, "pdf"), "c.pdf": (23, 5, "pdf")}
    # Pages 1 to 20 were read at the split: only c.pdf's last unit (21 to 23) is left to read.
    (message,) = harness.read_messages()
    assert (message[1].job_id, message[1].unit_id) == (jobs["c.pdf"].job_id, "u00005")
    c = jobs["c.pdf"]
    assert len(harness.objects.list(f"pages/{c.document_id}/{c.job_id}/")) == 20
    assert len(harness.sink.of_type("job_split")) == 3
    assert len(harness.sink.of_type("format_detected")) == 3
    assert len(harness.sink.of_type("page_read")) == 2 + 7 + 20
    assert {e.job_id for e in harness.sink.of_type("page_read")} == {
        j.job_id for j in jobs.values()}


async def test_what_the_batch_cannot_take_is_split_alone_with_its_own_outcome(tmp_path,
                                                                             pdf_factory):
    """A CSV, a damaged PDF and a message for no job share a batch with a good PDF: the PDF is
    planned in the batch's call, the CSV is read as a sheet, the damaged PDF fails its job
    (``corrupt``) and the stray message is dropped with its failure, as each would alone."""
    harness = _harness(tmp_path)
    good = pdf_factory("good.pdf", 3)
    folder = good.parent
    (folder / "table.csv").write_text("name,amount\nalpha,1\nbeta,2\n")
    (folder / "broken.pdf").write_bytes(b"%PDF-1.4\n1 0 obj garbage\n%%EOF\n")
    ingested, received = _received(harness, [good, folder / "table.csv", folder / "broken.pdf"])
    stray = SplitMessage(document_id="nobody", job_id="no-such-job").model_dump_json()
    received.append(ReceivedMessage(SPLIT_QUEUE, "m-stray", stray, "r-stray", 1))

    assert await handle_together(harness.ctx, received) == [Outcome.ACK] * 4

    calls = [name for name, _ in harness.cpu.calls]
    assert calls.count(BATCH_CALL) == 1
    jobs = {j.source_name: j for j in harness.store.list_jobs(
        [i.job_id for i in ingested.values()])}
    assert (jobs["good.pdf"].units, jobs["good.pdf"].detected_format) == (1, "pdf")
    assert (jobs["table.csv"].units, jobs["table.csv"].detected_format) == (1, "csv")
    assert jobs["broken.pdf"].error == "corrupt" and jobs["broken.pdf"].units is None
    failures = {(f.job_id, f.error_type) for f in harness.sink.of_type("failure")}
    assert failures == {(jobs["broken.pdf"].job_id, "corrupt"), ("no-such-job", "unknown_job")}


async def test_a_batch_whose_call_fails_leaves_each_message_to_be_split_alone(
        tmp_path, pdf_factory, monkeypatch):
    """The worker call of the batch dies (a worker killed, say): nothing of it was recorded, and
    each document is split alone, once; none waits for a redelivery."""
    harness = _harness(tmp_path)
    real = text_module.count_and_read_first_pages_of_each
    failures = iter([RuntimeError("worker died")])

    def once_failing(documents, store):
        for error in failures:
            raise error
        return real(documents, store)

    monkeypatch.setattr("extract.handlers.split_together.count_and_read_first_pages_of_each",
                        once_failing)
    ingested, received = _received(harness, [pdf_factory("a.pdf", 2), pdf_factory("b.pdf", 4)])

    assert await handle_together(harness.ctx, received) == [Outcome.ACK, Outcome.ACK]

    assert [name for name, _ in harness.cpu.calls].count("count_and_read_first_pages") == 2
    jobs = harness.store.list_jobs([i.job_id for i in ingested.values()])
    assert sorted(j.units for j in jobs) == [1, 1]
    assert len(harness.sink.of_type("job_split")) == 2
    assert harness.receive(READ_QUEUE) == []


async def test_a_redelivered_split_is_handled_alone(tmp_path, pdf_factory):
    """A second delivery may find pages its first one stored: ``plan_pdf`` knows how to take
    them, so a redelivered message never joins a batch."""
    harness = _harness(tmp_path)
    ingested, received = _received(harness, [pdf_factory("a.pdf", 2), pdf_factory("b.pdf", 3)])
    received = [dataclasses.replace(received[0], receive_count=2), received[1]]

    assert await handle_together(harness.ctx, received) == [Outcome.ACK, Outcome.ACK]

    calls = [name for name, _ in harness.cpu.calls]
    assert calls.count("count_and_read_first_pages") == 1  # the redelivered one, alone
    assert calls.count(BATCH_CALL) == 1
    jobs = harness.store.list_jobs([i.job_id for i in ingested.values()])
    assert all(j.status is JobStatus.QUEUED and j.units == 1 for j in jobs)


def test_the_receiver_takes_splits_together_only_when_they_outnumber_the_free_workers(
        settings, pdf_factory):
    """Sixteen at most for one worker, and none together when the queue holds fewer than two for
    each free worker: a few documents still spread over every worker."""
    from infra.local.runtime import SPLIT_TOGETHER, LocalRuntime

    runtime = LocalRuntime(settings)
    runtime.queue.send_batch(SPLIT_QUEUE, ["{}"] * 40)
    assert runtime._together(SPLIT_QUEUE, free=2) == SPLIT_TOGETHER
    assert runtime._together(SPLIT_QUEUE, free=8) == 5
    assert runtime._together(SPLIT_QUEUE, free=30) == 1
    assert runtime._together(SPLIT_QUEUE, free=41) == 0
    assert runtime._together(READ_QUEUE, free=2) == 1


def test_a_batch_of_files_that_are_not_pdfs_is_handed_back_one_by_one(settings, tmp_path,
                                                                      monkeypatch):
    """Nine CSV files taken by one worker as one batch (one free worker, nine waiting): the
    batch leaves them all, each goes back to the inbox for a worker of its own, and every one
    is planned once; the run ends."""
    import asyncio

    from infra.local.runtime import LocalRuntime

    folder = tmp_path / "tables"
    folder.mkdir()
    for n in range(9):
        (folder / f"t{n}.csv").write_text(f"name,amount\nrow{n},{n}\n")
    runtime = LocalRuntime(settings.model_copy(update={"concurrency": 1}))
    ids = [i.job_id for i in runtime.planner().ingest_many(sorted(folder.iterdir()))]
    batches = watch_batches(monkeypatch)

    def done():
        return all(j.settled for j in runtime.store.list_jobs(ids))

    asyncio.run(asyncio.wait_for(runtime.process(done), timeout=120))
    assert batches and batches[0] == 9
    jobs = runtime.store.list_jobs(ids)
    assert {(j.status, j.units, j.detected_format) for j in jobs} == {
        (JobStatus.SUCCEEDED, 1, "csv")}
    assert (runtime.stats.messages, runtime.stats.retries) == (18, 0)  # 9 splits, 9 indexings


def test_the_batch_stores_every_documents_pages_in_one_write_after_reading_all(tmp_path,
                                                                               pdf_factory):
    """The worker call holds each document's pages until every document is read, then writes
    them in one durable batch; a document that raises stores nothing and leaves the others'."""
    from infra.local.objectstore import FolderObjectStore

    writes: list[list[str]] = []

    class Recording(FolderObjectStore):
        def put_many(self, objects):
            writes.append([key for key, _, _ in objects])
            super().put_many(objects)

    store = Recording(tmp_path / "objects")
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"%PDF-1.4\n1 0 obj garbage\n%%EOF\n")
    documents = [(pdf_factory("a.pdf", 2), None, 20, 100, "da", "ja"),
                 (broken, None, 20, 100, "dx", "jx"),
                 (pdf_factory("b.pdf", 4), None, 20, 100, "db", "jb")]

    results = text_module.count_and_read_first_pages_of_each(documents, store)

    assert results[1] is None
    assert [pages for pages, _ in (results[0], results[2])] == [2, 4]
    assert all(stored for r in (results[0], results[2]) for _, _, _, stored in r[1])
    assert len(writes) == 1 and len(writes[0]) == 6
    assert store.list("pages/da/ja/") + store.list("pages/db/jb/") == sorted(writes[0])


def test_a_batch_whose_store_fails_reports_no_page_stored(tmp_path, pdf_factory):
    """The held pages' write fails (a full disk): the call raises, so no page is reported stored
    and every message of the batch goes back to be split alone."""
    from infra.local.objectstore import FolderObjectStore

    class Full(FolderObjectStore):
        def put_many(self, objects):
            raise OSError(28, "No space left on device")

    documents = [(pdf_factory("a.pdf", 2), None, 20, 100, "da", "ja")]
    with pytest.raises(OSError, match="No space"):
        text_module.count_and_read_first_pages_of_each(documents, Full(tmp_path / "objects"))


async def test_what_the_batch_cannot_take_is_handed_back_before_the_pdfs_are_read(
        tmp_path, pdf_factory):
    """A one-page Office file (here a CSV) received with PDFs starts at once, not after the
    PDFs' read: the runtime's ``hand_back`` gets it before the batch's call."""
    from extract.handling import settle_together

    harness = _harness(tmp_path)
    pdfs = [pdf_factory(f"{name}.pdf", 3, word=name) for name in ("ant", "bee")]
    (pdfs[0].parent / "table.csv").write_text("name,amount\nalpha,1\n")
    ingested, received = _received(harness, [*pdfs, pdfs[0].parent / "table.csv"])
    csv_position = next(p for p, r in enumerate(received)
                        if ingested["table.csv"].job_id in r.body)
    handed: list[tuple[int, int]] = []  # (position, batch calls made by then)

    settled, left = await settle_together(harness.ctx, received, hand_back=lambda p: handed.append(
        (p, [name for name, _ in harness.cpu.calls].count(BATCH_CALL))))

    assert handed == [(csv_position, 0)]
    assert csv_position not in settled and csv_position not in left
    assert sorted(settled) == sorted(set(range(3)) - {csv_position}) and left == []
