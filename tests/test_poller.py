"""The poller's rules, as a pure function and against the job store."""

from __future__ import annotations

from datetime import timedelta

from helpers import Harness

from extract.handling import handle_message
from extract.messages import INDEX_QUEUE, READ_QUEUE, SPLIT_QUEUE
from extract.poller import NO_PROGRESS, decide, poll_once
from extract.state import Job, JobProgress, JobStatus
from lake.events import utc_now

NOW = utc_now()


def progress(status=JobStatus.EXTRACTING, planned=3, done=0, failed=0, error=None,
             idle_s=0.0, first_failure=None) -> JobProgress:
    job = Job(job_id="j", document_id="d", status=status, object_key="k", source_name="a.pdf",
              created_at=NOW, updated_at=NOW, last_progress_at=NOW - timedelta(seconds=idle_s),
              error=error)
    return JobProgress(job=job, units_planned=planned, units_done=done, units_failed=failed,
                       first_failure=first_failure)


def test_all_units_done_succeeds():
    decision = decide(progress(planned=3, done=3), NOW, 1800)
    assert decision.new is JobStatus.SUCCEEDED and decision.current is JobStatus.EXTRACTING


def test_a_failed_unit_fails_the_job_with_its_error_type():
    decision = decide(progress(planned=3, done=2, failed=1, first_failure="corrupt"), NOW, 1800)
    assert (decision.new, decision.reason) == (JobStatus.FAILED, "corrupt")


def test_a_worker_error_before_units_fails_the_job():
    decision = decide(progress(status=JobStatus.QUEUED, planned=0, error="unsupported_format"),
                      NOW, 1800)
    assert (decision.new, decision.reason) == (JobStatus.FAILED, "unsupported_format")


def test_no_progress_for_longer_than_the_timeout_fails():
    assert decide(progress(planned=3, done=1, idle_s=1799), NOW, 1800) is None
    decision = decide(progress(planned=3, done=1, idle_s=1801), NOW, 1800)
    assert (decision.new, decision.reason) == (JobStatus.FAILED, NO_PROGRESS)


def test_queued_with_units_becomes_extracting_and_terminal_is_left_alone():
    assert decide(progress(status=JobStatus.QUEUED, planned=2), NOW, 1800).new is \
        JobStatus.EXTRACTING
    assert decide(progress(status=JobStatus.QUEUED, planned=0), NOW, 1800) is None
    assert decide(progress(status=JobStatus.SUCCEEDED, planned=2, done=2), NOW, 1800) is None


async def test_poll_once_transitions_once_and_sends_the_index_message(tmp_path, pdf_factory):
    harness = Harness(tmp_path)
    ingested = harness.planner.ingest(pdf_factory("a.pdf", 3))
    await harness.drain(SPLIT_QUEUE, READ_QUEUE)
    applied = await poll_once(harness.ctx)
    assert [(d.job_id, d.new) for d in applied] == [(ingested.job_id, JobStatus.SUCCEEDED)]
    assert await poll_once(harness.ctx) == []
    assert harness.store.get_job(ingested.job_id).finished_at is not None
    assert len(harness.receive(INDEX_QUEUE)) == 1
    assert len(harness.sink.of_type("job_succeeded")) == 1


async def test_poll_once_fails_a_stalled_job_with_a_failure_row(tmp_path, pdf_factory):
    harness = Harness(tmp_path, no_progress_timeout_s=0.5)
    ingested = harness.planner.ingest(pdf_factory("a.pdf", 3))
    assert await poll_once(harness.ctx, now=utc_now()) == []
    later = utc_now() + timedelta(seconds=1)
    (decision,) = await poll_once(harness.ctx, now=later)
    assert decision.reason == NO_PROGRESS
    job = harness.store.get_job(ingested.job_id)
    assert (job.status, job.failure_reason) == (JobStatus.FAILED, NO_PROGRESS)
    (failure,) = harness.sink.of_type("failure")
    assert failure.stage == "poller" and failure.final


async def test_an_index_that_cannot_be_built_is_given_up_and_the_job_settles(tmp_path, pdf_factory):
    harness = Harness(tmp_path)
    ingested = harness.planner.ingest(pdf_factory("a.pdf", 3))
    await harness.drain(SPLIT_QUEUE, READ_QUEUE)
    await poll_once(harness.ctx)
    page = harness.objects.list(f"pages/{ingested.document_id}/")[0]
    harness.objects.delete_prefix(page)  # a page lost from storage after the job succeeded
    (message,) = harness.receive(INDEX_QUEUE)
    await handle_message(harness.ctx, message)
    job = harness.store.get_job(ingested.job_id)
    assert (job.status, job.index_error, job.indexed_at) == (JobStatus.SUCCEEDED, "missing_pages",
                                                             None)
    assert job.settled and harness.store.jobs_to_index() == []
    (failure,) = harness.sink.of_type("failure")
    assert (failure.stage, failure.final) == ("index", True)
