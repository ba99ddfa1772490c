"""The front door's plan: an upload slot's bytes have landed at their key; make them a job.

A slot is minted before any byte exists (``new_slot``: a UUIDv7 document id and job id, the
key ``uploads/<document>/<job>``), so the caller knows its result address at once. When the
bytes land (an S3 event on AWS, a PUT on ``doclake serve`` locally), ``plan_upload`` does what the
planner does for a local file, without opening it: the job and the document in one transaction,
the registration events (durable), one split message, the outbox flag. A redelivered upload
event finds the job and does nothing; a crash before the flag is repaired by the poller's pass of
``Planner.resend_unsent``. Each slot is its own document, so identical bytes uploaded twice are
two documents, each with its result at its own address (no deduplication across slots).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from uuid6 import uuid7

from extract.messages import SPLIT_QUEUE, SplitMessage
from extract.ports import JobStore, NewVersion, Queue
from ingest.planner import registration_events
from lake.events import Event, utc_now
from lake.layout import result_key, upload_key


@dataclass(frozen=True)
class Slot:
    document_id: str
    job_id: str

    @property
    def object_key(self) -> str:
        return upload_key(self.document_id, self.job_id)

    @property
    def result_key(self) -> str:
        return result_key(self.document_id)


def new_slot() -> Slot:
    return Slot(str(uuid7()), str(uuid7()))


def slot_of_key(key: str) -> Slot | None:
    """The slot an upload key belongs to, or None for a key outside ``uploads/<doc>/<job>``."""
    parts = key.split("/")
    if len(parts) != 3 or parts[0] != "uploads" or not parts[1] or not parts[2]:
        return None
    return Slot(parts[1], parts[2])


@dataclass(frozen=True)
class Upload:
    slot: Slot
    source_name: str
    source_key: str
    """Where the bytes came from, for the documents table (``s3://bucket/key``, a URL path)."""
    fingerprint: str
    """A content hash known without reading the file (S3's ETag, or a sha256 the server saw)."""
    bytes: int
    created_at: datetime | None = None


def plan_upload(store: JobStore, queue: Queue, write_events: Callable[[list[Event]], object],
                upload: Upload, *, worker: str = "ingest", password: str | None = None,
                run_choices: str | None = None) -> bool:
    """Plan the job of an upload; False when it was planned before (a redelivered event).
    ``password``, the document's own, is kept with the job before its split message is sent;
    ``run_choices`` (``extract.run_choices.record``) with the job as it is created."""
    slot = upload.slot
    if store.get_job(slot.job_id) is not None:
        return False
    version = NewVersion(
        document_id=slot.document_id, job_id=slot.job_id, source_name=upload.source_name,
        source_key=upload.source_key, sha256=upload.fingerprint, bytes=upload.bytes, version=1,
        object_key=slot.object_key, created_at=upload.created_at or utc_now(),
        run_choices=run_choices)
    store.create_job(version)
    if password:
        store.set_job_password(slot.job_id, password)
    write_events(registration_events(version, worker))
    queue.send(SPLIT_QUEUE, SplitMessage(document_id=slot.document_id,
                                         job_id=slot.job_id).model_dump_json())
    store.mark_split_sent([slot.job_id])
    return True
