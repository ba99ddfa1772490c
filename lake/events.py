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

import hashlib
import uuid
from datetime import UTC, datetime
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["SCHEMA_VERSION", "EVENT_NAMESPACE", "event_uuid", "utc_now", "Event", "DocumentRegistered",
           "JobCreated", "FormatDetected", "JobSplit", "UnitPlanned", "UnitStarted", "PageRead", "UnitDone",
           "UnitFailed", "FailureRecorded", "JobExtracting", "JobSucceeded", "JobFailed", "DocumentIndexed",
           "ModelCalled", "ResultPublished", "ResultFieldExtracted", "LabelRecorded", "LabelValueRecorded",
           "EvalRunCompleted", "EvalScoreComputed", "EvalOutcomeRecorded", "ExpectationChecked",
           "EVENT_TYPES"]

SCHEMA_VERSION = 1

# A fixed namespace so that event ids are stable across processes, machines and releases.
EVENT_NAMESPACE = uuid.UUID("6b1f0c52-3f0e-4c8e-9f7a-2d7f0b6b9e11")
_NAMESPACE_BYTES = EVENT_NAMESPACE.bytes


def event_uuid(name: str) -> str:
    """``str(uuid.uuid5(EVENT_NAMESPACE, name))`` without building ``UUID`` objects: every event
    derives its id, and the main process derives thousands a second (``uuid5`` and the UUID's
    own checks were a twelfth of its CPU on a text run)."""
    digest = bytearray(hashlib.sha1(_NAMESPACE_BYTES + name.encode("utf-8")).digest()[:16])
    digest[6] = (digest[6] & 0x0F) | 0x50  # version 5
    digest[8] = (digest[8] & 0x3F) | 0x80  # RFC 4122 variant
    h = digest.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def utc_now() -> datetime:
    """The current time, timezone-aware, in UTC (the lake stores UTC only)."""
    return datetime.now(UTC)


class Event(BaseModel):
    """The envelope every event carries.

    ``identity`` lists the fields (besides ``event_type``) that make two emissions the same
    logical event; ``event_id`` is derived from them when not given.
    """

    # Each class's validator is built on its first use, not at import: a run's process emits
    # about ten of the 26 types, and building them all was 14 ms of every command's start
    # (``lake.events`` 28 ms of import, 14 ms deferred). Fields and schemas are unchanged.
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    event_type: ClassVar[str] = "event"
    identity: ClassVar[tuple[str, ...]] = ()

    schema_version: int = Field(
        SCHEMA_VERSION, description="version of the event schema the row was written with")
    event_id: str = Field(
        "", description="the event's id, derived from what identifies it (duplicates share it)")
    occurred_at: datetime = Field(default_factory=utc_now, description="when it happened, in UTC")
    document_id: str | None = Field(None, description="the document (stable across its versions)")
    job_id: str | None = Field(None, description="one processing run of one version of a document")
    unit_id: str | None = Field(
        None, description="the unit of work (a run of pages or a sheet) within the job")
    attempt: int | None = Field(None, description="delivery attempt of the message, from 1")
    worker: str | None = Field(None, description="the host and process that wrote the event")

    @model_validator(mode="before")
    @classmethod
    def _derive_event_id(cls, data: Any) -> Any:
        if isinstance(data, dict) and not data.get("event_id"):
            if not cls.identity:
                data = {**data, "event_id": str(uuid.uuid4())}
            else:
                parts = [cls.event_type, *(str(data.get(name)) for name in cls.identity)]
                data = {**data, "event_id": event_uuid("|".join(parts))}
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

    source_name: str = Field(description="the file's own name, as it was ingested")
    source_key: str | None = Field(
        None, description="where the file came from (its absolute path when ingested from disk)")
    sha256: str = Field(description="SHA-256 of the file's bytes")
    bytes: int = Field(description="size of the file in bytes")
    version: int = Field(
        1, description="version of the document: 1, then one more each time its bytes change")
    object_key: str | None = Field(None, description="where the uploaded bytes are stored")
    source_path: str | None = Field(
        None, description="the file's path relative to the folder given to `doclake run` (its "
        "name for a file given by itself), so a/NDA.pdf and b/NDA.pdf stay apart")


class JobCreated(Event):
    """A job was planned for one version of a document; status starts at queued."""

    event_type: ClassVar[str] = "job_created"
    identity: ClassVar[tuple[str, ...]] = ("job_id",)

    status: str = Field("queued", description="the job's status at that moment")


# --- prepare and split -------------------------------------------------------------------------


