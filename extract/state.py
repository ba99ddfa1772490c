"""Job, unit and document state: the records the job store keeps and the handlers read.

Values only; the job store (SQLite locally, DynamoDB on AWS) owns the transitions.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

__all__ = ["JobStatus", "UnitStatus", "UnitClaim", "Document", "Job", "Unit", "JobProgress", "ClaimStatus",
           "FieldClaim"]


class JobStatus(StrEnum):
    QUEUED = "queued"
    EXTRACTING = "extracting"
    SUCCEEDED = "succeeded"
    FAILED = "failed"

    @property
    def terminal(self) -> bool:
        return self in (JobStatus.SUCCEEDED, JobStatus.FAILED)


class UnitStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"

    @property
    def terminal(self) -> bool:
        return self in (UnitStatus.DONE, UnitStatus.FAILED)


class UnitClaim(StrEnum):
    """What a read's claim on its unit found (``JobStore.claim_unit``)."""

    CLAIMED = "claimed"
    """Ours now: pending, or running under an expired lease (or a dead process's), or ours."""
    HELD = "held"
    """Another reader holds it under a live lease: this delivery backs off."""
    CLOSED = "closed"
    """Done or failed already (or no such unit): nothing to do."""


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True)


class Document(_Record):
    document_id: str
    source_name: str
    source_key: str
    sha256: str
    bytes: int
    version: int
    latest_job_id: str
    created_at: datetime


class Job(_Record):
    """One processing run of one version of a document.

    ``error`` is set by a worker that hit a terminal problem before any unit existed (a bad
    input); the poller, the only writer of ``status``, turns it into a failed job.
    """

    job_id: str
    document_id: str
    status: JobStatus
    object_key: str
    source_name: str
    created_at: datetime
    updated_at: datetime
    last_progress_at: datetime
    finished_at: datetime | None = None
    pages: int | None = None
    units: int | None = None
    detected_format: str | None = None
    error: str | None = None
    failure_reason: str | None = None
    indexed_at: datetime | None = None
    index_error: str | None = None
    failure_detail: str | None = None
    stalled_s: float = 0.0
    """Seconds without progress while it could have progressed: a runtime was up and the job
    was not waiting its turn behind visible messages. Reset by every unit that moves."""
    fields_schema: str | None = None
    """The schema a run asked to extract (``nda``, ``MODULE:CLASS``); None: no field stage."""
    fields_strategy: str | None = None
    fields_published_at: datetime | None = None
    """When the requested strategy's result (succeeded or failed) was published."""
    retry_at: datetime | None = None
    """When a message of this job that was put back on its queue with a delay (a model brownout
    on Lambda) is due again: its work is scheduled, so the no-progress clock waits for it."""
    source_path: str | None = None
    """The file's path relative to the folder it was ingested from (``NewVersion.source_path``)."""
    run_choices: str | None = None
    """The choices of the run that created the job (``extract.run_choices``): every handler,
    wherever it runs, reads, renders and splits the job with these."""

    @property
    def indexed(self) -> bool:
        """A success whose indexing is over: indexed, or given up."""
        return self.status is JobStatus.SUCCEEDED and (
            self.indexed_at is not None or self.index_error is not None)

    @property
    def settled(self) -> bool:
        """Nothing more will happen to this job: terminal, a success indexed (or given up), and
        the fields result published when fields were asked for."""
        if self.fields_strategy is not None and self.fields_published_at is None:
            return False
        if self.status is JobStatus.SUCCEEDED:
            return self.indexed
        return self.status is JobStatus.FAILED


class Unit(_Record):
    job_id: str
    unit_id: str
    kind: str
    first_page: int | None = None
    last_page: int | None = None
    sheet_name: str | None = None
    status: UnitStatus = UnitStatus.PENDING
    attempts: int = 0
    error_type: str | None = None
    error: str | None = None

    @property
    def page_numbers(self) -> range:
        if self.first_page is None or self.last_page is None:
            return range(0)
        return range(self.first_page, self.last_page + 1)


class JobProgress(_Record):
    """What the poller needs to decide a job's fate, read in one query."""

    job: Job
    units_planned: int
    units_done: int
    units_failed: int
    units_running: int = 0
    first_failure: str | None = None

    @property
    def units_pending(self) -> int:
        """Units no worker has started: their messages wait (or were lost) on the queue."""
        return self.units_planned - self.units_done - self.units_failed - self.units_running


class ClaimStatus(StrEnum):
    """A field extraction's claim: taken by one worker, then done or failed, never back."""

    CLAIMED = "claimed"
    DONE = "done"
    FAILED = "failed"

    @property
    def terminal(self) -> bool:
        return self is not ClaimStatus.CLAIMED


class FieldClaim(_Record):
    """The claim row of one strategy's field extraction for one job, and its result.

    ``result`` is the ``FieldResult`` JSON (``extract.fields.result``) once terminal;
    ``published_at`` is the publisher's outbox flag."""

    job_id: str
    strategy: str
    document_id: str
    status: ClaimStatus
    claimant: str | None = None
    claimed_at: datetime | None = None
    finished_at: datetime | None = None
    result: str | None = None
    published_at: datetime | None = None
