"""The embedded runtime end to end: drop files, get searchable pages and a lake that agrees."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest

from extract.state import JobStatus
from infra.local.runtime import LocalRuntime
from lake.catalog import query


def run_to_completion(runtime: LocalRuntime, paths) -> list:
    ingested = runtime.planner().ingest_many(paths)
    ids = [i.job_id for i in ingested]

    def done():
        return all(j.settled for j in runtime.store.list_jobs(ids))

    asyncio.run(runtime.process(done))
    return ingested


def test_good_and_bad_files_all_reach_a_terminal_state(settings, pdf_factory, tmp_path):
    long_doc = pdf_factory("long.pdf", 23, word="zebra")
    pdf_factory("letter.pdf", 2, word="giraffe")
    folder = long_doc.parent
    (folder / "empty.pdf").write_bytes(b"")
    (folder / "notes.pdf").write_text("this is plain text, not a PDF\nsecond line\n")
    (folder / "broken.pdf").write_bytes(b"%PDF-1.4\n%%EOF\n")
    runtime = LocalRuntime(settings)
    ingested = run_to_completion(runtime, sorted(folder.iterdir()))

    jobs = {j.source_name: j for j in runtime.store.list_jobs([i.job_id for i in ingested])}
    assert {n: (j.status.value, j.failure_reason) for n, j in jobs.items()} == {
        "long.pdf": ("succeeded", None),
        "letter.pdf": ("succeeded", None),
        "empty.pdf": ("failed", "empty_file"),
        "notes.pdf": ("failed", "unsupported_format"),
        "broken.pdf": ("failed", "corrupt"),
    }
    assert (jobs["long.pdf"].pages, jobs["long.pdf"].units) == (23, 5)

    hits = runtime.index.search("zebra page 17")
    assert hits[0].source_name == "long.pdf" and hits[0].page_number == 17
    assert runtime.index.search("giraffe")[0].source_name == "letter.pdf"

    lake = settings.lake
    lake_jobs = query(lake, "SELECT status, count(*) AS n FROM jobs GROUP BY status ORDER BY 1")
    assert lake_jobs.to_pylist() == [{"status": "failed", "n": 3}, {"status": "succeeded", "n": 2}]
    pages = query(lake, "SELECT count(*) AS n, count(DISTINCT (job_id, page_number)) AS k FROM pages")
    assert pages.to_pylist() == [{"n": 25, "k": 25}]
    failures = query(lake, "SELECT failure_reason AS error_type, stage, final FROM failures "
                           "ORDER BY 1").to_pylist()
    assert failures == [
        {"error_type": "corrupt", "stage": "split", "final": True},
        {"error_type": "empty_file", "stage": "split", "final": True},
        {"error_type": "unsupported_format", "stage": "split", "final": True},
    ]
    formats = query(lake, "SELECT source_name, detected_format FROM documents ORDER BY 1")
    assert dict((r["source_name"], r["detected_format"]) for r in formats.to_pylist()) == {
        "broken.pdf": "pdf", "empty.pdf": "empty", "letter.pdf": "pdf", "long.pdf": "pdf",
        "notes.pdf": "text"}
    units = query(lake, "SELECT status, count(*) AS n FROM units GROUP BY 1").to_pylist()
    assert units == [{"status": "done", "n": 6}]


def test_pages_are_stored_per_job_zero_padded(settings, pdf_factory):
    runtime = LocalRuntime(settings)
    (ingested,) = run_to_completion(runtime, [pdf_factory("a.pdf", 11)])
    keys = runtime.objects.list(f"pages/{ingested.document_id}/{ingested.job_id}/")
    assert [k.rsplit("/", 1)[1] for k in keys] == [f"{n:05d}.md" for n in range(1, 12)]


def test_a_new_version_replaces_the_indexed_text(settings, pdf_factory):
    runtime = LocalRuntime(settings)
    path = pdf_factory("a.pdf", 2, word="oldword")
    run_to_completion(runtime, [path])
    pdf_factory("a.pdf", 2, word="newword")
    run_to_completion(runtime, [path])
    assert runtime.index.search("oldword") == []
    assert runtime.index.search("newword")[0].source_name == "a.pdf"
    versions = query(settings.lake, "SELECT version FROM documents").to_pylist()
    assert versions == [{"version": 2}]


def test_an_event_lake_that_cannot_be_written_loses_no_worker_and_no_document(
        settings, pdf_factory, monkeypatch):
    """Writes fail for a while (a full disk, say): messages are redelivered, then all finish."""
    from lake.writer import ParquetEventWriter

    real_write = ParquetEventWriter.write
    failures = {"left": 4}

    def flaky_write(self, events):
        # Both the unit's events and the failure record that follows them fail to write.
        if failures["left"] > 0 and any(e.event_type in ("unit_done", "failure") for e in events):
            failures["left"] -= 1
            raise OSError(28, "No space left on device")
        return real_write(self, events)

    monkeypatch.setattr(ParquetEventWriter, "write", flaky_write)
    settings = settings.model_copy(update={"visibility_timeout_s": 1.0, "concurrency": 2})
    runtime = LocalRuntime(settings)
    ingested = run_to_completion(runtime, [pdf_factory("a.pdf", 12), pdf_factory("b.pdf", 3)])
    jobs = runtime.store.list_jobs([i.job_id for i in ingested])
    assert [j.status for j in jobs] == [JobStatus.SUCCEEDED, JobStatus.SUCCEEDED]
    assert failures["left"] == 0
    attempts = [u.attempts for j in jobs for u in runtime.store.list_units(j.job_id)]
    assert max(attempts) >= 2  # the failed deliveries came back and were done again


def test_a_two_page_letter_does_not_wait_behind_a_long_agreement(settings, pdf_factory):
    """Counted in work, not seconds, so a loaded machine cannot flip it: when the letter's job
    is done, most of the agreement's 60 units (queued first) are still to be read."""
    runtime = LocalRuntime(settings)
    agreement = pdf_factory("agreement.pdf", 300, word="agreement")
    letter = pdf_factory("letter.pdf", 2, word="letter")
    run_to_completion(runtime, [agreement, letter])  # the agreement's 60 units are queued first
    letter_done = next(j.finished_at for j in runtime.store.list_jobs()
                       if j.source_name == "letter.pdf")
    counts = query(settings.lake, """
        SELECT count(*) FILTER (WHERE u.finished_at > ?) AS later, count(*) AS total
        FROM units u JOIN jobs j USING (job_id) WHERE j.source_name = 'agreement.pdf'
    """, [letter_done]).to_pylist()[0]
    later, total = counts["later"], counts["total"]
    assert total == 60 and later > total / 2, (later, total)


