"""The front door's plan: an upload slot's bytes have landed at their key; make them a job.

A slot is minted before any byte exists (``new_slot``: a UUIDv7 document id and job id, the
key ``uploads/<document>/<job>``), so the caller knows its result address at once. When the
bytes land (an S3 event on AWS, a PUT on ``doclake serve`` locally), ``plan_upload`` does what the
planner does for a local file, without opening it: the job and the document in one transaction,
the registration events (durable), one split message, the outbox flag. A redelivered upload
event finds the job and does nothing; a crash before the flag is repaired by the poller's pass of
``Planner.resend_unsent``. Each slot is its own document, so identical bytes uploaded twice are
two documents, each with its result at its own address (no deduplication across slots).

A slot takes one upload. Where the store can hold several versions of a key (the versioned
uploads bucket on AWS, whose presigned POST can be used again until it expires), the job is
created with the key pinned to the version that landed (``lake.layout.pinned_key``), by a
conditional write: the first upload event to create the job claims the slot, and every step
reads that version only. An event for another version of a claimed slot raises ``SlotTaken``;
its handler records ``refusal_event`` (a final ``slot_reused`` failure of the slot's job) and
deletes those bytes, and the claimed job goes on with its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from uuid6 import uuid7

from extract.messages import SPLIT_QUEUE, SplitMessage
from extract.ports import JobStore, NewVersion, Queue
from ingest.planner import registration_events
from lake.events import Event, FailureRecorded, utc_now
from lake.layout import pinned_key, result_key, upload_key

__all__ = ["REFUSED", "Slot", "new_slot", "slot_of_key", "Upload", "SlotTaken", "refusal_event", "claimed",
           "plan_upload"]

REFUSED = "slot_reused"
"""The failure ``error_type`` of an upload refused because its slot was claimed."""


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
    object_version: str | None = None
    """The stored version of the bytes (a versioned bucket): the one version the job reads."""

    @property
    def object_key(self) -> str:
        """The slot's key, pinned to ``object_version`` when there is one."""
        return pinned_key(self.slot.object_key, self.object_version)


class SlotTaken(Exception):
    """An upload to a slot whose job was claimed by another upload: refused, never read."""

    def __init__(self, upload: Upload, claimed_key: str):
        super().__init__(f"the slot {upload.slot.object_key} was used again: its job reads the "
                         f"first upload ({claimed_key}), this one ({upload.object_key}, "
                         f"{upload.bytes} bytes) is refused, never read")
        self.upload = upload
        self.claimed_key = claimed_key


def refusal_event(refused: SlotTaken, *, worker: str = "ingest") -> FailureRecorded:
    """The record of a refused upload: a final ``slot_reused`` failure at the ``ingest`` stage
    under the slot's job (which goes on), in the failures table beside the job's own. Its
    ``message_id`` is the refused version, so a redelivered event records it once."""
    upload = refused.upload
    return FailureRecorded(document_id=upload.slot.document_id, job_id=upload.slot.job_id,
                           worker=worker, stage="ingest", error_type=REFUSED, final=True,
                           message=str(refused),
                           message_id=upload.object_version or upload.fingerprint)


def _check_claim(claimed_key: str, upload: Upload) -> None:
    """``SlotTaken`` when the slot's job reads another upload than this one. A job whose key is
    not pinned (an unversioned bucket, or planned before keys were pinned) cannot tell its
    upload from a later one: it counts as this one, as it always did."""
    if claimed_key not in (upload.object_key, upload.slot.object_key):
        raise SlotTaken(upload, claimed_key)


def claimed(store: JobStore, upload: Upload) -> bool:
    """Whether the slot's job exists for this upload (``SlotTaken``: for another one)."""
    job = store.get_job(upload.slot.job_id)
    if job is None:
        return False
    _check_claim(job.object_key, upload)
    return True


def plan_upload(store: JobStore, queue: Queue, write_events: Callable[[list[Event]], object],
                upload: Upload, *, worker: str = "ingest", password: str | None = None,
                run_choices: str | None = None) -> bool:
    """Plan the job of an upload; False when it was planned before (a redelivered event);
    ``SlotTaken`` when the slot's job was claimed by another upload (nothing is written).
    ``password``, the document's own, is kept with the job before its split message is sent;
    ``run_choices`` (``extract.run_choices.record``) with the job as it is created."""
    slot = upload.slot
    if claimed(store, upload):
        return False
    version = NewVersion(
        document_id=slot.document_id, job_id=slot.job_id, source_name=upload.source_name,
        source_key=upload.source_key, sha256=upload.fingerprint, bytes=upload.bytes, version=1,
        object_key=upload.object_key, created_at=upload.created_at or utc_now(),
        run_choices=run_choices)
    try:
        store.create_job(version)  # conditional: one creation of a job id ever succeeds
    except Exception:
        if not claimed(store, upload):  # SlotTaken when another event claimed it first
            raise  # not a lost race: the store failed
        return False
    if password:
        store.set_job_password(slot.job_id, password)
    write_events(registration_events(version, worker))
    queue.send(SPLIT_QUEUE, SplitMessage(document_id=slot.document_id,
                                         job_id=slot.job_id).model_dump_json())
    store.mark_split_sent([slot.job_id])
    return True
