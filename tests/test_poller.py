"""The poller's rules, as a pure function and against the job store."""

from __future__ import annotations

import contextlib
from datetime import timedelta

from support.helpers import Harness

from extract.handling import Outcome, handle_message
from extract.messages import FIELDS_QUEUE, INDEX_QUEUE, READ_QUEUE, SPLIT_QUEUE
from extract.poller import NO_PROGRESS, decide, poll_once
from extract.state import Job, JobProgress, JobStatus
from lake.events import utc_now

NOW = utc_now()


def progress(status=JobStatus.EXTRACTING, planned=3, done=0, failed=0, error=None,
             stalled_s=0.0, first_failure=None) -> JobProgress:
    job = Job(job_id="j", document_id="d", status=status, object_key="k", source_name="a.pdf",
              created_at=NOW, updated_at=NOW, last_progress_at=NOW, stalled_s=stalled_s,
              error=error)
    return JobProgress(job=job, units_planned=planned, units_done=done, units_failed=failed,
                       first_failure=first_failure)


def test_all_units_done_succeeds():
    decision = decide(progress(planned=3, done=3), 1800)
    assert decision.new is JobStatus.SUCCEEDED and decision.current is JobStatus.EXTRACTING


def test_a_failed_unit_fails_the_job_with_its_error_type():
    decision = decide(progress(planned=3, done=2, failed=1, first_failure="corrupt"), 1800)
    assert (decision.new, decision.reason) == (JobStatus.FAILED, "corrupt")


def test_a_worker_error_before_units_fails_the_job():
    decision = decide(progress(status=JobStatus.QUEUED, planned=0, error="unsupported_format"),
                      1800)
    assert (decision.new, decision.reason) == (JobStatus.FAILED, "unsupported_format")


def test_no_progress_for_longer_than_the_timeout_fails():
    assert decide(progress(planned=3, done=1, stalled_s=1799), 1800) is None
    decision = decide(progress(planned=3, done=1, stalled_s=1801), 1800)
    assert (decision.new, decision.reason) == (JobStatus.FAILED, NO_PROGRESS)


def test_no_progress_never_fails_a_job_whose_retry_is_scheduled():
    """A message put back on its queue with a delay (Lambda, a brownout) is work scheduled, not
    a stall; once its time has passed the rule applies again, and the failing write is
    conditioned on the progress it read."""
    from datetime import timedelta

    stalled = progress(planned=3, done=1, stalled_s=1801)
    waiting = stalled.model_copy(update={"job": stalled.job.model_copy(
        update={"retry_at": NOW + timedelta(minutes=15)})})
    assert decide(waiting, 1800, NOW) is None
    decision = decide(waiting, 1800, NOW + timedelta(minutes=16))
    assert (decision.reason, decision.unmoved_since) == (NO_PROGRESS, NOW)


def test_queued_with_units_becomes_extracting_and_terminal_is_left_alone():
    assert decide(progress(status=JobStatus.QUEUED, planned=2), 1800).new is \
        JobStatus.EXTRACTING
    assert decide(progress(status=JobStatus.QUEUED, planned=0), 1800) is None
    assert decide(progress(status=JobStatus.SUCCEEDED, planned=2, done=2), 1800) is None


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
    harness.receive(SPLIT_QUEUE)  # taken by a worker that then hangs: the work is not waiting
    assert await poll_once(harness.ctx) == []
    assert await poll_once(harness.ctx, elapsed_s=0.3) == []
    (decision,) = await poll_once(harness.ctx, elapsed_s=0.3)
    assert decision.reason == NO_PROGRESS
    job = harness.store.get_job(ingested.job_id)
    assert (job.status, job.failure_reason) == (JobStatus.FAILED, NO_PROGRESS)
    (failure,) = harness.sink.of_type("failure")
    assert failure.stage == "poller" and failure.final
    assert "limit 0.5 s" in failure.message