def test_one_parse_past_its_limit_retries_only_its_own_message(settings, pdf_factory):
    """The first read of one unit hangs (a hostile page, say) among many normal reads on two
    processes: it is killed at its limit, only its message is retried, and the run ends."""
    from support import cpu_tasks

    from extract.formats.pdf import read_text_layer
    from extract.readers.text import read_and_store_text_layer

    slow = pdf_factory("slow.pdf", 3, word="slow")
    others = [pdf_factory(f"doc{i}.pdf", 12) for i in range(12)]
    # Every unit through its own read message (the reads are this test's subject).
    settings = settings.model_copy(update={"cpu_workers": 2, "concurrency": 8,
                                           "read_timeout_s": 2.0, "text_pages_at_split": 0})
    runtime = LocalRuntime(settings)
    real_run = runtime.cpu.run
    hung = {"times": 0}

    async def run(fn, *args, timeout_s):
        if fn in (read_text_layer, read_and_store_text_layer) \
                and args[0].stat().st_size == slow.stat().st_size and hung["times"] == 0:
            hung["times"] += 1
            return await real_run(cpu_tasks.sleep_for, 60, timeout_s=timeout_s)
        return await real_run(fn, *args, timeout_s=timeout_s)

    runtime.cpu.run = run
    ingested = run_to_completion(runtime, [slow, *others])
    jobs = runtime.store.list_jobs([i.job_id for i in ingested])
    assert {j.status for j in jobs} == {JobStatus.SUCCEEDED} and len(jobs) == 13
    assert hung["times"] == 1 and runtime.stats.retries == 1
    failures = query(settings.lake, "SELECT d.source_name, f.failure_reason AS error_type, "
                                    "f.final FROM failures f "
                                    "JOIN documents d USING (document_id)").to_pylist()
    assert failures == [{"source_name": "slow.pdf", "error_type": "timeout", "final": False}]


