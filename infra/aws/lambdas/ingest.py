"""The ingest queue's consumer: an S3 "Object Created" event (routed by an EventBridge rule)
becomes a planned job, as the local planner plans a file, without opening it.

The key names the slot (``uploads/<document>/<job>``); a HeadObject of the event's version gives
the caller's file name (the ``source-name`` metadata the presigned upload required) and size;
the ETag stands in for the content hash (no byte is read here). A redelivered event finds the
job planned and is acknowledged.

The uploads bucket is versioned and the event names the version that landed: the first event
to create the slot's job claims the slot with that version (``ingest.uploads.plan_upload``),
and every step reads that version only. A presigned POST can be used again until it expires;
the event of such a second upload finds the slot claimed by another version: the refusal is
recorded (a final ``slot_reused`` failure under the slot's job, in the lake's failures table)
and that version is deleted, so the key holds the claimed bytes again and the job goes on.

Failures are reported per record (partial batch response): one bad event never sends its
batch-mates back to the queue. With ``DOCLAKE_FIELDS_SCHEMA`` set, the job also asks for
fields (``request_fields``): the poller sends its fields message once its text is final, and the
publisher publishes the fields result at the document's address.
"""

from __future__ import annotations

import json

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from extract import run_choices
from infra.aws.errors import is_not_found, mapped
from infra.aws.runtime import shared
from ingest.uploads import SlotTaken, Upload, claimed, plan_upload, refusal_event, slot_of_key

__all__ = ["logger", "processor", "version_of", "upload_of_event", "refuse", "record_handler", "handler"]

logger = Logger(service="doclake-ingest")
processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)


def version_of(detail: dict) -> str | None:
    """The version an event's object landed as; None on an unversioned bucket (``"null"``)."""
    version = detail["object"].get("version-id")
    return str(version) if version and version != "null" else None


def upload_of_event(detail: dict, head: dict) -> Upload | None:
    """The upload an S3 Object Created event describes; None for a key outside the slots."""
    key = detail["object"]["key"]
    slot = slot_of_key(key)
    if slot is None:
        return None
    bucket = detail["bucket"]["name"]
    metadata = head.get("Metadata", {})
    etag = str(detail["object"].get("etag") or head.get("ETag", "")).strip('"')
    return Upload(slot=slot, source_name=metadata.get("source-name") or slot.job_id,
                  source_key=f"s3://{bucket}/{key}", fingerprint=f"etag:{etag}",
                  bytes=int(detail["object"].get("size") or head.get("ContentLength", 0)),
                  object_version=version_of(detail))


def _head(runtime, detail: dict) -> dict:
    """The event's version's metadata; empty when that version is gone (a refused upload
    deleted before this redelivery: the claim check below needs no metadata)."""
    version = version_of(detail)
    try:
        return runtime.s3.head_object(Bucket=detail["bucket"]["name"],
                                      Key=detail["object"]["key"],
                                      **({"VersionId": version} if version else {}))
    except Exception as error:
        if version and is_not_found(error):
            return {}
        raise


def refuse(runtime, detail: dict, taken: SlotTaken) -> None:
    """Record the refused upload (durable first: a retry records the same event id), then
    delete its version: never read, and the key's latest version is the claimed one again."""
    runtime.writer.write([refusal_event(taken, worker="aws:ingest")])
    version = taken.upload.object_version
    if version:
        with mapped(f"s3 delete refused upload {detail['object']['key']}"):
            runtime.s3.delete_object(Bucket=detail["bucket"]["name"],
                                     Key=detail["object"]["key"], VersionId=version)
    logger.warning("a second upload to a claimed slot; refused and deleted",
                   extra={"document_id": taken.upload.slot.document_id,
                          "job_id": taken.upload.slot.job_id, "refused_version": version,
                          "claimed": taken.claimed_key, "bytes": taken.upload.bytes})


def record_handler(record: SQSRecord) -> bool:
    runtime = shared()
    event = json.loads(record.body)
    detail = event.get("detail", {})
    if event.get("detail-type") != "Object Created" or "object" not in detail:
        logger.warning("not an S3 Object Created event; dropped", extra={"body": record.body[:500]})
        return False
    head = _head(runtime, detail) if slot_of_key(detail["object"]["key"]) else {}
    upload = upload_of_event(detail, head)
    if upload is None:
        logger.warning("an object outside uploads/<doc>/<job>; ignored",
                       extra={"key": detail["object"]["key"]})
        return False
    try:
        if not head and not claimed(runtime.store, upload):
            logger.warning("the upload's version is gone and its slot unclaimed; nothing to plan",
                           extra={"key": detail["object"]["key"]})
            return False
        planned = plan_upload(runtime.store, runtime.queue, runtime.writer.write, upload,
                              worker="aws:ingest",
                              run_choices=run_choices.record(runtime.pipeline.extract_config()))
    except SlotTaken as taken:
        refuse(runtime, detail, taken)
        return False
    schema = runtime.settings.fields_schema
    if schema:  # also when planned before: a crash may have come between the two writes
        runtime.store.request_fields([upload.slot.job_id], schema,
                                     runtime.settings.fields_strategy)
    logger.info("upload planned" if planned else "upload planned before",
                extra={"document_id": upload.slot.document_id, "job_id": upload.slot.job_id})
    return planned


@logger.inject_lambda_context
def handler(event, context):
    return process_partial_response(event=event, record_handler=record_handler,
                                    processor=processor, context=context)
