"""Event schemas: the one source of truth for the lake.

Every step of the pipeline emits one of these immutable events. The Parquet schema, the DuckDB
views and the Glue table definitions are all generated from these models, so a field added here
appears everywhere. Changes are additive only: add optional fields, bump ``SCHEMA_VERSION``, never
rename or retype a field that has shipped.

Event ids are deterministic: a redelivered message that emits the same logical event again (the same
page of the same job, the same attempt of the same unit) produces the same ``event_id``, so readers
deduplicate by id. Each event class names the fields that identify it in ``identity``.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

SCHEMA_VERSION = 1

# A fixed namespace so that event ids are stable across processes, machines and releases.
EVENT_NAMESPACE = uuid.UUID("6b1f0c52-3f0e-4c8e-9f7a-2d7f0b6b9e11")


def utc_now() -> datetime:
    """The current time, timezone-aware, in UTC (the lake stores UTC only)."""
    return datetime.now(UTC)


class Event(BaseModel):
    """The envelope every event carries.

    ``identity`` lists the fields (besides ``event_type``) that make two emissions the same
    logical event; ``event_id`` is derived from them when not given.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    event_type: ClassVar[str] = "event"
    identity: ClassVar[tuple[str, ...]] = ()

    schema_version: int = SCHEMA_VERSION
    event_id: str = ""
    occurred_at: datetime = Field(default_factory=utc_now)
    document_id: str | None = None
    job_id: str | None = None
    unit_id: str | None = None
    attempt: int | None = None
    worker: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _derive_event_id(cls, data: Any) -> Any:
        if isinstance(data, dict) and not data.get("event_id"):
            if not cls.identity:
                data = {**data, "event_id": str(uuid.uuid4())}
            else:
                parts = [cls.event_type, *(str(data.get(name)) for name in cls.identity)]
                data = {**data, "event_id": str(uuid.uuid5(EVENT_NAMESPACE, "|".join(parts)))}
        return data

    @model_validator(mode="after")
    def _utc_only(self) -> Event:
        if self.occurred_at.tzinfo is None:
            raise ValueError("occurred_at must be timezone-aware (UTC)")
        return self

    def row(self) -> dict[str, Any]:
        """The event as a flat row, ``event_type`` included, ready for Arrow."""
        return {"event_type": self.event_type, **self.model_dump()}


# --- ingest ------------------------------------------------------------------------------------


class DocumentRegistered(Event):
    """A new document, or a new version of one, was stored under its document id."""

    event_type: ClassVar[str] = "document_registered"
    identity: ClassVar[tuple[str, ...]] = ("job_id",)

    source_name: str
    source_key: str | None = None
    sha256: str
    bytes: int
    version: int = 1
    object_key: str | None = None


class JobCreated(Event):
    """A job was planned for one version of a document; status starts at queued."""

    event_type: ClassVar[str] = "job_created"
    identity: ClassVar[tuple[str, ...]] = ("job_id",)

    status: str = "queued"


# --- prepare and split -------------------------------------------------------------------------


class FormatDetected(Event):
    """The document's real format, sniffed from its bytes, not its name."""

    event_type: ClassVar[str] = "format_detected"
    identity: ClassVar[tuple[str, ...]] = ("job_id",)

    detected_format: str
    mime_type: str | None = None


class JobSplit(Event):
    """The splitter counted the pages and planned the units."""

    event_type: ClassVar[str] = "job_split"
    identity: ClassVar[tuple[str, ...]] = ("job_id",)

    pages: int
    units: int
    pages_per_unit: int | None = None


class UnitPlanned(Event):
    """One unit of work: a run of pages of a PDF, or one sheet of a spreadsheet."""

    event_type: ClassVar[str] = "unit_planned"
    identity: ClassVar[tuple[str, ...]] = ("job_id", "unit_id")

    kind: str
    first_page: int | None = None
    last_page: int | None = None
    sheet_name: str | None = None


# --- read --------------------------------------------------------------------------------------


class UnitStarted(Event):
    """A worker took a unit's message; one event per delivery attempt."""

    event_type: ClassVar[str] = "unit_started"
    identity: ClassVar[tuple[str, ...]] = ("job_id", "unit_id", "attempt")

    kind: str | None = None


