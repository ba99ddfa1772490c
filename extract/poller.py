"""The completion poller: the only writer of job status.

``decide`` is a pure function of one job's progress, so the rules are tested without a clock or a
database. ``poll_once`` applies the decisions: the conditional transition first (the store is the
truth); then the index message of a succeeded job, then its flag, and the fields message of a
finished job a run asked fields of, then its flag (they follow the store, so they do not wait
for the events' flush, which a saturated run makes wait up to 0.3 s); then the transition's
event, then the outbox flag that says the event is durable. A poller that dies anywhere in
between finds a flag unset on its next pass and sends the message or emits the same event
again, built from the store, with the same id: the lake never keeps a decision the store did
not take.

The no-progress clock (``Job.stalled_s``) counts only time in which the job could have moved: the
poller adds the time since its own previous pass (so time with no runtime running never counts),
and skips a job that is waiting its turn (its next messages are visible on a queue with a backlog:
split or convert before it is planned, read or sheet after)
or whose work is scheduled (``Job.retry_at``: a message put back on its queue with a delay, as
the Lambda edge does through a model brownout). The failing write itself is conditioned on the
``last_progress_at`` the decision read and on no retry being scheduled, so a decision made from
a stale read (DynamoDB's indexes are eventually consistent) fails no job that moved.

A store that numbers its changes (``ChangeFeed``: the local SQLite store) lets a pass that a
finished unit woke read only the jobs changed since the previous pass (``PollCursor``): the rules
need nothing else, as a job that did not change cannot have a new decision except by the stall
clock, which only a full pass (every ``poll_interval_s``, and the first) advances. Without it every
pass reads every active job, and with two thousand documents queued that was a sixth of the run's
main-process CPU.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from extract.context import HandlerContext
from extract.handlers.sources import decrypted_key
from extract.messages import (
    CONVERT_QUEUE,
    FIELDS_QUEUE,
    INDEX_QUEUE,
    READ_QUEUE,
    SHEET_QUEUE,
    SPLIT_QUEUE,
    FieldsMessage,
    IndexMessage,
)
from extract.state import Job, JobProgress, JobStatus

__all__ = ["NO_PROGRESS", "ChangeFeed", "PollCursor", "Decision", "scheduled", "decide", "PLANNING_QUEUES",
           "UNIT_QUEUES", "waiting_its_turn", "status_events", "poll_once", "remove_decrypted_copy",
           "remove_stale_decrypted", "queue_backlog", "quiet_unplanned", "publish_status_events",
           "send_index_messages", "send_fields_messages"]

if TYPE_CHECKING:
    from extract.ports import JobStore, ObjectStore
from lake.events import (
    Event,
    FailureRecorded,
    JobExtracting,
    JobFailed,
    JobSucceeded,
    utc_now,
)

NO_PROGRESS = "no_progress"


@runtime_checkable
class ChangeFeed(Protocol):
    """A job store that numbers its changes, so a poller can ask for what changed only."""

    def active_jobs_changed(self, after: int | None, *,
                            unplanned_quiet_below_s: float | None = None
                            ) -> tuple[list[JobProgress], int]:
        """Active jobs changed after position ``after`` (all when None), and the position the
        next call asks from. With ``unplanned_quiet_below_s``, queued jobs with no units, no
        error and a stall clock at most that many seconds are left out (``quiet_unplanned``)."""
        ...


@dataclass
class PollCursor:
    """Where this poller's previous pass left off in a ``ChangeFeed`` (None: read everything)."""

    position: int | None = None


@dataclass(frozen=True)
class Decision:
    job_id: str
    document_id: str
    current: JobStatus
    new: JobStatus
    reason: str | None = None
    detail: str | None = None
    unmoved_since: datetime | None = None
    """For the no-progress rule: the ``last_progress_at`` it read (the write's condition)."""


def scheduled(job: Job, now: datetime | None) -> bool:
    """A retry of the job's work is due after ``now``: waiting on the queue's schedule."""
    return job.retry_at is not None and (now is None or job.retry_at > now)


def decide(progress: JobProgress, no_progress_timeout_s: float,
           now: datetime | None = None) -> Decision | None:
    """The rules, in order: a worker's error, a failed unit, all units done, no progress for too
    long (unless a retry is scheduled after ``now``), units planned. None means leave the job as
    it is."""
    job = progress.job
    if job.status.terminal:
        return None

    def to(new: JobStatus, reason: str | None = None, detail: str | None = None) -> Decision:
        return Decision(job.job_id, job.document_id, job.status, new, reason, detail)

    if job.error:
        return to(JobStatus.FAILED, job.error)
    if progress.units_failed:
        return to(JobStatus.FAILED, progress.first_failure or "unit_failed")
    if progress.units_planned and progress.units_done == progress.units_planned:
        return to(JobStatus.SUCCEEDED)
    if job.stalled_s > no_progress_timeout_s and not scheduled(job, now):
        return Decision(job.job_id, job.document_id, job.status, JobStatus.FAILED, NO_PROGRESS,
                        f"no progress for {job.stalled_s:.0f} s of runtime while its work was "
                        f"not waiting in a queue (limit {no_progress_timeout_s:g} s)",
                        unmoved_since=job.last_progress_at)
    if progress.units_planned and job.status is JobStatus.QUEUED:
        return to(JobStatus.EXTRACTING)
    return None