def test_a_worker_task_that_is_cancelled_from_outside_is_restarted(settings, pdf_factory,
                                                                   monkeypatch):
    """A CancelledError that is not the runtime's own shutdown never ends a worker for good
    (with one worker, a dead worker task would leave the run waiting forever)."""
    import infra.local.runtime as runtime_module
    from extract import handling

    runtime = LocalRuntime(settings.model_copy(update={"concurrency": 1}))
    real = handling.handle_message
    calls = {"n": 0}

    async def cancelled_once(ctx, received):
        calls["n"] += 1
        if calls["n"] == 1:
            raise asyncio.CancelledError()
        return await real(ctx, received)

    monkeypatch.setattr(runtime_module, "handle_message", cancelled_once)
    ingested = run_to_completion(runtime, [pdf_factory("a.pdf", 7)])
    (job,) = runtime.store.list_jobs([i.job_id for i in ingested])
    assert job.status is JobStatus.SUCCEEDED and calls["n"] >= 2


def test_a_receiver_that_fails_is_restarted_and_one_that_keeps_failing_stops_the_run(
        settings, pdf_factory):
    from infra.local.runtime import RuntimeFailure

    runtime = LocalRuntime(settings)
    real_receive = runtime.queue.receive
    failures = {"left": 2}

    def flaky(*args, **kwargs):
        if failures["left"] > 0:
            failures["left"] -= 1
            raise sqlite3.OperationalError("database is locked")
        return real_receive(*args, **kwargs)

    runtime.queue.receive = flaky
    ingested = run_to_completion(runtime, [pdf_factory("a.pdf", 3)])
    assert runtime.store.get_job(ingested[0].job_id).status is JobStatus.SUCCEEDED

    broken = LocalRuntime(settings)
    broken.queue.receive = lambda *a, **k: (_ for _ in ()).throw(OSError("disk gone"))
    broken.planner().ingest(pdf_factory("b.pdf", 3))
    with pytest.raises(RuntimeFailure, match="receiver failed 5 times.*disk gone"):
        asyncio.run(broken.process(lambda: False))


def test_a_second_runtime_on_the_same_home_works_messages_but_does_not_poll(settings,
                                                                          pdf_factory):
    from infra.local.runtime import POLLER_LEASE

    first = LocalRuntime(settings)
    assert first.store.acquire_lease(POLLER_LEASE, first.holder, ttl_s=600)
    second = LocalRuntime(settings)
    (ingested,) = second.planner().ingest_many([pdf_factory("a.pdf", 12)])

    def units_done() -> bool:
        units = second.store.list_units(ingested.job_id)
        return bool(units) and all(u.status.terminal for u in units)

    asyncio.run(second.process(units_done))
    assert second.store.get_job(ingested.job_id).status is JobStatus.QUEUED  # not its decision
    first.store.release_lease(POLLER_LEASE, first.holder)
    asyncio.run(second.process(lambda: second.store.get_job(ingested.job_id).settled))
    assert second.store.get_job(ingested.job_id).status is JobStatus.SUCCEEDED


