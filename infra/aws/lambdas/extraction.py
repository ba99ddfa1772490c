"""The extraction function: one image for split, read, sheet, convert, index and fields; the
message's ``type`` decides, as locally (``extract.handling.handle_message``).

The records of one SQS batch run concurrently and share one ``InvocationCommitter``, so the
whole batch's events go to the lake in one flush. A record's outcome maps to SQS like this:

- ACK: the record succeeds and Lambda deletes it (partial batch response);
- RETRY: the message's visibility is set to ``retry_visibility_s(receive_count)`` (growing with
  each receive), the job notes when its work is due again (``schedule_retry``: the poller's
  no-progress clock waits for it) and the record is reported failed, so only it returns to the
  queue, later;
- the final delivery and terminal errors are ACKs that recorded the failure (``handle_message``);
  a worker that dies every time (out of memory) leaves the message to SQS's redrive, and the
  poller fails its job from the DLQ.

Lambda's clock is part of the design: every record's deadline is the invocation's remaining
time (``context.get_remaining_time_in_millis``) less ``FINISH_MARGIN_S`` for the flush and the
visibility changes. A record still running then is cancelled (its model calls in flight get their
ledger rows, its CPU child is killed) and retried like any other RETRY, so an invocation ends by
itself and is never killed by its own timeout. Nothing sleeps here for a model's backoff: the
stack sets ``DOCLAKE_MODEL_MAX_ATTEMPTS=1``, so a page the models cannot read now goes back to
its queue with the growing delay, and the retry budget is the queue's
(``test_aws_lambda_template``).
"""

from __future__ import annotations

import asyncio
import json
import time
from contextlib import nullcontext
from datetime import timedelta

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import (
    AsyncBatchProcessor,
    EventType,
    async_process_partial_response,
)
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from extract.handling import Outcome, handle_message
from extract.ports import ReceivedMessage
from extract.scheduling import port_queue
from infra.aws.runtime import shared
from infra.aws.sink import InvocationCommitter
from infra.aws.sqs import retry_visibility_s
from infra.aws.tmp_budget import OneDocumentAtATime
from lake.events import utc_now

__all__ = ["logger", "metrics", "processor", "SOURCE_QUEUES", "FINISH_MARGIN_S", "RetryLater",
           "received_of", "record_deadline", "handle_batch", "handler"]

logger = Logger(service="doclake-extraction")
metrics = Metrics(namespace="doclake", service="extraction")
processor = AsyncBatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)
SOURCE_QUEUES = frozenset({"split", "read", "sheet", "convert"})
"""The queues whose steps download a document's source into /tmp."""
FINISH_MARGIN_S = 15.0
"""Kept from the invocation's remaining time for the batch's flush and visibility changes."""


class RetryLater(Exception):
    """The record failed transiently; its message comes back after its grown visibility."""


def received_of(record: SQSRecord, queue: str) -> ReceivedMessage:
    return ReceivedMessage(queue=queue, message_id=record.message_id, body=record.body,
                           receipt=record.receipt_handle,
                           receive_count=int(record.attributes.approximate_receive_count or 1))


def record_deadline(context) -> float:
    """The monotonic time by which every record of this invocation must be over."""
    remaining_s = context.get_remaining_time_in_millis() / 1000
    return time.monotonic() + max(0.0, remaining_s - FINISH_MARGIN_S)


def _field(body: str, name: str) -> str | None:
    try:
        value = json.loads(body).get(name)
    except (ValueError, AttributeError):
        return None
    return value if isinstance(value, str) else None


def _job_id(body: str) -> str | None:
    return _field(body, "job_id")


def _document_id(body: str) -> str | None:
    return _field(body, "document_id")


def handle_batch(event: dict, context, *, worker: str) -> dict:
    """Run one SQS batch through the handlers; the partial batch response."""
    runtime = shared()
    committer = InvocationCommitter(runtime.writer)
    ctx = runtime.context(committer, worker)
    deadline = record_deadline(context)

    async def retry_later(received: ReceivedMessage) -> None:
        delay = retry_visibility_s(received.receive_count)
        await asyncio.to_thread(runtime.queue.change_visibility, received, delay)
        job_id = _job_id(received.body)
        if job_id:
            await asyncio.to_thread(runtime.store.schedule_retry, job_id,
                                    utc_now() + timedelta(seconds=delay))
        metrics.add_metric(name="Retries", unit=MetricUnit.Count, value=1)
        raise RetryLater(f"{received.message_id}: retry in {delay} s")

    gate = OneDocumentAtATime(runtime.downloads.drop_idle)

    async def record_handler(record: SQSRecord) -> str:
        received = received_of(record, runtime.queue_name(record.event_source_arn))
        # Steps that hold a source in /tmp take one document at a time (``tmp_budget``).
        document = (_document_id(received.body) if port_queue(received.queue) in SOURCE_QUEUES
                    else None)
        try:
            async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                async with (gate.document(document) if document else nullcontext()), \
                        committer.record():
                    outcome = await handle_message(ctx, received)
        except TimeoutError:
            metrics.add_metric(name="DeadlineRetries", unit=MetricUnit.Count, value=1)
            outcome = Outcome.RETRY
        if outcome is Outcome.RETRY:
            await retry_later(received)
        metrics.add_metric(name="Messages", unit=MetricUnit.Count, value=1)
        return outcome.value

    with runtime.downloads.invocation():  # the batch's units share one copy of a source
        response = async_process_partial_response(event=event, record_handler=record_handler,
                                                  processor=processor, context=context)
    logger.info("batch done", extra={"records": len(event.get("Records", [])),
                                     "failed": len(response["batchItemFailures"]),
                                     "flushes": committer.flushes})
    return response


@metrics.log_metrics
@logger.inject_lambda_context
def handler(event, context):
    return handle_batch(event, context, worker=f"aws:{context.function_name}")