class PageRead(Event):
    """One stored text part: a PDF page or a spreadsheet sheet, saved as Markdown."""

    event_type: ClassVar[str] = "page_read"
    identity: ClassVar[tuple[str, ...]] = ("job_id", "page_number")

    page_number: int
    reader: str
    chars: int
    object_key: str | None = None
    duration_ms: float | None = None


class UnitDone(Event):
    """Every page of the unit is stored; the database marks the unit done after this."""

    event_type: ClassVar[str] = "unit_done"
    identity: ClassVar[tuple[str, ...]] = ("job_id", "unit_id")

    pages: int
    pages_skipped: int = 0
    duration_ms: float | None = None


class UnitFailed(Event):
    """A unit failed for good (a terminal error or its last allowed delivery)."""

    event_type: ClassVar[str] = "unit_failed"
    identity: ClassVar[tuple[str, ...]] = ("job_id", "unit_id")

    error_type: str
    message: str


class FailureRecorded(Event):
    """Any error at any stage, retried or final: the failures table."""

    event_type: ClassVar[str] = "failure"
    identity: ClassVar[tuple[str, ...]] = (
        "job_id", "unit_id", "stage", "attempt", "error_type", "message_id")

    stage: str
    error_type: str
    message: str
    final: bool
    message_id: str | None = None


# --- finish ------------------------------------------------------------------------------------


class JobExtracting(Event):
    """The poller saw the job's units planned and moved it to extracting."""

    event_type: ClassVar[str] = "job_extracting"
    identity: ClassVar[tuple[str, ...]] = ("job_id",)

    status: str = "extracting"


class JobSucceeded(Event):
    """The poller saw every unit done."""

    event_type: ClassVar[str] = "job_succeeded"
    identity: ClassVar[tuple[str, ...]] = ("job_id",)

    status: str = "succeeded"
    pages: int | None = None
    units: int | None = None


class JobFailed(Event):
    """The poller failed the job: a failed unit, no progress for too long, or a bad input."""

    event_type: ClassVar[str] = "job_failed"
    identity: ClassVar[tuple[str, ...]] = ("job_id",)

    status: str = "failed"
    failure_reason: str
    pages: int | None = None
    units: int | None = None


class DocumentIndexed(Event):
    """The indexer merged the job's pages in order into the search index."""

    event_type: ClassVar[str] = "document_indexed"
    identity: ClassVar[tuple[str, ...]] = ("job_id",)

    pages: int
    chars: int


# --- models and fields (filled by later stages) ------------------------------------------------


class ModelCalled(Event):
    """One call to a model provider, successful or not, with its tokens and cost."""

    event_type: ClassVar[str] = "model_call"
    identity: ClassVar[tuple[str, ...]] = ("call_id",)

    call_id: str
    purpose: str
    provider: str
    model: str
    outcome: str
    http_status: int | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    latency_ms: float | None = None
    cost_usd: float = 0.0
    page_number: int | None = None


class ResultPublished(Event):
    """Structured fields extracted from a document and published as JSON."""

    event_type: ClassVar[str] = "result_published"
    identity: ClassVar[tuple[str, ...]] = ("job_id", "strategy")

    status: str
    effective_date: str | None = None
    jurisdiction: str | None = None
    party: list[str] = Field(default_factory=list)
    term: str | None = None
    strategy: str
    model_version: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    processing_ms: float | None = None


# --- the lake itself ---------------------------------------------------------------------------


class ExpectationChecked(Event):
    """One data-quality expectation evaluated by ``doclake lake check``."""

    event_type: ClassVar[str] = "expectation_checked"

    run_id: str
    table_name: str
    expectation: str
    success: bool
    unexpected_count: int | None = None
    details: str | None = None


EVENT_TYPES: dict[str, type[Event]] = {
    cls.event_type: cls
    for cls in (
        DocumentRegistered,
        JobCreated,
        FormatDetected,
        JobSplit,
        UnitPlanned,
        UnitStarted,
        PageRead,
        UnitDone,
        UnitFailed,
        FailureRecorded,
        JobExtracting,
        JobSucceeded,
        JobFailed,
        DocumentIndexed,
        ModelCalled,
        ResultPublished,
        ExpectationChecked,
    )
}