PLANNING_QUEUES = (SPLIT_QUEUE, CONVERT_QUEUE)
"""Where a job's next message waits before it has units: its split, or (Office files) its
conversion, whose queue runs a few at a time."""
UNIT_QUEUES = (READ_QUEUE, SHEET_QUEUE)
"""Where a planned job's pending units wait: pages, and sheets 2..n of a workbook."""


def waiting_its_turn(progress: JobProgress, backlog: dict[str, bool]) -> bool:
    """True when the job's next step is a message that is visible on a queue with a backlog: it
    waits behind other work, which is not a stall. ``backlog`` maps queue -> has visible messages.

    A unit in retry backoff is pending again (its failed attempt let it go, which also reset the
    clock), so it counts as waiting like any other pending unit."""
    if progress.units_planned == 0:
        return any(backlog.get(queue, False) for queue in PLANNING_QUEUES)
    return progress.units_pending > 0 and any(backlog.get(queue, False) for queue in UNIT_QUEUES)


def status_events(job: Job, worker: str) -> list[Event]:
    """The events of the job's current status, built from the store's record alone, so that the
    first emission and any repair after a crash are identical (same ids, same times)."""
    envelope = {"document_id": job.document_id, "job_id": job.job_id, "worker": worker}
    if job.status is JobStatus.EXTRACTING:
        return [JobExtracting(**envelope, occurred_at=job.updated_at)]
    at = job.finished_at or job.updated_at
    if job.status is JobStatus.SUCCEEDED:
        return [JobSucceeded(**envelope, occurred_at=at, pages=job.pages, units=job.units)]
    if job.status is not JobStatus.FAILED:
        return []
    events: list[Event] = []
    if job.failure_reason == NO_PROGRESS:
        events.append(FailureRecorded(**envelope, occurred_at=at, stage="poller",
                                      error_type=NO_PROGRESS, message=job.failure_detail or "",
                                      final=True))
    events.append(JobFailed(**envelope, occurred_at=at, failure_reason=job.failure_reason or "failed",
                            pages=job.pages, units=job.units))
    return events


async def poll_once(ctx: HandlerContext, *, now: datetime | None = None,
                    elapsed_s: float = 0.0, cursor: PollCursor | None = None,
                    full: bool = True) -> list[Decision]:
    """One pass; returns the transitions made. A full pass reads every active job; a quick one
    (``full=False`` with a ``cursor`` that has a position, on a ``ChangeFeed`` store) only those
    changed since the cursor's, and never counts stalls.

    ``elapsed_s`` is the time since this poller's previous full pass (0 on its first): the most a
    job can have stalled since then.
    """
    now = now or utc_now()
    feed = ctx.store if isinstance(ctx.store, ChangeFeed) else None
    quick = not full and feed is not None and cursor is not None and cursor.position is not None
    if quick:
        elapsed_s = 0.0
    backlog = queue_backlog(ctx) if elapsed_s > 0 else None
    position = None
    if feed is not None and (quick or cursor is not None):
        active, position = feed.active_jobs_changed(
            cursor.position if quick else None,
            unplanned_quiet_below_s=quiet_unplanned(ctx, backlog))
    else:
        active = ctx.store.active_jobs()
    if elapsed_s > 0 and active:
        active = _count_stalls(ctx, active, elapsed_s, now, backlog or {})
    decided = [d for d in (decide(p, ctx.config.no_progress_timeout_s, now) for p in active)
               if d]
    applied = []
    for decision in decided:
        if ctx.store.transition_job(decision.job_id, decision.current, decision.new,
                                    failure_reason=decision.reason,
                                    failure_detail=decision.detail, at=now,
                                    unmoved_since=decision.unmoved_since):
            applied.append(decision)
    for decision in applied:
        if decision.new.terminal:  # a decrypted copy is plaintext: it lives as long as its job
            remove_decrypted_copy(ctx, decision.document_id, decision.job_id)
    # The index and fields messages follow the store's transitions, not their events: sent
    # before the events' flush is waited for (a relaxed commit, while a run is saturated,
    # waits up to ``event_saturated_flush_s``: a finished job's index and fields waited with it).
    send_index_messages(ctx)
    send_fields_messages(ctx)
    await publish_status_events(ctx, [d.job_id for d in applied])
    if cursor is not None and position is not None:  # only once the pass has done its work
        cursor.position = position
    return applied