async def test_time_with_no_poller_running_is_not_a_stall(tmp_path, pdf_factory):
    """Down for longer than the limit: the first poll after the restart counts nothing."""
    harness = Harness(tmp_path, no_progress_timeout_s=0.5)
    ingested = harness.planner.ingest(pdf_factory("a.pdf", 3))
    harness.receive(SPLIT_QUEUE)
    await poll_once(harness.ctx, now=utc_now() + timedelta(hours=2))  # a poller's first pass
    job = harness.store.get_job(ingested.job_id)
    assert (job.status, job.stalled_s) == (JobStatus.QUEUED, 0.0)


async def test_a_job_waiting_behind_a_backlog_is_not_stalled(tmp_path, pdf_factory):
    harness = Harness(tmp_path, no_progress_timeout_s=0.5)
    ingested = harness.planner.ingest(pdf_factory("a.pdf", 3))  # its split message is visible
    for _ in range(5):
        assert await poll_once(harness.ctx, elapsed_s=0.3) == []
    assert harness.store.get_job(ingested.job_id).stalled_s == 0.0
    await harness.drain(SPLIT_QUEUE)  # split: its three... one unit waits, visible, on read
    await poll_once(harness.ctx, elapsed_s=0.3)
    assert harness.store.get_job(ingested.job_id).stalled_s == 0.0


async def test_progress_resets_the_stall_clock(tmp_path, pdf_factory):
    harness = Harness(tmp_path, no_progress_timeout_s=10)
    ingested = harness.planner.ingest(pdf_factory("a.pdf", 12))
    await harness.drain(SPLIT_QUEUE)
    messages = harness.read_messages()  # all three units taken; none finished yet
    await poll_once(harness.ctx, elapsed_s=2)
    assert harness.store.get_job(ingested.job_id).stalled_s == 2
    received, _ = messages[0]
    await handle_message(harness.ctx, received)
    assert harness.store.get_job(ingested.job_id).stalled_s == 0
    await poll_once(harness.ctx, elapsed_s=2)
    assert harness.store.get_job(ingested.job_id).stalled_s == 2


async def test_the_event_follows_the_store_and_a_lost_event_is_re_emitted(tmp_path, pdf_factory):
    """A poller that loses the conditional update writes no event; a crash between the
    transition and its event is repaired by the next pass, with the same event id."""
    harness = Harness(tmp_path)
    ingested = harness.planner.ingest(pdf_factory("a.pdf", 3))
    await harness.drain(SPLIT_QUEUE, READ_QUEUE)
    store = harness.store
    real_transition = store.transition_job
    store.transition_job = lambda *a, **k: False  # another poller got there first
    assert await poll_once(harness.ctx) == []
    assert harness.sink.of_type("job_succeeded") == []

    store.transition_job = real_transition
    real_commit = harness.sink.commit

    async def crash(events):
        raise OSError("killed between the transition and its event")

    harness.sink.commit = crash
    with contextlib.suppress(OSError):
        await poll_once(harness.ctx)
    assert store.get_job(ingested.job_id).status is JobStatus.SUCCEEDED
    assert harness.sink.of_type("job_succeeded") == []
    harness.sink.commit = real_commit
    await poll_once(harness.ctx)
    (event,) = harness.sink.of_type("job_succeeded")
    job = store.get_job(ingested.job_id)
    assert event.occurred_at == job.finished_at
    await poll_once(harness.ctx)
    assert len(harness.sink.of_type("job_succeeded")) == 1  # flagged: not emitted again
    assert len(harness.receive(INDEX_QUEUE)) == 1


async def test_an_index_message_whose_send_failed_is_sent_on_the_next_pass(tmp_path, pdf_factory):
    harness = Harness(tmp_path)
    harness.planner.ingest(pdf_factory("a.pdf", 3))
    await harness.drain(SPLIT_QUEUE, READ_QUEUE)
    real_send, real_send_batch = harness.queue.send, harness.queue.send_batch

    def down(*args, **kwargs):
        raise OSError("queue unavailable")

    harness.queue.send = harness.queue.send_batch = down
    with contextlib.suppress(OSError):
        await poll_once(harness.ctx)
    assert harness.receive(INDEX_QUEUE) == []
    harness.queue.send, harness.queue.send_batch = real_send, real_send_batch
    await poll_once(harness.ctx)
    assert len(harness.receive(INDEX_QUEUE)) == 1
    await poll_once(harness.ctx)
    assert harness.receive(INDEX_QUEUE) == []  # in flight now, and not sent twice


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


