"""Ingest plans; it never parses the file.

Store the upload under its document id, then in one transaction create the job (queued) and
mark the document extracting, then send one message carrying ids only. The same source with new
bytes is a new version of the same document: a new job, hence a clean pages folder. Bytes seen
before (same sha256) are not processed again: not when their last job succeeded, nor when it
failed for a reason the same bytes would fail for again (``FINAL_REASONS``). Those are taken again
only when asked (``retry_failed``), as a new job over the copy already stored, not a second copy.
"""

from __future__ import annotations

import errno
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from uuid6 import uuid7

from extract.messages import SPLIT_QUEUE, SplitMessage
from extract.ports import JobStore, NewVersion, ObjectStore, Queue
from extract.scheduling import SMALL_DOCUMENT_PAGES, guess_pages
from extract.state import Document, Job, JobStatus
from ingest.fingerprint import Fingerprint, ThreadedUploads, UploadWork
from ingest.passwords import load_passwords, passwords_for  # noqa: F401 - their old home
from ingest.walk import (  # noqa: F401 - their old home; the walk is ingest.walk now
    MAX_DEPTH,
    SKIP_CHANGED,
    SKIP_DEEP,
    SKIP_LINK,
    SKIP_SPECIAL,
    Walk,
    expand_paths,
    expand_sources,
    walk_sources,
)
from lake.events import DocumentRegistered, Event, JobCreated, utc_now
from lake.layout import upload_key

__all__ = ["log", "FINAL_REASONS", "worth_retrying", "IngestOutcome", "Ingested", "registration_events",
           "Planner"]

log = logging.getLogger(__name__)

# Failure reasons the same bytes would meet again with the same build and settings. Any other
# reason (a timeout, a dead letter, a crash, no progress) may not recur, so it is retried.
FINAL_REASONS = frozenset({
    # what the bytes are: the same bytes are the same thing next time
    "unsupported_format", "unknown_format", "empty_file", "no_pages", "no_content", "corrupt",
    "encrypted",  # a password given later: --retry-failed
    # a size limit the same settings hit again (raise the setting, then --retry-failed)
    "limit_exceeded", "file_too_large", "too_many_pages", "page_too_large", "too_many_cells",
    "too_many_frames",
    "sheet_too_long", "converted_too_large", "too_large",
    "too_deep",  # nested deeper than the reader's recursion limit: the same next time
    "links_outside",  # the document links to content outside itself: refused, not converted
    "ambiguous_format",  # a package of two formats: refused, not guessed
    # the parser killed its worker on every delivery of these bytes (a native crash)
    "crashes_parser",
})
"""Reasons that are not: a missing reader or converter (now installed?), a timeout or a memory
limit (load-dependent), a model or a dead letter (transient by nature)."""


def worth_retrying(failure_reason: str | None) -> bool:
    """Whether a failed job's bytes are taken again without ``--retry-failed``."""
    return failure_reason not in FINAL_REASONS


class IngestOutcome(StrEnum):
    NEW = "new"
    NEW_VERSION = "new_version"
    RETRY = "retry"
    """Identical bytes whose last job failed, taken again: a new job on the same version."""
    UNCHANGED = "unchanged"
    """Identical bytes whose job had already ended (succeeded, or failed and not taken again)."""
    RESUMED = "resumed"
    """Identical bytes whose job an earlier run started and did not finish: this run finishes it."""
    DUPLICATE = "duplicate"
    """The same bytes as another file of the same run, under another name: that job serves both."""


@dataclass(frozen=True)
class Ingested:
    outcome: IngestOutcome
    document_id: str
    job_id: str
    source_name: str

    def _replace_name(self, source_name: str) -> Ingested:
        """The same bytes under another name in one run: that job serves both."""
        return Ingested(IngestOutcome.DUPLICATE, self.document_id, self.job_id, source_name)


