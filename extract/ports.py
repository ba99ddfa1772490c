"""Ports: the small interfaces the handlers need, each with a local and an AWS adapter.

The docstrings state the contract every adapter keeps; ``tests/test_contracts.py`` checks it
against each implementation.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol, TypeVar

from extract.state import (
    ClaimStatus,
    Document,
    FieldClaim,
    Job,
    JobProgress,
    JobStatus,
    Unit,
    UnitClaim,
)
from lake.events import Event

__all__ = ["T", "ObjectStore", "ReceivedMessage", "QueueDepth", "Queue", "NewVersion", "JobStore",
           "EventSink", "CpuRunner", "SearchHit", "SearchIndex"]

T = TypeVar("T")


# --- object store ------------------------------------------------------------------------------


class ObjectStore(Protocol):
    """Bytes under S3-like keys. Writes are atomic: a reader sees all of an object or none."""

    def put(self, key: str, data: bytes, *, metadata: dict[str, str] | None = None) -> None: ...

    def put_many(self, objects: Sequence[tuple[str, bytes, dict[str, str] | None]]) -> None:
        """Several ``put``s at once (a unit's pages); each object is atomic, the batch is not."""
        ...

    def put_file(self, key: str, path: Path, *, max_bytes: int | None = None) -> None:
        """Store a local file; with ``max_bytes`` at most ``max_bytes + 1`` of its bytes (a file
        over the size limit is stored only far enough to be failed ``file_too_large``)."""
        ...

    def put_files(self, files: Sequence[tuple[str, Path]], *, max_bytes: int | None = None,
                  digests: Mapping[str, str] | None = None) -> None:
        """Several ``put_file``s at once (a batch of uploads), all stored on return; each
        object is atomic, the batch is not. Each file is opened with
        ``lake.files.open_regular`` (no link anywhere on its path). ``digests`` (key -> sha256
        of what is copied): a file whose copied bytes hash otherwise is not stored, and
        ``OSError(ESTALE)`` is raised: it changed since it was hashed."""
        ...

    def get(self, key: str) -> bytes:
        """Raises ``KeyError`` when the key does not exist."""
        ...

    def head(self, key: str) -> dict[str, str] | None:
        """The object's metadata, or None when it does not exist."""
        ...

    def list(self, prefix: str) -> list[str]:
        """Keys under a prefix, sorted."""
        ...

    def delete_prefix(self, prefix: str) -> int: ...

    def local_path(self, key: str) -> AbstractContextManager[Path]:
        """A local file holding the object for the duration of the ``with`` block."""
        ...


# --- queue -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReceivedMessage:
    queue: str
    message_id: str
    body: str
    receipt: str
    receive_count: int
    schedule_key: float | None = None
    """``extract.scheduling.schedule_key`` of the message, where its queue keeps one: the
    runtime orders the message's CPU calls by it."""


@dataclass(frozen=True)
class QueueDepth:
    visible: int
    in_flight: int
    dead_letter: int


class Queue(Protocol):
    """At-least-once queues with visibility timeouts and redrive to a dead-letter queue.

    A received message is hidden for ``visibility_timeout_s``; unless deleted in that time it
    becomes visible again with ``receive_count`` one higher. A message received ``max_receives``
    times is moved to ``<queue>-dlq`` at its next receive instead of being delivered.
    """

    max_receives: int

    def send(self, queue: str, body: str, *, group: str | None = None,
             pages: int | Sequence[int] | None = None, arrived_at: float | None = None
             ) -> str: ...

    def send_batch(self, queue: str, bodies: Sequence[str], *, group: str | None = None,
                   pages: int | Sequence[int] | None = None, arrived_at: float | None = None
                   ) -> list[str]:
        """Any number of messages (an adapter splits them to its service's limit: SQS takes ten
        a request). ``group`` is a fairness hint (the job id); an adapter may ignore it.
        ``pages``: the pages the messages' document has left (``extract.scheduling``; one count
        for all, or one a message): the SQLite queue orders by it, SQS picks the small or the
        bulk queue by it. ``arrived_at``: when their document arrived (epoch seconds; default:
        now), the tie-breaker and the age of ``extract.scheduling.schedule_key``."""
        ...

    def receive(self, queue: str, *, max_messages: int = 1,
                visibility_timeout_s: float = 300) -> list[ReceivedMessage]: ...

    def delete(self, message: ReceivedMessage) -> None:
        """Acknowledge; a stale receipt (the message was redelivered since) is ignored."""
        ...

    def change_visibility(self, message: ReceivedMessage, timeout_s: float) -> None: ...

    def depth(self, queue: str) -> QueueDepth: ...


# --- job store ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class NewVersion:
    """Everything ingest knows about one upload, before any worker has opened it."""

    document_id: str
    job_id: str
    source_name: str
    source_key: str
    sha256: str
    bytes: int
    version: int
    object_key: str
    created_at: datetime
    source_path: str | None = None
    """The file's path relative to the folder it was found in (its name for a file given alone);
    None where there is no such folder (an upload)."""
    run_choices: str | None = None
    """The run's choices (``extract.run_choices.record``), kept with the job; None: the handling
    process's own settings apply."""


class JobStore(Protocol):
    """Documents, jobs and units, with conditional transitions.

    Every method that changes state is conditional and returns whether it did: a redelivered
    message that finds the work done gets False, not an error.
    """

    def find_document_by_sha256(self, sha256: str) -> tuple[Document, Job] | None: ...

    def find_document_by_source(self, source_key: str) -> Document | None: ...

    def create_job(self, version: NewVersion) -> None:
        """In one transaction: upsert the document (extracting), insert the job (queued)."""
        ...

    def get_document(self, document_id: str) -> Document | None: ...

    def get_job(self, job_id: str) -> Job | None: ...

    def get_unit(self, job_id: str, unit_id: str) -> Unit | None: ...

    def list_units(self, job_id: str) -> list[Unit]: ...

    def add_units(self, job_id: str, units: Sequence[Unit], *, pages: int,
                  detected_format: str, done: Sequence[str] = (), attempt: int = 1) -> bool:
        """Record the plan once; False if the job already has units. The units named in
        ``done`` were read while the document was planned (a workbook's first sheet, a PDF's
        first pages): they are recorded done, by delivery ``attempt``, and flagged sent, in the
        same write as the plan, as ``start_unit``, ``finish_unit`` and ``mark_units_sent``
        would leave them, and count as progress on the job."""
        ...

    def set_job_error(self, job_id: str, error: str) -> bool:
        """Note a terminal problem found before units existed; the poller fails the job."""
        ...

    def start_unit(self, job_id: str, unit_id: str, attempt: int) -> bool:
        """pending|running -> running with ``attempts = attempt``; False when terminal."""
        ...

    def claim_unit(self, job_id: str, unit_id: str, attempt: int, owner: str,
                   lease_s: float) -> UnitClaim:
        """A read's claim, one conditional write: pending -> running owned by ``owner`` until
        ``lease_s`` from now; running -> running only when the lease has expired, its owner is
        ``owner``, or (local store) its owner's process is dead. ``HELD`` while another live
        owner has it, ``CLOSED`` when terminal. Records progress on the job like
        ``start_unit``."""
        ...

    def renew_unit(self, job_id: str, unit_id: str, owner: str, lease_s: float) -> bool:
        """Extend ``owner``'s lease on a running unit to ``lease_s`` from now; False when the
        unit is no longer running under ``owner``."""
        ...

    def release_unit(self, job_id: str, unit_id: str, owner: str) -> bool:
        """A failed or cancelled read lets its unit go: running under ``owner`` -> pending, no
        owner, and progress recorded on the job (a unit in retry backoff is not a stall)."""
        ...

    def finish_unit(self, job_id: str, unit_id: str) -> bool:
        """pending|running -> done, and record progress on the job."""
        ...

    def fail_unit(self, job_id: str, unit_id: str, error_type: str, message: str) -> bool:
        """pending|running -> failed."""
        ...

    def active_jobs(self) -> list[JobProgress]:
        """Every job not yet terminal, with its unit counts."""
        ...

    def transition_job(self, job_id: str, expected: JobStatus, new: JobStatus, *,
                       failure_reason: str | None = None, failure_detail: str | None = None,
                       at: datetime, unmoved_since: datetime | None = None) -> bool:
        """The poller's write: only from ``expected``; sets ``finished_at`` (= ``at``) when
        terminal. The store is the truth; the poller's events follow it.

        ``unmoved_since`` (the no-progress rule): also only if the job's ``last_progress_at`` is
        still the one the decision read and no retry of its work is scheduled after ``at``, so a
        decision made on a stale read (an eventually consistent index) fails no job that moved."""
        ...

    def schedule_retry(self, job_id: str, at: datetime) -> bool:
        """Note that a message of this job waits on its queue until ``at`` (a delayed retry):
        the job's work is scheduled, not stalled. Keeps the later of two times; False when the
        job does not exist or is terminal."""
        ...

    def add_stall(self, stalls: Sequence[tuple[str, float, datetime]]) -> int:
        """Add ``(job_id, seconds, last_progress_at)`` to each job's stall clock, only where the
        job has not progressed since ``last_progress_at`` was read; returns rows changed."""
        ...

    def mark_status_events(self, jobs: Sequence[tuple[str, JobStatus]]) -> None:
        """Note, for each (job, status), that the event of that status is durable in the lake
        (an outbox flag; a job that has moved on since keeps its flag unset). One write where
        the store allows: the poller flags every job of its pass together."""
        ...

    def jobs_missing_status_event(self) -> list[Job]:
        """Jobs whose current status (past queued) has no confirmed event: a crash in between."""
        ...

    def acquire_lease(self, name: str, holder: str, ttl_s: float) -> bool:
        """Take or renew a named lease; False while another live holder has it. One poller."""
        ...

    def release_lease(self, name: str, holder: str) -> None: ...

    def jobs_to_index(self) -> list[Job]:
        """Succeeded jobs not yet indexed."""
        ...

    def mark_indexed(self, job_id: str, at: datetime) -> bool: ...

    def mark_indexed_many(self, job_ids: Sequence[str], at: datetime) -> None:
        """``mark_indexed`` for each of several jobs (an index batch's), in one write where the
        store has one (SQLite: one transaction, not a commit a job)."""
        ...

    def mark_index_failed(self, job_id: str, error: str) -> bool:
        """The indexer gave up on this job: it stays succeeded, its text unsearchable."""
        ...

    def mark_index_sent(self, job_ids: Sequence[str]) -> None:
        """Note that these jobs' index messages are on the queue (an outbox flag)."""
        ...

    def unsent_index_jobs(self) -> list[Job]:
        """Succeeded jobs, not indexed, whose index message was never confirmed sent."""
        ...

    def mark_units_sent(self, job_id: str, unit_ids: Sequence[str]) -> None:
        """Note that these units' read messages are on the queue (an outbox flag)."""
        ...

    def unsent_units(self, job_id: str) -> list[Unit]:
        """Pending units whose message was never confirmed sent."""
        ...

    def mark_split_sent(self, job_ids: Sequence[str]) -> None:
        """Note that the split messages of these jobs are on the queue (an outbox flag)."""
        ...

    def unsent_jobs(self) -> list[Job]:
        """Queued jobs whose split message was never confirmed sent: a crash in ingest."""
        ...

    def list_jobs(self, job_ids: Sequence[str] | None = None) -> list[Job]: ...

    # --- a document's password: kept with its job only while the job runs -----------------------
    #
    # Ingest may give one document a password of its own (``run --passwords``, serve's POST
    # /uploads); the handlers prefer it to the run's ``--password``. It lives in the store only:
    # never in a message, an event, a log line or the lake, and ``transition_job`` to a terminal
    # status erases it in the same write.

    def set_job_password(self, job_id: str, password: str) -> bool:
        """Keep ``password`` for this job's document; False (nothing kept) when the job does not
        exist or is terminal. Call it before the job's split message is sent."""
        ...

    def job_password(self, job_id: str) -> str | None:
        """The job's own password while the job is not terminal; None otherwise, or if none."""
        ...

    # --- fields: the request, the claim, the result and the publisher's outbox -----------------
    #
    # One claim row per (job_id, strategy), written only by conditional writes:
    #
    #   (absent) --claim_fields--> claimed --settle_fields(claimant=me)--> done | failed
    #      |                          |  \--release_fields(claimant=me)--> (absent)
    #      \-----settle_fields(claimant=None: no claim or a dead one)-----> failed
    #
    # A terminal row never changes again except for ``published_at`` (set once). On DynamoDB:
    # claim = PutItem with attribute_not_exists(pk); settle = UpdateItem with
    # "status = claimed AND claimant = :me" (or "attribute_not_exists(pk) OR status = claimed");
    # release = DeleteItem with the same condition; the publisher reads the table's stream.

    def request_fields(self, job_ids: Sequence[str], schema: str, strategy: str) -> int:
        """Ask for ``schema`` with ``strategy`` on these jobs; returns jobs whose request changed.
        A job already asked the same keeps its state (a re-run waits for nothing new); a job
        asked something else gets the new request, already published if that strategy's result
        exists."""
        ...

    def unsent_fields_jobs(self) -> list[Job]:
        """Jobs with a fields request whose message was never confirmed sent and whose text is
        final: succeeded (indexing runs beside the extraction, not before it), or failed."""
        ...

    def mark_fields_sent(self, job_ids: Sequence[str]) -> None:
        """Note that these jobs' fields messages are on the queue (an outbox flag)."""
        ...

    def claim_fields(self, job_id: str, strategy: str, *, document_id: str, claimant: str,
                     at: datetime, stale_before: datetime | None = None) -> bool:
        """Create the claim row, status claimed, only if none exists, or take over a row still
        only claimed since before ``stale_before`` (its worker died or was cut off at the
        stage's time limit); False otherwise (read it with ``get_field_claim``). A terminal row
        is never touched."""
        ...

    def get_field_claim(self, job_id: str, strategy: str) -> FieldClaim | None: ...

    def release_fields(self, job_id: str, strategy: str, claimant: str) -> bool:
        """Delete the claim, only if it is still ``claimed`` by ``claimant``: a worker giving up
        an attempt that will be retried."""
        ...

    def settle_fields(self, job_id: str, strategy: str, *, document_id: str,
                      status: ClaimStatus, result: str, claimant: str | None,
                      at: datetime) -> bool:
        """The terminal write (done or failed, with the result JSON). With ``claimant``: only if
        the row is ``claimed`` by that claimant. Without (a dead letter, a job that failed): only
        if there is no row or the row is still ``claimed`` by anyone. False when the row was not
        as expected; nothing changes then."""
        ...

    def unpublished_results(self, limit: int = 100) -> list[FieldClaim]:
        """Terminal claims whose result is not yet published, oldest first (the outbox)."""
        ...

    def mark_result_published(self, job_id: str, strategy: str, at: datetime) -> bool:
        """Set ``published_at`` once; when ``strategy`` is the job's requested one, the job's
        ``fields_published_at`` too (the run then counts it settled)."""
        ...

    def fields_pending(self) -> int:
        """Requested field results not yet published, over every job: for an idle check."""
        ...


# --- events ------------------------------------------------------------------------------------


class EventSink(Protocol):
    """Where events go. ``commit`` returns once they are durable in the lake."""

    async def commit(self, events: Sequence[Event]) -> None: ...


# --- CPU work ----------------------------------------------------------------------------------


class CpuRunner(Protocol):
    """Runs a CPU-bound function away from the event loop (a process pool locally, a child
    process per call on Lambda, which has no ``/dev/shm`` for a pool's semaphores).

    Raises ``WorkerTimeout`` past ``timeout_s``; a crashed worker process becomes a
    ``TransientError`` and the runner recovers.
    """

    async def run(self, fn: Callable[..., T], *args: Any, timeout_s: float) -> T: ...


# --- search ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SearchHit:
    document_id: str
    job_id: str
    source_name: str
    page_number: int
    snippet: str
    score: float


class SearchIndex(Protocol):
    def replace_document(self, document_id: str, job_id: str, source_name: str,
                         pages: Iterator[tuple[int, str]]) -> int:
        """Swap the document's pages for this job's, in one transaction; returns pages indexed."""
        ...

    def replace_documents(self, documents: Sequence[tuple[str, str, str,
                                                          Iterable[tuple[int, str]]]]
                          ) -> list[int]:
        """``replace_document`` for several (document, job, source name, pages) in one
        transaction; returns the pages indexed of each, in order."""
        ...

    def search(self, query: str, *, limit: int = 10) -> list[SearchHit]: ...
