"""The completion poller: the only writer of job status.

``decide`` is a pure function of one job's progress and the time, so the rules are tested
without a clock or a database. ``poll_once`` applies the decisions: the event first, then the
conditional transition (a poller that dies between the two repeats the same decision, with the
same event id, on its next pass), then the index message for a succeeded job.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from extract.context import HandlerContext
from extract.messages import INDEX_QUEUE, IndexMessage
from extract.state import JobProgress, JobStatus
from lake.events import (
    Event,
    FailureRecorded,
    JobExtracting,
    JobFailed,
    JobSucceeded,
    utc_now,
)

NO_PROGRESS = "no_progress"


@dataclass(frozen=True)
class Decision:
    job_id: str
    document_id: str
    current: JobStatus
    new: JobStatus
    reason: str | None = None
    detail: str | None = None


def decide(progress: JobProgress, now: datetime, no_progress_timeout_s: float) -> Decision | None:
    """The rules, in order: a worker's error, a failed unit, all units done, units planned,
    no progress for too long. None means leave the job as it is."""
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
    idle_s = (now - job.last_progress_at).total_seconds()
    if idle_s > no_progress_timeout_s:
        return to(JobStatus.FAILED, NO_PROGRESS,
                  f"no progress for {idle_s:.0f} s (limit {no_progress_timeout_s:g} s)")
    if progress.units_planned and job.status is JobStatus.QUEUED:
        return to(JobStatus.EXTRACTING)
    return None


def _events(decision: Decision, progress: JobProgress, worker: str) -> list[Event]:
    job = progress.job
    envelope = {"document_id": decision.document_id, "job_id": decision.job_id, "worker": worker}
    if decision.new is JobStatus.EXTRACTING:
        return [JobExtracting(**envelope)]
    if decision.new is JobStatus.SUCCEEDED:
        return [JobSucceeded(**envelope, pages=job.pages, units=job.units)]
    events: list[Event] = []
    if decision.reason == NO_PROGRESS:
        events.append(FailureRecorded(**envelope, stage="poller", error_type=NO_PROGRESS,
                                      message=decision.detail or "", final=True))
    events.append(JobFailed(**envelope, failure_reason=decision.reason or "failed",
                            pages=job.pages, units=job.units))
    return events


async def poll_once(ctx: HandlerContext, *, now: datetime | None = None) -> list[Decision]:
    """One pass over every active job; returns the transitions made.

    The events of every decision of the pass are committed together, in one flush.
    """
    now = now or utc_now()
    decided = []
    for progress in ctx.store.active_jobs():
        decision = decide(progress, now, ctx.config.no_progress_timeout_s)
        if decision is not None:
            decided.append((decision, progress))
    if not decided:
        return []
    await ctx.sink.commit([e for d, p in decided for e in _events(d, p, ctx.worker)])
    applied = []
    for decision, _ in decided:
        if not ctx.store.transition_job(decision.job_id, decision.current, decision.new,
                                        failure_reason=decision.reason, at=now):
            continue
        applied.append(decision)
        if decision.new is JobStatus.SUCCEEDED:
            ctx.queue.send(INDEX_QUEUE, IndexMessage(document_id=decision.document_id,
                                                     job_id=decision.job_id).model_dump_json())
    return applied