class FormatDetected(Event):
    """The document's real format, sniffed from its bytes, not its name."""

    event_type: ClassVar[str] = "format_detected"
    identity: ClassVar[tuple[str, ...]] = ("job_id",)

    detected_format: str = Field(description="the real format, sniffed from the bytes (pdf, docx, xlsx...)")
    mime_type: str | None = Field(None, description="the MIME type of the detected format")


class JobSplit(Event):
    """The splitter counted the pages and planned the units."""

    event_type: ClassVar[str] = "job_split"
    identity: ClassVar[tuple[str, ...]] = ("job_id",)

    pages: int = Field(description="pages in the document (sheets for a spreadsheet)")
    units: int = Field(description="units of work planned")
    pages_per_unit: int | None = Field(None, description="pages per unit the split used")
    converter: str | None = Field(
        None, description="what converted an Office file to the PDF that was split (soffice)")
    conversion_ms: float | None = Field(
        None, description="milliseconds the Office-to-PDF conversion took")
    converted_bytes: int | None = Field(None, description="size of the converted PDF in bytes")


class UnitPlanned(Event):
    """One unit of work: a run of pages of a PDF, or one sheet of a spreadsheet."""

    event_type: ClassVar[str] = "unit_planned"
    identity: ClassVar[tuple[str, ...]] = ("job_id", "unit_id")

    kind: str = Field(description="pdf_pages or sheet")
    first_page: int | None = Field(None, description="first page of the unit (1-based)")
    last_page: int | None = Field(None, description="last page of the unit, inclusive")
    sheet_name: str | None = Field(None, description="the sheet, for a spreadsheet unit")


# --- read --------------------------------------------------------------------------------------


class UnitStarted(Event):
    """A worker took a unit's message; one event per delivery attempt."""

    event_type: ClassVar[str] = "unit_started"
    identity: ClassVar[tuple[str, ...]] = ("job_id", "unit_id", "attempt")

    kind: str | None = Field(None, description="pdf_pages or sheet")


class PageRead(Event):
    """One stored text part: a PDF page or a spreadsheet sheet, saved as Markdown."""

    event_type: ClassVar[str] = "page_read"
    identity: ClassVar[tuple[str, ...]] = ("job_id", "page_number")

    page_number: int = Field(description="page number (1-based), or a sheet's position")
    reader: str = Field(description="what read the text: the text layer, OCR, a model, calamine")
    chars: int = Field(description="characters of text stored")
    object_key: str | None = Field(None, description="where the page's Markdown is stored")
    duration_ms: float | None = Field(
        None, description="milliseconds spent reading this page alone, measured page by page "
        "(the text layer in its worker, OCR per page, a model per call); the unit's whole time, "
        "queueing and storing included, is units.duration_ms")
    sheet_name: str | None = Field(None, description="the sheet, for a spreadsheet's text part")


class UnitDone(Event):
    """Every page of the unit is stored; the database marks the unit done after this."""

    event_type: ClassVar[str] = "unit_done"
    identity: ClassVar[tuple[str, ...]] = ("job_id", "unit_id")

    pages: int = Field(description="pages in the unit")
    pages_skipped: int = Field(0, description="pages already stored by an earlier attempt, not read again")
    duration_ms: float | None = Field(None, description="milliseconds the unit took")


class UnitFailed(Event):
    """A unit failed for good (a terminal error or its last allowed delivery)."""

    event_type: ClassVar[str] = "unit_failed"
    identity: ClassVar[tuple[str, ...]] = ("job_id", "unit_id")

    error_type: str = Field(description="why the unit failed: a stable code such as corrupt or timeout")
    message: str = Field(description="the error message")


class FailureRecorded(Event):
    """Any error at any stage, retried or final: the failures table."""

    event_type: ClassVar[str] = "failure"
    identity: ClassVar[tuple[str, ...]] = (
        "job_id", "unit_id", "stage", "attempt", "error_type", "message_id")

    stage: str = Field(description="where it failed: ingest, split, read, index, poll...")
    error_type: str = Field(description="a stable code for the error, such as corrupt, encrypted or timeout")
    message: str = Field(description="the error message")
    final: bool = Field(description="true when it will not be retried")
    message_id: str | None = Field(None, description="the queue message being handled")


# --- finish ------------------------------------------------------------------------------------


class JobExtracting(Event):
    """The poller saw the job's units planned and moved it to extracting."""

    event_type: ClassVar[str] = "job_extracting"
    identity: ClassVar[tuple[str, ...]] = ("job_id",)

    status: str = Field("extracting", description="the job's status at that moment")