def _docx(path):
    """A minimal Word package: the sniff knows it by its [Content_Types].xml."""
    import zipfile

    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("[Content_Types].xml", (
            '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/'
            'content-types"><Override PartName="/word/document.xml" ContentType="application/'
            'vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>'))
        archive.writestr("word/document.xml", f"<w:document>{path.name}</w:document>")
    return path


async def test_office_files_waiting_on_the_convert_queue_are_not_stalled(tmp_path):
    """Issue 19: a drop of .docx files waits on the convert queue (a few at a time) for longer
    than the stall limit; the jobs wait their turn, none fails no_progress."""
    from extract.messages import CONVERT_QUEUE

    harness = Harness(tmp_path, no_progress_timeout_s=0.5)
    folder = tmp_path / "drop"
    folder.mkdir()
    ingested = [harness.planner.ingest(_docx(folder / f"memo{n}.docx")) for n in range(3)]
    await harness.drain(SPLIT_QUEUE)  # sniffed: each job's next message is a conversion
    assert harness.queue.depth(CONVERT_QUEUE).visible == 3
    for _ in range(6):  # 1.8 s of polling against a 0.5 s limit
        assert await poll_once(harness.ctx, elapsed_s=0.3) == []
    for item in ingested:
        job = harness.store.get_job(item.job_id)
        assert (job.status, job.stalled_s) == (JobStatus.QUEUED, 0.0)


async def test_a_unit_in_retry_backoff_is_not_a_stall(tmp_path, pdf_factory):
    """Issue 19: a read fails (transient) and its message waits out its backoff; the failed
    attempt lets the unit go (pending again, the clock reset), so the backoff does not pile up
    stall time as if the unit were running."""
    from extract.state import UnitStatus

    harness = Harness(tmp_path, no_progress_timeout_s=10)
    ingested = harness.planner.ingest(pdf_factory("a.pdf", 3))
    await harness.drain(SPLIT_QUEUE)
    (received, message), = harness.read_messages()
    await poll_once(harness.ctx, elapsed_s=4)
    assert harness.store.get_job(ingested.job_id).stalled_s == 4

    async def fails(fn, *args, timeout_s):
        from extract.errors import TransientError
        raise TransientError("the disk hiccuped")

    harness.ctx.cpu = type("Failing", (), {"run": staticmethod(fails)})()
    assert await handle_message(harness.ctx, received) is Outcome.RETRY
    unit = harness.store.get_unit(ingested.job_id, message.unit_id)
    assert unit.status is UnitStatus.PENDING  # not left RUNNING through the backoff
    assert harness.store.get_job(ingested.job_id).stalled_s == 0