def registration_events(version: NewVersion, worker: str) -> list[Event]:
    """The events that record a planned job, stamped with the job's creation time.

    Recovery rebuilds them from the job store after a crash between the database write and the
    event flush; being the same logical events at the same time, they carry the same ids.
    """
    envelope = {"document_id": version.document_id, "job_id": version.job_id,
                "worker": worker, "occurred_at": version.created_at}
    return [
        DocumentRegistered(**envelope, source_name=version.source_name,
                           source_key=version.source_key, sha256=version.sha256,
                           bytes=version.bytes, version=version.version,
                           object_key=version.object_key, source_path=version.source_path),
        JobCreated(**envelope),
    ]


class Planner:
    """Turns files into planned jobs. ``write_events`` must be durable on return.

    Files are planned in batches: uploads stored, then each job created in its own transaction,
    then one event flush for the batch, then the split messages. A crash anywhere in between
    is repaired by the runtime's recovery: jobs not marked sent get their events (same ids) and
    their split message again.
    """

    def __init__(self, store: JobStore, objects: ObjectStore, queue: Queue,
                 write_events: Callable[[list[Event]], object], *, worker: str = "ingest",
                 batch_size: int = 100, max_bytes: int | None = None,
                 run_choices: str | None = None, fields: tuple[str, str] | None = None,
                 uploads: UploadWork | None = None):
        """``max_bytes`` (the ``max_file_bytes`` setting): a longer file is hashed and stored only
        to ``max_bytes + 1`` bytes, so a sparse terabyte neither fills the disk nor takes hours,
        and its split fails it ``file_too_large`` and removes the stored part.
        ``run_choices`` (``extract.run_choices.record``) and ``fields`` (schema, strategy)
        are the run's choices: kept with every job it creates, before the job's split message is
        sent, so whoever handles the job later (a resumed worker, a Lambda) uses them.
        ``uploads`` is where each batch's files are hashed and the new ones stored (the local
        runtime: a worker process); by default, threads of this process."""
        self.store = store
        self.run_choices = run_choices
        self.fields = fields
        self.objects = objects
        self.queue = queue
        self.write_events = write_events
        self.worker = worker
        self.batch_size = batch_size
        self.max_bytes = max_bytes
        self.uploads = uploads or ThreadedUploads()
        self.skipped: list[tuple[Path, str]] = []  # files that could not be opened as planned

    def close(self) -> None:
        """Let the hashing threads go (they also go when the planner is collected)."""
        self.uploads.close()

    def ingest(self, path: Path) -> Ingested:
        return self.ingest_many([path])[0]

    def ingest_many(self, paths: Sequence[Path], *, retry_failed: bool = False,
                    passwords: Mapping[Path, str] | None = None,
                    source_paths: Mapping[Path, str] | None = None,
                    this_run: dict[str, Ingested] | None = None) -> list[Ingested]:
        """Plan every file; ``retry_failed`` also takes again bytes whose last job failed for
        good (``FINAL_REASONS``), e.g. after a reader for their format was installed.
        ``passwords`` (keyed by the paths as given) are kept with each new job in the store, before
        its split message is sent, and erased there when the job ends (``JobStore``).
        ``source_paths`` (keyed the same way, from ``expand_sources``) are each file's path
        relative to the folder it was found in; a file not in it is known by its name.
        ``this_run`` (sha256 -> the job created for those bytes) is what the run planned so far,
        kept by a caller that plans one run in several calls: the same bytes met again in a later
        batch are a duplicate of this run's job, not "resumed" (an earlier run's) nor
        "unchanged". By default one call is one run."""
        this_run = {} if this_run is None else this_run
        results: list[Ingested] = []
        # Keyed by Path once here, and each batch given only its own entries: normalising the
        # whole run's mapping for every 16-file batch was quadratic (9% of the main process's
        # CPU on 2,032 files).
        passwords = {Path(p): secret for p, secret in (passwords or {}).items()}
        source_paths = {Path(p): name for p, name in (source_paths or {}).items()}
        for start in range(0, len(paths), self.batch_size):
            batch = [Path(p) for p in paths[start:start + self.batch_size]]
            results += self._ingest_batch(
                batch, retry_failed, {p: passwords[p] for p in batch if p in passwords},
                {p: source_paths[p] for p in batch if p in source_paths}, this_run)
        return results

    def _ingest_batch(self, paths: Sequence[Path], retry_failed: bool,
                      passwords: Mapping[Path, str], source_paths: Mapping[Path, str],
                      this_run: dict[str, Ingested]) -> list[Ingested]:
        """Hash the batch's files, decide each, store the new uploads, then create their jobs.

        Hashing and storing are ``self.uploads``' (one call each for the batch). The uploads
        are stored together (``ObjectStore.put_files``: locally one fsync per folder, not a
        copy's three). Every upload of the batch is durable before any of its jobs exists.
        """
        paths = [Path(p) for p in paths]
        passwords = {Path(p): secret for p, secret in (passwords or {}).items()}
        relative = {Path(p): name for p, name in (source_paths or {}).items()}
        cwd = Path.cwd()  # the uploads' work may run in a process whose working folder differs
        absolute = {p: _without_links(cwd / p, relative.get(p)) for p in paths}
        found = self.uploads.fingerprints([absolute[p] for p in paths], self.max_bytes)
        kept = [(p, f) for p, f in zip(paths, found, strict=True) if self._usable(p, f)]
        paths, prints = [p for p, _ in kept], [f for _, f in kept]
        digests = [f.sha256 for f in prints]
        fingerprints = dict(zip(paths, prints, strict=True))
        results: list[Ingested] = []
        planned: list[NewVersion] = []
        uploads: list[tuple[str, Path]] = []
        claimed: dict[str, Ingested] = {}  # sha256 -> the job planned in this batch
        secrets: dict[str, str] = {}  # job id -> the document's own password
        for path, digest in zip(paths, digests, strict=True):
            earlier = claimed.get(digest) or this_run.get(digest)
            if earlier is not None:  # planned by this run, in this batch or an earlier one
                results.append(earlier._replace_name(path.name))
                continue
            seen = self.store.find_document_by_sha256(digest)
            if seen is not None and not self._take_again(seen[1], retry_failed):
                document, job = seen
                outcome = IngestOutcome.UNCHANGED if job.status.terminal else IngestOutcome.RESUMED
                results.append(Ingested(outcome, document.document_id, job.job_id, path.name))
                continue
            stored = self._stored_copy(seen[1]) if seen else None
            version = self._plan(path, fingerprints[path], seen[0] if seen else None, stored,
                                 relative.get(path, path.name))
            if stored is None:
                uploads.append((version.object_key, path))
            planned.append(version)
            if path in passwords:
                secrets[version.job_id] = passwords[path]
            if (seen is not None and version.document_id == seen[0].document_id
                    and version.version == seen[0].version):
                outcome = IngestOutcome.RETRY
            elif version.version > 1:
                outcome = IngestOutcome.NEW_VERSION
            else:
                outcome = IngestOutcome.NEW
            result = Ingested(outcome, version.document_id, version.job_id, path.name)
            claimed[digest] = result
            results.append(result)
        if uploads:
            changed = set(self.uploads.store(
                self.objects, [(key, absolute[path]) for key, path in uploads], self.max_bytes,
                {key: fingerprints[path].sha256 for key, path in uploads}))
            if changed:  # changed between its hash and its copy: not planned, said why
                for key, path in uploads:
                    if key in changed:
                        log.warning("skipped %s: %s", path, SKIP_CHANGED)
                        self.skipped.append((path, SKIP_CHANGED))
                gone = {v.job_id for v in planned if v.object_key in changed}
                planned = [v for v in planned if v.job_id not in gone]
                results = [r for r in results if r.job_id not in gone]
        for version in planned:
            self.store.create_job(version)
            if version.job_id in secrets:
                self.store.set_job_password(version.job_id, secrets[version.job_id])
        if self.fields is not None and planned:
            self.store.request_fields([v.job_id for v in planned], *self.fields)
        self._publish(planned)
        created = {v.job_id for v in planned}
        this_run.update((d, r) for d, r in claimed.items() if r.job_id in created)
        return results

    def _usable(self, path: Path, found: Fingerprint | OSError) -> bool:
        """True for a fingerprint; False (and the file skipped, said why) when the file is no
        longer a regular file one can open without following a link (swapped for a link or a
        FIFO since the walk). A file gone or unreadable raises, as before: the caller says
        which."""
        if not isinstance(found, OSError):
            return True
        if found.errno not in (errno.ELOOP, errno.EINVAL):
            raise found
        reason = "a symbolic link" if found.errno == errno.ELOOP else "not a regular file"
        log.warning("skipped %s: %s", path, reason)
        self.skipped.append((path, reason))
        return False

    def _publish(self, planned: Sequence[NewVersion]) -> None:
        """Events first (durable), then the split messages, then the outbox flag."""
        if not planned:
            return
        self.write_events([e for v in planned for e in registration_events(v, self.worker)])
        bodies = [SplitMessage(document_id=v.document_id, job_id=v.job_id).model_dump_json()
                  for v in planned]
        # Pages guessed from each file's size (``extract.scheduling``): small files split first,
        # a large one at most ``SMALL_DOCUMENT_PAGES`` pages' price later (its split is what
        # finds its real work: a book or a scan planned last would end the run late).
        self.queue.send_batch(SPLIT_QUEUE, bodies, pages=[
            min(guess_pages(v.bytes), SMALL_DOCUMENT_PAGES) for v in planned])
        self.store.mark_split_sent([v.job_id for v in planned])

    def resend_unsent(self) -> int:
        """After a crash in ingest: publish again the jobs created but never marked sent.

        Their events are rebuilt from the store with the job's creation time, hence the same
        event ids; a split message that did get out is simply handled twice (a no-op)."""
        unsent = []
        for job in self.store.unsent_jobs():
            document = self.store.get_document(job.document_id)
            if document is None or document.latest_job_id != job.job_id:
                continue  # superseded by a newer version: the poller's timeout fails it
            unsent.append(NewVersion(
                document_id=job.document_id, job_id=job.job_id, source_name=job.source_name,
                source_key=document.source_key, sha256=document.sha256, bytes=document.bytes,
                version=document.version, object_key=job.object_key, created_at=job.created_at,
                source_path=job.source_path, run_choices=job.run_choices))
        self._publish(unsent)
        return len(unsent)

    @staticmethod
    def _take_again(job: Job, retry_failed: bool) -> bool:
        """Identical bytes: only a failed job is taken again, when asked or when worth it."""
        if job.status is not JobStatus.FAILED:
            return False
        return retry_failed or worth_retrying(job.failure_reason)

    def _stored_copy(self, job: Job) -> str | None:
        """The upload key of identical bytes already stored, if it is still there."""
        return job.object_key if self.objects.head(job.object_key) is not None else None

    def _plan(self, path: Path, found: Fingerprint, failed_before: Document | None,
              stored_key: str | None = None, source_path: str | None = None) -> NewVersion:
        digest, source_key = found.sha256, found.source_key
        previous = self.store.find_document_by_source(source_key) or failed_before
        document_id = previous.document_id if previous else str(uuid7())
        job_id = str(uuid7())
        return NewVersion(
            document_id=document_id, job_id=job_id, source_name=path.name,
            source_key=source_key, sha256=digest, bytes=found.bytes,
            # Identical bytes taken again (a retry of a failed job): the same version, a new job.
            version=(previous.version if previous and previous.sha256 == digest
                     else previous.version + 1 if previous else 1),
            object_key=stored_key or upload_key(document_id, job_id), created_at=utc_now(),
            source_path=source_path or path.name, run_choices=self.run_choices,
        )


def _without_links(path: Path, source_path: str | None) -> Path:
    """``path`` as the files are opened (``lake.files.open_regular`` refuses a link anywhere on
    it): the part the user named (the folder walked, or the folder of a file named) by its real
    path, links in it followed; the part found in the room (``source_path``) as it is, so a
    link there is refused, never followed."""
    parts = Path(source_path).parts if source_path else ()
    if not parts or path.parts[-len(parts):] != parts:
        parts = (path.name,)
    named = Path(*path.parts[:-len(parts)]) if len(parts) < len(path.parts) else Path("/")
    return Path(os.path.realpath(named), *parts)