class JobSucceeded(Event):
    """The poller saw every unit done."""

    event_type: ClassVar[str] = "job_succeeded"
    identity: ClassVar[tuple[str, ...]] = ("job_id",)

    status: str = Field("succeeded", description="the job's status at that moment")
    pages: int | None = Field(None, description="pages in the document")
    units: int | None = Field(None, description="units of work")


class JobFailed(Event):
    """The poller failed the job: a failed unit, no progress for too long, or a bad input."""

    event_type: ClassVar[str] = "job_failed"
    identity: ClassVar[tuple[str, ...]] = ("job_id",)

    status: str = Field("failed", description="the job's status at that moment")
    failure_reason: str = Field(
        description="why the job failed: a stable code such as unsupported_format or timeout")
    pages: int | None = Field(None, description="pages in the document, when known")
    units: int | None = Field(None, description="units of work, when known")


class DocumentIndexed(Event):
    """The indexer merged the job's pages in order into the search index."""

    event_type: ClassVar[str] = "document_indexed"
    identity: ClassVar[tuple[str, ...]] = ("job_id",)

    pages: int = Field(description="pages indexed for search")
    chars: int = Field(description="characters indexed")


# --- models and fields (filled by later stages) ------------------------------------------------


class ModelCalled(Event):
    """One call to a model provider, successful or not, with its tokens and cost."""

    event_type: ClassVar[str] = "model_call"
    identity: ClassVar[tuple[str, ...]] = ("call_id",)

    call_id: str = Field(description="the call's id")
    purpose: str = Field(description="what the call was for: read a page, extract fields...")
    provider: str = Field(description="the model provider (gemini, bedrock, simulated)")
    model: str = Field(description="the model's name")
    outcome: str = Field(description="ok, error, timeout, blocked or empty")
    http_status: int | None = Field(None, description="HTTP status of the answer, when there was one")
    input_tokens: int = Field(0, description="tokens sent")
    output_tokens: int = Field(0, description="tokens received")
    latency_ms: float | None = Field(None, description="milliseconds until the answer")
    cost_usd: float = Field(0.0, description="cost of the call in US dollars")
    page_number: int | None = Field(None, description="the page the call read, for a page read")
    call_attempt: int | None = Field(
        None, description="the try of this call within the worker's retries, from 1 (the "
        "envelope's attempt is the message's delivery)")
    detail: str | None = Field(
        None, description="why the call failed or gave no text: the HTTP error, the block reason "
        "or the finish reason")
    tokens_estimated: bool = Field(
        False, description="true when no answer said the tokens: a call that timed out or was "
        "cancelled after its request was sent (the provider may bill it) carries the input "
        "tokens estimated from the request, output 0, and the cost of those")


class ResultPublished(Event):
    """Structured fields extracted from a document and published as JSON."""

    event_type: ClassVar[str] = "result_published"
    identity: ClassVar[tuple[str, ...]] = ("job_id", "strategy")

    status: str = Field(description="succeeded, failed, or not_applicable (the document is not of "
                        "the kind the schema is for: no values)")
    effective_date: str | None = Field(None, description="the agreement's effective date (ISO 8601)")
    jurisdiction: str | None = Field(None, description="the governing law's jurisdiction")
    party: list[str] = Field(default_factory=list, description="the parties' names")
    term: str | None = Field(None, description="the agreement's term, e.g. 2 years")
    strategy: str = Field(description="how fields were extracted: rules, single-pass or agentic")
    model_version: str | None = Field(None, description="the model or rule set that produced the result")
    input_tokens: int = Field(0, description="tokens sent to models for this result")
    output_tokens: int = Field(0, description="tokens received from models for this result")
    processing_ms: float | None = Field(None, description="milliseconds the extraction took")
    schema_name: str | None = Field(
        None, description="the schema extracted: nda, or the MODULE:CLASS a user gave")
    failure_reason: str | None = Field(
        None, description="why a failed result failed: a stable code such as "
        "strategy_unavailable, invalid_output or dead_letter")
    document_kind: str | None = Field(
        None, description="the kind of document the schema is for (nda), null when it names none")
    applies: bool | None = Field(
        None, description="whether the document was judged of that kind (false: not_applicable, "
        "no values); null when the schema names no kind")
    applicability_score: float | None = Field(
        None, description="the offline classifier's score for the kind, 0 to 1 (0.5 decides)")
    extracted_at: datetime | None = Field(
        None, description="when the extraction's result was stored, in UTC (the publisher "
        "published it at occurred_at): the end of the fields stage in stage_timings")


