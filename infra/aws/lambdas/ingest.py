"""The ingest queue's consumer: an S3 "Object Created" event (routed by an EventBridge rule)
becomes a planned job, as the local planner plans a file, without opening it.

The key names the slot (``uploads/<document>/<job>``); a HeadObject gives the caller's file name
(the ``source-name`` metadata the presigned upload required) and size; the ETag stands in for
the content hash (no byte is read here). A redelivered event finds the job planned and is
acknowledged. Failures are reported per record (partial batch response): one bad event never
sends its batch-mates back to the queue. With ``DOCLAKE_FIELDS_SCHEMA`` set, the job also asks for
fields (``request_fields``): the poller sends its fields message once its text is final, and the
publisher publishes the fields result at the document's address.
"""

from __future__ import annotations

import json

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from extract import run_choices
from infra.aws.runtime import shared
from ingest.uploads import Upload, plan_upload, slot_of_key

logger = Logger(service="doclake-ingest")
processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)


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
                  bytes=int(detail["object"].get("size") or head.get("ContentLength", 0)))


def record_handler(record: SQSRecord) -> bool:
    runtime = shared()
    event = json.loads(record.body)
    detail = event.get("detail", {})
    if event.get("detail-type") != "Object Created" or "object" not in detail:
        logger.warning("not an S3 Object Created event; dropped", extra={"body": record.body[:500]})
        return False
    head = runtime.s3.head_object(Bucket=detail["bucket"]["name"], Key=detail["object"]["key"])
    upload = upload_of_event(detail, head)
    if upload is None:
        logger.warning("an object outside uploads/<doc>/<job>; ignored",
                       extra={"key": detail["object"]["key"]})
        return False
    planned = plan_upload(runtime.store, runtime.queue, runtime.writer.write, upload,
                          worker="aws:ingest",
                          run_choices=run_choices.record(runtime.pipeline.extract_config()))
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