def test_read_concurrency_caps_the_read_stage_alone(settings, pdf_factory):
    """A reserved concurrency for reads (as on AWS): never two units read at once here, while
    the runtime's other workers remain for splits and indexing."""
    runtime = LocalRuntime(settings.model_copy(update={"concurrency": 6, "read_concurrency": 1,
                                                       "cpu_workers": 2}))
    run_to_completion(runtime, [pdf_factory(f"d{i}.pdf", 11) for i in range(4)])
    spans = sorted(query(settings.lake, "SELECT started_at, finished_at FROM units").to_pylist(),
                   key=lambda r: r["started_at"])
    assert len(spans) == 12
    for before, after in zip(spans, spans[1:], strict=False):
        assert after["started_at"] >= before["finished_at"], (before, after)


def test_pages_are_stored_by_the_process_that_read_them(settings, pdf_factory, monkeypatch):
    """The main process coordinates units: a text page is written (durably) by the worker
    process that read it, and indexed by a worker, never by the main process; the run is the
    same for the user."""
    from infra.local.objectstore import FolderObjectStore
    from infra.local.search import Fts5SearchIndex

    in_main: list[str] = []
    real_put_many = FolderObjectStore.put_many
    real_replace = Fts5SearchIndex.replace_documents

    def watched(self, objects):
        in_main.extend(key for key, _, _ in objects)
        real_put_many(self, objects)

    def watched_index(self, documents):
        in_main.extend(f"index/{document_id}" for document_id, *_ in documents)
        return real_replace(self, documents)

    monkeypatch.setattr(FolderObjectStore, "put_many", watched)  # this process only
    monkeypatch.setattr(Fts5SearchIndex, "replace_documents", watched_index)
    paths = [pdf_factory("long.pdf", 12, word="zebra"), pdf_factory("short.pdf", 2)]
    runtime = LocalRuntime(settings)
    ingested = run_to_completion(runtime, paths)
    jobs = runtime.store.list_jobs([i.job_id for i in ingested])
    assert {j.status for j in jobs} == {JobStatus.SUCCEEDED}
    assert [key for key in in_main if key.startswith(("pages/", "index/"))] == []
    long_job = next(j for j in jobs if j.source_name == "long.pdf")
    stored = runtime.objects.list(f"pages/{long_job.document_id}/{long_job.job_id}/")
    assert len(stored) == 12
    assert runtime.objects.head(stored[6]) == {"reader": "text", "chars": str(len(
        runtime.objects.get(stored[6]).decode()))}
    assert runtime.index.search("zebra page 7")[0].page_number == 7
    pages = query(settings.lake, "SELECT count(*) AS n FROM pages WHERE reader = 'text'")
    assert pages.to_pylist() == [{"n": 14}]


def test_the_next_stage_starts_on_a_wake_up_not_a_poll(settings, pdf_factory, monkeypatch):
    """The poller's pass sends a succeeded job's index message; the receiver takes it at once
    (the pass wakes it), not after its idle sleep: with that sleep an hour long, the run still
    ends, searchable."""
    import infra.local.runtime as runtime_module

    monkeypatch.setattr(runtime_module, "IDLE_SLEEP_S", 3600.0)
    runtime = LocalRuntime(settings.model_copy(update={"poll_interval_s": 0.2}))
    ingested = runtime.planner().ingest_many([pdf_factory("letter.pdf", 2, word="okapi")])
    ids = [i.job_id for i in ingested]

    def done():
        return all(j.indexed_at is not None for j in runtime.store.list_jobs(ids))

    async def bounded():  # a liveness bound, not a timing: without the wake-up it never ends
        return await asyncio.wait_for(runtime.process(done), timeout=120)

    asyncio.run(bounded())
    assert runtime.index.search("okapi")[0].source_name == "letter.pdf"