class ResultFieldExtracted(Event):
    """One extracted value of a published result, for any schema: a list field gives one row per
    item. Published with its ``ResultPublished``, in the same commit."""

    event_type: ClassVar[str] = "result_field"
    identity: ClassVar[tuple[str, ...]] = ("job_id", "strategy", "field", "value_index")

    field: str = Field(description="the schema field the value belongs to")
    value: str = Field(description="the value as text (dates in ISO 8601, nested models as JSON)")
    value_index: int = Field(0, description="position of the value in a list field (0 otherwise)")
    strategy: str = Field(description="how fields were extracted: rules, single-pass or agentic")
    model_version: str | None = Field(None, description="the model or rule set that produced the result")
    schema_name: str | None = Field(
        None, description="the schema extracted: nda, or the MODULE:CLASS a user gave")
    page_number: int | None = Field(None, description="page number (1-based), or a sheet's position")
    char_offset: int | None = Field(
        None, description="where the value was found: characters from the start of its page")
    confidence: float | None = Field(
        None, description="the calibrated probability that the value is right (rules "
        "strategy); for an LLM value, low when its evidence does not state it, else null")
    evidence: str | None = Field(
        None, description="the text that decided the value: the best-scoring mention (rules) "
        "or the model's quote aligned to the page (LLM strategies)")
    evidence_start: int | None = Field(
        None, description="where the evidence starts: characters from the start of its page's "
        "stored text")
    evidence_end: int | None = Field(
        None, description="where the evidence ends (exclusive): the page text between start and "
        "end is the evidence")
    flag: str | None = Field(
        None, description="why the value is doubtful: evidence_lacks_value (the model's quote "
        "does not state it) or not_found (no page states it); null otherwise")


# --- evals: labels and scores ------------------------------------------------------------------


class LabelRecorded(Event):
    """A person's answer for one document (``doclake evals import-labels``): the header of one
    label version. Its values are ``LabelValueRecorded`` rows; a label with none says the
    document holds no value for the fields it names. A later label (by ``labelled_at``)
    supersedes an earlier one for the same document; nothing is overwritten."""

    event_type: ClassVar[str] = "label"
    identity: ClassVar[tuple[str, ...]] = ("label_id",)

    label_id: str = Field(description="one label version of one document (derived from its content)")
    labeller: str = Field(description="who labelled the document")
    labelled_at: datetime = Field(
        default_factory=utc_now, description="when the labeller gave the answer, in UTC")
    fields_labelled: list[str] = Field(
        default_factory=list, description="the schema fields the label covers (an absent value "
        "for one of them means the document has none)")
    value_count: int = Field(0, description="values in the label (0: nothing to find)")
    value_format: str = Field(
        "text", description="text (as a reader writes it) or kleister (key=value tokens, "
        "already normalised)")
    sha256: str | None = Field(None, description="SHA-256 of the file's bytes")
    source: str | None = Field(None, description="the file the label was imported from, and its format")
    provenance: str | None = Field(
        None, description="how the answer was made: blind (the labeller did not see the model's "
        "values), pre-filled (they did), imported (a gold set made elsewhere) or reviewer")


class LabelValueRecorded(Event):
    """One value of a label: a list field gives one row per item."""

    event_type: ClassVar[str] = "label_value"
    identity: ClassVar[tuple[str, ...]] = ("label_id", "field", "value_index")

    label_id: str = Field(description="one label version of one document (derived from its content)")
    field: str = Field(description="the schema field the value belongs to")
    value: str = Field(description="the value as text (dates in ISO 8601, nested models as JSON)")
    value_index: int = Field(0, description="position of the value in a list field (0 otherwise)")


class EvalRunCompleted(Event):
    """One ``doclake evals score`` run: its window and pooled figures; details in eval_scores
    and eval_outcomes under the same ``eval_run_id``."""

    event_type: ClassVar[str] = "eval_run"
    identity: ClassVar[tuple[str, ...]] = ("eval_run_id",)

    eval_run_id: str = Field(description="one scoring run")
    since: datetime | None = Field(None, description="results published from this time were scored")
    until: datetime | None = Field(None, description="... up to this time")
    documents: int = Field(0, description="labelled documents scored")
    scored_results: int = Field(0, description="(label, result) pairs scored")
    groups: int = Field(0, description="(model_version, strategy) groups scored")
    precision: float | None = Field(None, description="micro-averaged precision over key=value tokens")
    recall: float | None = Field(None, description="micro-averaged recall over key=value tokens")
    f1: float | None = Field(None, description="micro-averaged F1 over key=value tokens")
    resamples: int = Field(0, description="bootstrap resamples behind the confidence intervals")
    seed: int = Field(0, description="seed of the bootstrap")
    week_start: datetime | None = Field(
        None, description="Monday 00:00 UTC of the week a weekly report scored (`doclake evals "
        "report`); empty for `doclake evals score`")
    week_by: str | None = Field(
        None, description="how the weekly report placed a label in a week: label (the week it "
        "was labelled) or document (the week its document version was ingested)")