async def test_a_woken_pass_reads_only_the_jobs_that_changed_since_the_last(tmp_path,
                                                                           pdf_factory):
    """Ten documents planned; one is read to the end. The quick pass a finished unit asks for
    reads that one job alone (not the nine that did not move) and succeeds it; it counts no
    stall, which only a full pass does."""
    from extract.poller import PollCursor

    harness = Harness(tmp_path)
    ingested = [harness.planner.ingest(pdf_factory(f"d{n}.pdf", 2)) for n in range(10)]
    await harness.drain(SPLIT_QUEUE)
    cursor = PollCursor()
    full = await poll_once(harness.ctx, cursor=cursor, full=True)
    assert {d.new for d in full} == {JobStatus.EXTRACTING} and len(full) == 10
    assert cursor.position is not None
    # Its own transitions came after the position it read: the next pass sees them once.
    assert await poll_once(harness.ctx, cursor=cursor, full=False) == []

    reads = harness.read_messages()
    first = ingested[0].job_id
    for received, message in reads:
        if message.job_id == first:
            assert await handle_message(harness.ctx, received) is Outcome.ACK
            harness.queue.delete(received)
        else:  # the others' messages go back untouched
            harness.queue.change_visibility(received, 0)

    changed, _ = harness.store.active_jobs_changed(cursor.position)
    assert [p.job.job_id for p in changed] == [first]
    quick = await poll_once(harness.ctx, cursor=cursor, full=False, elapsed_s=60)
    assert [(d.job_id, d.new) for d in quick] == [(first, JobStatus.SUCCEEDED)]
    assert all(j.stalled_s == 0 for j in harness.store.list_jobs())  # no stall counted
    assert harness.store.active_jobs_changed(cursor.position)[0] == []  # nothing moved since
    # A full pass still reads them all (and counts the stall clock of those not waiting).
    assert len(harness.store.active_jobs_changed(None)[0]) == 9


async def test_a_full_pass_leaves_out_unplanned_jobs_that_cannot_have_a_decision(tmp_path,
                                                                                pdf_factory):
    """Behind a planning backlog, a queued job with no units, no error and a stall clock under
    the limit has no decision and gains no stall: a full pass does not read it. A job with an
    error, or with a stall clock already over the limit, is read and failed as before; once the
    backlog is gone, the quiet job's clock runs again."""
    from extract.poller import PollCursor

    harness = Harness(tmp_path, no_progress_timeout_s=0.5)
    quiet, erred, stalled = (harness.planner.ingest(pdf_factory(f"{n}.pdf", 2)).job_id
                             for n in "abc")
    harness.store.set_job_error(erred, "worker_error")
    harness.store.add_stall([(stalled, 0.9, harness.store.get_job(stalled).last_progress_at)])
    read = harness.store.active_jobs_changed(None, unplanned_quiet_below_s=0.5)[0]
    assert {p.job.job_id for p in read} == {erred, stalled}

    cursor = PollCursor()
    decided = await poll_once(harness.ctx, cursor=cursor, full=True, elapsed_s=0.3)
    assert {(d.job_id, d.new, d.reason) for d in decided} == {
        (erred, JobStatus.FAILED, "worker_error"), (stalled, JobStatus.FAILED, NO_PROGRESS)}
    assert harness.store.get_job(quiet).status is JobStatus.QUEUED
    assert harness.store.get_job(quiet).stalled_s == 0.0

    harness.receive(SPLIT_QUEUE)  # taken by a worker that hangs: no backlog, the clock runs
    assert await poll_once(harness.ctx, cursor=cursor, full=True, elapsed_s=0.3) == []
    assert harness.store.get_job(quiet).stalled_s == 0.3


async def test_a_finished_jobs_index_message_is_sent_before_its_events_flush(tmp_path,
                                                                             pdf_factory):
    """The messages follow the store's transition, not its event: a relaxed flush of a saturated
    run waits up to 0.3 s, and a finished job's index and fields waited for it."""
    import asyncio

    harness = Harness(tmp_path)
    ingested = harness.planner.ingest(pdf_factory("a.pdf", 3))
    harness.store.request_fields([ingested.job_id], "nda", "rules")
    await harness.drain(SPLIT_QUEUE, READ_QUEUE)
    flushed = asyncio.Event()
    real_commit = harness.sink.commit
    queued_while_waiting = {}

    async def slow_commit(events):
        queued_while_waiting["index"] = harness.queue.visible_count(INDEX_QUEUE, at_most=5)
        queued_while_waiting["fields"] = harness.queue.visible_count(FIELDS_QUEUE, at_most=5)
        await asyncio.sleep(0.05)
        await real_commit(events)
        flushed.set()

    harness.sink.commit = slow_commit
    await poll_once(harness.ctx)
    assert flushed.is_set()
    assert queued_while_waiting == {"index": 1, "fields": 1}
    assert len(harness.sink.of_type("job_succeeded")) == 1
