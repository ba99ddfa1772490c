"""The extraction function: one image for split, read, sheet, convert, index and fields; the
message's ``type`` decides, as locally (``extract.handling.handle_message``).

The records of one SQS batch run concurrently and share one ``InvocationCommitter``, so the
whole batch's events go to the lake in one flush. A record's outcome maps to SQS like this:

- ACK: the record succeeds and Lambda deletes it (partial batch response);
- RETRY: the message's visibility is set to ``retry_visibility_s(receive_count)`` (growing with
  each receive) and the record is reported failed, so only it returns to the queue, later;
- the final delivery and terminal errors are ACKs that recorded the failure (``handle_message``);
  a worker that dies every time (timeout, out of memory) leaves the message to SQS's redrive,
  and the poller fails its job from the DLQ.
"""

from __future__ import annotations

import asyncio

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
from infra.aws.runtime import shared
from infra.aws.sink import InvocationCommitter
from infra.aws.sqs import retry_visibility_s

logger = Logger(service="doclake-extraction")
metrics = Metrics(namespace="doclake", service="extraction")
processor = AsyncBatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)


class RetryLater(Exception):
    """The record failed transiently; its message comes back after its grown visibility."""


def received_of(record: SQSRecord, queue: str) -> ReceivedMessage:
    return ReceivedMessage(queue=queue, message_id=record.message_id, body=record.body,
                           receipt=record.receipt_handle,
                           receive_count=int(record.attributes.approximate_receive_count or 1))


def handle_batch(event: dict, context, *, worker: str) -> dict:
    """Run one SQS batch through the handlers; the partial batch response."""
    runtime = shared()
    committer = InvocationCommitter(runtime.writer)
    ctx = runtime.context(committer, worker)

    async def record_handler(record: SQSRecord) -> str:
        received = received_of(record, runtime.queue_name(record.event_source_arn))
        async with committer.record():
            outcome = await handle_message(ctx, received)
        if outcome is Outcome.RETRY:
            delay = retry_visibility_s(received.receive_count)
            await asyncio.to_thread(runtime.queue.change_visibility, received, delay)
            metrics.add_metric(name="Retries", unit=MetricUnit.Count, value=1)
            raise RetryLater(f"{received.message_id}: retry in {delay} s")
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