class EvalScoreComputed(Event):
    """Precision, recall and F1 of one field (or ``overall``), for one (model_version,
    strategy) group, or for one scored result when ``level`` is document."""

    event_type: ClassVar[str] = "eval_score"
    identity: ClassVar[tuple[str, ...]] = (
        "eval_run_id", "level", "model_version", "strategy", "job_id", "field")

    eval_run_id: str = Field(description="one scoring run")
    level: str = Field(description="group (a model version and strategy) or document")
    model_version: str | None = Field(None, description="the model or rule set that produced the result")
    strategy: str | None = Field(None, description="how fields were extracted: rules, single-pass or agentic")
    field: str = Field(description="the schema field scored, or overall")
    precision: float = Field(description="micro-averaged precision over key=value tokens")
    recall: float = Field(description="micro-averaged recall over key=value tokens")
    f1: float = Field(description="micro-averaged F1 over key=value tokens")
    hits: int = Field(description="predicted tokens equal to a gold token (each gold token once)")
    predicted: int = Field(description="tokens predicted")
    expected: int = Field(description="gold tokens")
    scored_documents: int = Field(1, description="documents behind the figure")
    precision_low: float | None = Field(None, description="2.5th bootstrap percentile of precision")
    precision_high: float | None = Field(None, description="97.5th bootstrap percentile of precision")
    recall_low: float | None = Field(None, description="2.5th bootstrap percentile of recall")
    recall_high: float | None = Field(None, description="97.5th bootstrap percentile of recall")
    f1_low: float | None = Field(None, description="2.5th bootstrap percentile of F1")
    f1_high: float | None = Field(None, description="97.5th bootstrap percentile of F1")
    label_id: str | None = Field(None, description="the label scored against (document level)")
    as_labelled: bool | None = Field(
        None, description="document level: true for the result the document had when it was "
        "labelled; a later result (a new model version) is scored against the same label in a "
        "row of its own")


class EvalOutcomeRecorded(Event):
    """One token's fate in one scored result: hit, wrong (a gold value and a different
    prediction), missed (no prediction) or spurious (no gold value). Failures are a WHERE away."""

    event_type: ClassVar[str] = "eval_outcome"
    identity: ClassVar[tuple[str, ...]] = (
        "eval_run_id", "job_id", "strategy", "field", "outcome_index")

    eval_run_id: str = Field(description="one scoring run")
    label_id: str = Field(description="the label scored against")
    strategy: str | None = Field(None, description="how fields were extracted: rules, single-pass or agentic")
    model_version: str | None = Field(None, description="the model or rule set that produced the result")
    field: str = Field(description="the schema field scored")
    outcome: str = Field(description="hit, wrong, missed or spurious")
    expected: str | None = Field(None, description="the gold value (as labelled)")
    got: str | None = Field(None, description="the extracted value")
    outcome_index: int = Field(0, description="position of the outcome within its field")
    page_number: int | None = Field(None, description="page number (1-based), or a sheet's position")
    as_labelled: bool = Field(
        False, description="true for the result the document had when it was labelled; a later "
        "result (a new model version) is scored against the same label in a row of its own")


# --- the lake itself ---------------------------------------------------------------------------


class ExpectationChecked(Event):
    """One data-quality expectation evaluated by ``doclake lake check``."""

    event_type: ClassVar[str] = "expectation_checked"

    run_id: str = Field(description="one run of `doclake lake check`")
    table_name: str = Field(description="the table the expectation was checked on")
    expectation: str = Field(description="the expectation, e.g. expect_column_values_to_not_be_null(job_id)")
    success: bool = Field(description="whether the table met it")
    unexpected_count: int | None = Field(None, description="rows that did not")
    details: str | None = Field(None, description="what was found, when it failed")


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
        ResultFieldExtracted,
        ExpectationChecked,
        LabelRecorded,
        LabelValueRecorded,
        EvalRunCompleted,
        EvalScoreComputed,
        EvalOutcomeRecorded,
    )
}