def test_a_hung_read_is_given_back_at_its_stages_time_limit_and_counts_as_a_try(
        settings, pdf_factory, monkeypatch):
    """Issue 19: a read that hangs (no call of its own times out) used to keep its message hidden
    forever (the heartbeat had no ceiling) and the run never ended. Now, past the stage's time
    limit, the handler is cancelled, a ``stage_time_limit`` failure is recorded, the message is
    redelivered as its next try, and the job succeeds."""
    import extract.delivery_limits as delivery_limits
    import extract.handlers.read as read_handler

    monkeypatch.setattr(delivery_limits, "MIN_LIMIT_S", 1.0)
    settings = settings.model_copy(update={"read_timeout_s": 1.0, "model_retry_budget_s": 0.5,
                                           "model_timeout_s": 0.5,  # read's limit: 4 s
                                           "text_pages_at_split": 0})  # a read message each
    real_read_unit = read_handler._read_unit
    calls = {"n": 0}

    async def hangs_once(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 1:
            await asyncio.Event().wait()  # a hang: nothing will ever set it
        return await real_read_unit(*args, **kwargs)

    monkeypatch.setattr(read_handler, "_read_unit", hangs_once)
    runtime = LocalRuntime(settings)
    (ingested,) = run_to_completion(runtime, [pdf_factory("a.pdf", 3)])
    job = runtime.store.get_job(ingested.job_id)
    assert job.status is JobStatus.SUCCEEDED
    assert calls["n"] == 2
    failures = query(settings.lake, "SELECT failure_reason AS error_type, stage, final "
                                    "FROM failures").to_pylist()
    assert failures == [{"error_type": "stage_time_limit", "stage": "read", "final": False}]
    (unit,) = runtime.store.list_units(ingested.job_id)
    assert unit.attempts == 2


def test_a_read_waiting_for_its_events_flush_frees_its_readers_slot(settings, pdf_factory,
                                                                     monkeypatch):
    """One reader slot, two one-unit documents, and a flush that hangs while it holds the first
    unit's ``unit_done``: the second unit is claimed meanwhile (the first read's slot is free
    once its pages are stored), and the first unit is marked done only after its flush."""
    import time

    from lake.writer import ParquetEventWriter

    real_write = ParquetEventWriter.write
    seen: dict[str, object] = {}

    def running_units() -> int:
        with sqlite3.connect(settings.home / "jobs.db", timeout=30) as db:
            return db.execute("SELECT count(*) FROM units WHERE status = 'running'").fetchone()[0]

    def slow_write(self, events):
        if "first" not in seen and any(e.event_type == "unit_done" for e in events):
            seen["first"] = True
            deadline = time.monotonic() + 30
            while running_units() < 2 and time.monotonic() < deadline:  # held: the other starts
                time.sleep(0.02)
            seen["both_running"] = running_units() >= 2
        return real_write(self, events)

    def units_sent() -> int:
        with sqlite3.connect(settings.home / "jobs.db", timeout=30) as db:
            return db.execute("SELECT count(*) FROM units WHERE sent_at IS NOT NULL"
                              ).fetchone()[0]

    import extract.handlers.read as read_handler

    real_read_unit = read_handler._read_unit

    async def read_once_both_are_sent(*args, **kwargs):
        # The other document's split must be durable and its read message sent before this
        # read's events are flushed: were its split's events in the flush held below, its
        # message could not exist until that flush ended, whatever the slots.
        deadline = time.monotonic() + 30
        while units_sent() < 2 and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        return await real_read_unit(*args, **kwargs)

    monkeypatch.setattr(ParquetEventWriter, "write", slow_write)
    monkeypatch.setattr(read_handler, "_read_unit", read_once_both_are_sent)
    settings = settings.model_copy(update={"concurrency": 2, "read_concurrency": 1,
                                           "text_pages_at_split": 0})  # a read message each
    runtime = LocalRuntime(settings)
    ingested = run_to_completion(runtime, [pdf_factory("a.pdf", 2), pdf_factory("b.pdf", 2)])
    jobs = runtime.store.list_jobs([i.job_id for i in ingested])
    assert [j.status for j in jobs] == [JobStatus.SUCCEEDED, JobStatus.SUCCEEDED]
    assert seen == {"first": True, "both_running": True}
