"""Ingest plans without opening the file; versions and identical bytes."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime

import pytest
from support.helpers import Harness

from extract.state import JobStatus
from ingest.planner import IngestOutcome, expand_paths
from lake.events import JobCreated
from lake.layout import upload_key


def test_ingest_creates_a_queued_job_an_extracting_document_and_one_message(tmp_path, pdf_factory):
    harness = Harness(tmp_path)
    result = harness.planner.ingest(pdf_factory("a.pdf", 2))
    assert result.outcome is IngestOutcome.NEW
    job = harness.store.get_job(result.job_id)
    assert job.status is JobStatus.QUEUED and job.units is None
    assert harness.store._db.execute("SELECT status FROM documents").fetchone()[0] == "extracting"
    assert harness.objects.head(upload_key(result.document_id, result.job_id)) == {}
    (message,) = harness.split_messages()
    assert message[1].job_id == result.job_id and message[1].type == "split"
    assert set(json.loads(message[0].body)) == {"type", "document_id", "job_id"}  # ids only
    assert [e.event_type for e in harness.sink.events] == ["document_registered", "job_created"]


def test_identical_bytes_are_not_processed_twice(tmp_path, pdf_factory):
    harness = Harness(tmp_path)
    path = pdf_factory("a.pdf", 2)
    first = harness.planner.ingest(path)
    copy = shutil.copy(path, tmp_path / "copy-of-a.pdf")
    second = harness.planner.ingest(copy)
    again = harness.planner.ingest(path)
    # Nothing processed the job between the ingests: it is resumed, not unchanged (a finished one).
    assert second.outcome is IngestOutcome.RESUMED and again.outcome is IngestOutcome.RESUMED
    assert second.job_id == again.job_id == first.job_id
    assert len(harness.store.list_jobs()) == 1


def test_the_same_bytes_again_later_in_one_run_are_a_duplicate_not_resumed(tmp_path, pdf_factory):
    """A run plans in batches (1, 2, 4, ... files): a copy met in a later batch than its twin is
    this run's duplicate, whether that job is still going ("resumed" would say an earlier run
    left it) or already over ("unchanged" would say an earlier run did it)."""
    from ingest.planner import Planner

    harness = Harness(tmp_path)
    path = pdf_factory("a.pdf", 2)
    copy = shutil.copy(path, tmp_path / "copy-of-a.pdf")
    planner = Planner(harness.store, harness.objects, harness.queue, harness.sink.events.extend,
                      batch_size=1)
    first, twin = planner.ingest_many([path, copy])
    assert (first.outcome, twin.outcome) == (IngestOutcome.NEW, IngestOutcome.DUPLICATE)
    assert twin.job_id == first.job_id and twin.source_name == "copy-of-a.pdf"

    this_run: dict = {}
    other = pdf_factory("b.pdf", 1, word="other")
    (made,) = planner.ingest_many([other], this_run=this_run)
    assert harness.store.transition_job(made.job_id, JobStatus.QUEUED, JobStatus.FAILED,
                                        failure_reason="corrupt", at=datetime.now(UTC))
    (repeat,) = planner.ingest_many([shutil.copy(other, tmp_path / "b2.pdf")], this_run=this_run)
    assert repeat.outcome is IngestOutcome.DUPLICATE and repeat.job_id == made.job_id
    (later_run,) = planner.ingest_many([other])  # another run: it did that job
    assert later_run.outcome is IngestOutcome.UNCHANGED


def test_same_name_new_bytes_is_a_new_version_with_a_clean_folder(tmp_path, pdf_factory):
    harness = Harness(tmp_path)
    path = pdf_factory("a.pdf", 2)
    first = harness.planner.ingest(path)
    pdf_factory("a.pdf", 3, word="changed")
    second = harness.planner.ingest(path)
    assert second.outcome is IngestOutcome.NEW_VERSION
    assert second.document_id == first.document_id and second.job_id != first.job_id
    document = harness.store.get_document(first.document_id)
    assert (document.version, document.latest_job_id) == (2, second.job_id)
    registered = harness.sink.of_type("document_registered")
    assert [e.version for e in registered] == [1, 2]


def test_expand_paths_walks_folders_skips_hidden_files_and_rejects_missing(tmp_path, pdf_factory):
    a = pdf_factory("a.pdf", 1)
    (a.parent / ".hidden.pdf").write_bytes(b"x")
    nested = a.parent / "sub"
    nested.mkdir()
    (nested / "b.txt").write_text("b")
    assert [p.name for p in expand_paths([a.parent])] == ["a.pdf", "b.txt"]
    with pytest.raises(FileNotFoundError, match="nope"):
        expand_paths([a, tmp_path / "nope"])


def test_a_crash_between_the_database_and_the_events_is_repaired(tmp_path, pdf_factory):
    harness = Harness(tmp_path)

    def crash(events):
        raise KeyboardInterrupt("killed after the job was created")

    harness.planner.write_events = crash
    with pytest.raises(KeyboardInterrupt):
        harness.planner.ingest(pdf_factory("a.pdf", 2))
    (job,) = harness.store.list_jobs()
    assert harness.sink.events == [] and harness.split_messages() == []

    harness.planner.write_events = harness.sink.events.extend
    assert harness.planner.resend_unsent() == 1
    assert harness.planner.resend_unsent() == 0
    (message,) = harness.split_messages()
    assert message[1].job_id == job.job_id
    registered, created = harness.sink.events
    assert (registered.job_id, registered.occurred_at) == (job.job_id, job.created_at)
    assert created.event_id == JobCreated(job_id=job.job_id).event_id


def test_background_ingest_plans_in_batches_on_its_own_connections(settings, pdf_factory):
    from infra.local.background_ingest import BATCH
    from infra.local.runtime import LocalRuntime

    runtime = LocalRuntime(settings)
    files = [pdf_factory(f"d{i:02d}.pdf", 1, word=f"w{i}") for i in range(2 * BATCH + 3)]
    sizes: list[int] = []
    ingest = runtime.ingest_in_background(
        files, after_batch=lambda store, batch: sizes.append(len(batch)))
    results = ingest.result()
    assert ingest.finished and [r.source_name for r in results] == [f.name for f in files]
    # The first split is sent after one upload, not after a whole batch; batches then grow to
    # BATCH files a batch.
    assert BATCH == 64
    assert sizes == [1, 2, 4, 8, 16, 32, 64, 4]
    assert {j.job_id for j in runtime.store.unsent_jobs()} == set()  # every batch was published
    assert runtime.queue.depth("split").visible == 2 * BATCH + 3


def test_background_ingest_hands_its_error_to_the_caller_and_stops_between_batches(
        settings, pdf_factory, tmp_path):
    from infra.local.runtime import LocalRuntime

    runtime = LocalRuntime(settings)
    missing = tmp_path / "gone.pdf"  # listed, then deleted before it was read
    ingest = runtime.ingest_in_background([pdf_factory("a.pdf", 1), missing])
    with pytest.raises(FileNotFoundError):
        ingest.result()

    stopped = runtime.ingest_in_background([pdf_factory(f"s{i}.pdf", 1) for i in range(40)])
    stopped.stop()
    assert len(stopped.result()) < 40


@pytest.mark.parametrize(("reason", "again"), [
    ("corrupt", False), ("too_many_cells", False), ("no_content", False), ("page_too_large", False),
    ("reader_unavailable", True), ("converter_unavailable", True), ("conversion_timeout", True),
    ("dead_letter", True), ("no_progress", True), (None, True),
])
def test_only_failures_that_can_change_are_taken_again_without_asking(reason, again):
    from ingest.planner import worth_retrying

    assert worth_retrying(reason) is again
