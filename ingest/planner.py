"""Ingest plans; it never parses the file.

Store the upload under its document id, then in one transaction create the job (queued) and
mark the document extracting, then send one message carrying ids only. The same source with new
bytes is a new version of the same document: a new job, hence a clean pages folder. Bytes seen
before (same sha256) whose last job did not fail are not processed again.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from uuid6 import uuid7

from extract.messages import SPLIT_QUEUE, SplitMessage
from extract.ports import JobStore, NewVersion, ObjectStore, Queue
from extract.state import JobStatus
from lake.events import DocumentRegistered, Event, JobCreated, utc_now
from lake.layout import upload_key

CHUNK = 1024 * 1024


class IngestOutcome(StrEnum):
    NEW = "new"
    NEW_VERSION = "new_version"
    UNCHANGED = "unchanged"


@dataclass(frozen=True)
class Ingested:
    outcome: IngestOutcome
    document_id: str
    job_id: str
    source_name: str


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


class Planner:
    """Turns a file into a planned job. ``write_events`` must be durable on return."""

    def __init__(self, store: JobStore, objects: ObjectStore, queue: Queue,
                 write_events, *, worker: str = "ingest"):
        self.store = store
        self.objects = objects
        self.queue = queue
        self.write_events = write_events
        self.worker = worker

    def ingest(self, path: Path) -> Ingested:
        path = Path(path)
        source_key = str(path.resolve())
        digest = sha256_of(path)
        seen = self.store.find_document_by_sha256(digest)
        if seen is not None and seen[1].status is not JobStatus.FAILED:
            document, job = seen
            return Ingested(IngestOutcome.UNCHANGED, document.document_id, job.job_id,
                            path.name)

        previous = self.store.find_document_by_source(source_key)
        if previous is None and seen is not None:
            previous = seen[0]  # the same bytes failed before: retry them as a new version
        document_id = previous.document_id if previous else str(uuid7())
        version = previous.version + 1 if previous else 1
        job_id = str(uuid7())
        object_key = upload_key(document_id, job_id)
        self.objects.put_file(object_key, path)

        now = utc_now()
        size = path.stat().st_size
        envelope = {"document_id": document_id, "job_id": job_id, "worker": self.worker,
                    "occurred_at": now}
        events: list[Event] = [
            DocumentRegistered(**envelope, source_name=path.name, source_key=source_key,
                               sha256=digest, bytes=size, version=version, object_key=object_key),
            JobCreated(**envelope),
        ]
        self.write_events(events)
        self.store.create_job(NewVersion(
            document_id=document_id, job_id=job_id, source_name=path.name,
            source_key=source_key, sha256=digest, bytes=size, version=version,
            object_key=object_key, created_at=now,
        ))
        self.queue.send(SPLIT_QUEUE,
                        SplitMessage(document_id=document_id, job_id=job_id).model_dump_json())
        outcome = IngestOutcome.NEW_VERSION if previous else IngestOutcome.NEW
        return Ingested(outcome, document_id, job_id, path.name)


def expand_paths(paths: list[Path]) -> list[Path]:
    """Files named, and every non-hidden file under folders named, in a stable order.

    Raises ``FileNotFoundError`` naming the first missing path before anything is ingested.
    """
    files: list[Path] = []
    for path in paths:
        if not path.exists():
            raise FileNotFoundError(f"no such file or folder: {path}")
        if path.is_dir():
            files += sorted(
                p for p in path.rglob("*")
                if p.is_file() and not any(part.startswith(".") for part in p.relative_to(path).parts)
            )
        else:
            files.append(path)
    return files