def remove_decrypted_copy(ctx: HandlerContext, document_id: str, job_id: str) -> int:
    """Delete the plaintext copy of an encrypted upload once its job has ended (a retry decrypts
    again from the upload); also run by the runtime's recovery for jobs that ended in a crash."""
    return ctx.objects.delete_prefix(decrypted_key(document_id, job_id))


def remove_stale_decrypted(objects: ObjectStore, store: JobStore) -> int:
    """Decrypted copies whose job ended (or is gone) while no poller was there to remove them
    (a crash between the transition and the removal): plaintext must not outlive its job. The
    local runtime runs it at recovery, the AWS poller once an invocation."""
    removed = 0
    for key in objects.list("decrypted/"):
        parts = key.split("/")
        if len(parts) != 3:
            continue
        job = store.get_job(parts[2])
        if job is None or job.status.terminal:
            removed += objects.delete_prefix(key)
    return removed


def queue_backlog(ctx: HandlerContext) -> dict[str, bool]:
    """Which of the queues a job waits its turn on have visible messages (``waiting_its_turn``)."""
    return {queue: ctx.queue.depth(queue).visible > 0
            for queue in (*PLANNING_QUEUES, *UNIT_QUEUES)}


def quiet_unplanned(ctx: HandlerContext, backlog: dict[str, bool] | None) -> float | None:
    """The stall clock under which a pass may leave out queued jobs with no units and no error
    (None: it reads them all). Such a job has no decision (``decide``: no error, no unit, a stall
    clock under the limit), and this pass adds no stall to it: no time is counted (``backlog``
    None: a quick or first pass), or it waits its turn behind a planning queue's backlog. A drop
    of two thousand files is two thousand such jobs, read with their unit counts on every full
    pass until each was split (a tenth of the main process's CPU), for no decision at all."""
    if backlog is None or any(backlog.get(queue, False) for queue in PLANNING_QUEUES):
        return ctx.config.no_progress_timeout_s
    return None


def _count_stalls(ctx: HandlerContext, active: list[JobProgress], elapsed_s: float,
                  now: datetime, backlog: dict[str, bool]) -> list[JobProgress]:
    stalled = [p for p in active
               if not waiting_its_turn(p, backlog) and not scheduled(p.job, now)]
    if not stalled:
        return active
    ctx.store.add_stall([(p.job.job_id, elapsed_s, p.job.last_progress_at) for p in stalled])
    added = {p.job.job_id for p in stalled}
    return [
        p.model_copy(update={"job": p.job.model_copy(
            update={"stalled_s": p.job.stalled_s + elapsed_s})}) if p.job.job_id in added else p
        for p in active
    ]


async def publish_status_events(ctx: HandlerContext, job_ids: Iterable[str] = ()) -> int:
    """Emit the status events of the jobs just transitioned and of any job whose event a crash
    lost, in one flush; then flag them. Returns the jobs published."""
    jobs = {j.job_id: j for j in ctx.store.jobs_missing_status_event()}
    transitioned = sorted(set(job_ids) - jobs.keys())
    if transitioned:
        jobs.update((j.job_id, j) for j in ctx.store.list_jobs(transitioned))
    if not jobs:
        return 0
    await ctx.sink.commit([e for job in jobs.values() for e in status_events(job, ctx.worker)])
    ctx.store.mark_status_events([(job.job_id, job.status) for job in jobs.values()])
    return len(jobs)


def send_index_messages(ctx: HandlerContext) -> int:
    """Send the index message of every succeeded job that has none confirmed sent, then flag it:
    a send that failed after the transition is repaired on the next pass, not at a restart."""
    jobs = ctx.store.unsent_index_jobs()
    if jobs:  # one send for all, not one a job
        ctx.queue.send_batch(INDEX_QUEUE, [IndexMessage(
            document_id=job.document_id, job_id=job.job_id).model_dump_json() for job in jobs],
            pages=0)  # no page left to read: a document's last steps go first
        ctx.store.mark_index_sent([j.job_id for j in jobs])
    return len(jobs)


def send_fields_messages(ctx: HandlerContext) -> int:
    """Send the fields message of every job whose text is final (succeeded, or
    failed: it gets a failed result) and whose run asked for fields, then flag it: the same
    outbox rule as the index message."""
    jobs = ctx.store.unsent_fields_jobs()
    bodies = [FieldsMessage(document_id=job.document_id, job_id=job.job_id,
                            schema_name=job.fields_schema or "nda",
                            strategy=job.fields_strategy or "rules").model_dump_json()
              for job in jobs]
    if jobs:
        ctx.queue.send_batch(FIELDS_QUEUE, bodies, pages=0)
        ctx.store.mark_fields_sent([j.job_id for j in jobs])
    return len(jobs)
