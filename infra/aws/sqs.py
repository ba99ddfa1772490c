"""Queues on SQS: the port's names mapped to queue URLs, batches of ten, redrive by SQS itself.

SQS keeps the visibility timeout, the receive count and the redrive to ``<queue>-dlq`` (a
``RedrivePolicy`` with ``maxReceiveCount`` = ``max_receives``), exactly the semantics the local
SQLite queue imitates. The queues themselves are the CDK app's (``tests/support/awsmoto.py``
makes them the same way on moto).

Two SQS facts the adapter absorbs: visibility timeouts are whole seconds (rounded up, so a
message is never shown earlier than asked), and a stale receipt handle. SQS may honour a delete
with an older receipt (moto does; AWS documents it as "may not be deleted"), which would
acknowledge a message another worker is now handling. The adapter remembers the newest receipt
of each message it received and ignores a delete or visibility change with an older one, as
the port asks; across processes (two Lambda containers) SQS decides, and the worst case is a
redelivered message acknowledged early, whose job the poller's no-progress rule then fails.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Mapping, Sequence

from extract.messages import dead_letter_queue
from extract.ports import QueueDepth, ReceivedMessage
from extract.scheduling import small_queue
from infra.aws.errors import error_code, mapped
from infra.aws.routing import routed_queues

__all__ = ["BATCH", "RECEIPTS_KEPT", "MAX_VISIBILITY_S", "STALE_RECEIPT_CODES", "visibility_seconds",
           "retry_visibility_s", "SqsQueue"]

BATCH = 10  # SQS's limit for SendMessageBatch and ReceiveMessage
RECEIPTS_KEPT = 10_000
MAX_VISIBILITY_S = 43_200  # 12 hours, SQS's ceiling
STALE_RECEIPT_CODES = frozenset({"ReceiptHandleIsInvalid", "InvalidParameterValue",
                                 "AWS.SimpleQueueService.NonExistentQueue", "MessageNotInflight"})


def visibility_seconds(timeout_s: float) -> int:
    """SQS counts whole seconds: round up, within 0..12 h."""
    return max(0, min(MAX_VISIBILITY_S, math.ceil(timeout_s)))


def retry_visibility_s(receive_count: int, *, base_s: float = 120.0,
                       ceiling_s: float = 900.0) -> int:
    """How long a failed message stays hidden before its next try: growing with each receive
    (2 min, 6 min, 15 min, 15 min...: 38 minutes over the default five deliveries), so a queue's
    retries outlast a 30-minute brownout instead of spending every delivery in its first minute.
    On Lambda this is the whole retry budget of a page (no function sleeps through a backoff).
    Pure, shared with the template test."""
    return visibility_seconds(min(ceiling_s, base_s * 3 ** max(0, receive_count - 1)))


class SqsQueue:
    """``urls`` maps each port queue name (``split``, ``split-dlq``...) to its SQS URL."""

    def __init__(self, client, urls: Mapping[str, str], *, max_receives: int = 5):
        self.client = client
        self.urls = dict(urls)
        self.max_receives = max_receives
        self._receipts: OrderedDict[str, str] = OrderedDict()  # message id -> newest receipt

    def _remember(self, message: ReceivedMessage) -> None:
        self._receipts[message.message_id] = message.receipt
        self._receipts.move_to_end(message.message_id)
        while len(self._receipts) > RECEIPTS_KEPT:
            self._receipts.popitem(last=False)

    def _stale(self, message: ReceivedMessage) -> bool:
        return self._receipts.get(message.message_id, message.receipt) != message.receipt

    def _url(self, queue: str) -> str:
        try:
            return self.urls[queue]
        except KeyError:
            raise KeyError(f"no SQS queue configured for {queue!r}") from None

    def send(self, queue: str, body: str, *, group: str | None = None,
             pages: int | Sequence[int] | None = None, arrived_at: float | None = None) -> str:
        return self.send_batch(queue, [body], group=group, pages=pages)[0]

    def send_batch(self, queue: str, bodies: Sequence[str], *, group: str | None = None,
                   pages: int | Sequence[int] | None = None,
                   arrived_at: float | None = None) -> list[str]:
        """Up to ten per call; entries SQS refused are sent again once, then raised as transient.
        ``group`` is ignored: standard queues have no groups (fairness comes from concurrency).
        ``pages`` (the pages each message's document has left) sends a small document's
        messages to the queue's small twin where one is configured (``routing.routed_queues``);
        ``arrived_at`` is ignored (each queue is first come, first served).
        """
        targets = routed_queues(queue, pages, len(bodies), self.urls)
        ids: dict[int, str] = {}
        for target in dict.fromkeys(targets):
            positions = [n for n, t in enumerate(targets) if t == target]
            sent = self._send_to(target, [bodies[n] for n in positions])
            ids.update(zip(positions, sent, strict=True))
        return [ids[n] for n in range(len(bodies))]

    def _send_to(self, queue: str, bodies: Sequence[str]) -> list[str]:
        url = self._url(queue)
        ids: list[str] = []
        for start in range(0, len(bodies), BATCH):
            chunk = list(bodies[start:start + BATCH])
            got: dict[str, str] = {}
            pending = {str(n): body for n, body in enumerate(chunk)}
            for _ in range(2):
                with mapped(f"sqs send to {queue}"):
                    answer = self.client.send_message_batch(QueueUrl=url, Entries=[
                        {"Id": n, "MessageBody": body} for n, body in pending.items()])
                for ok in answer.get("Successful", []):
                    got[ok["Id"]] = ok["MessageId"]
                    pending.pop(ok["Id"], None)
                if not pending:
                    break
            if pending:
                from extract.errors import TransientError

                failed = answer.get("Failed", [])
                raise TransientError(f"sqs refused {len(pending)} of {len(chunk)} messages to "
                                     f"{queue}: {failed[:1]}", error_type="aws_transient")
            ids += [got[str(n)] for n in range(len(chunk))]
        return ids

    def receive(self, queue: str, *, max_messages: int = 1,
                visibility_timeout_s: float = 300) -> list[ReceivedMessage]:
        received: list[ReceivedMessage] = []
        url = self._url(queue)
        while len(received) < max_messages:
            with mapped(f"sqs receive from {queue}"):
                answer = self.client.receive_message(
                    QueueUrl=url, MaxNumberOfMessages=min(BATCH, max_messages - len(received)),
                    VisibilityTimeout=visibility_seconds(visibility_timeout_s),
                    MessageSystemAttributeNames=["ApproximateReceiveCount"], WaitTimeSeconds=0)
            messages = answer.get("Messages", [])
            if not messages:
                break
            for m in messages:
                message = ReceivedMessage(queue, m["MessageId"], m["Body"], m["ReceiptHandle"],
                                          int(m.get("Attributes", {}).get(
                                              "ApproximateReceiveCount", 1)))
                self._remember(message)
                received.append(message)
        return received

    def delete(self, message: ReceivedMessage) -> None:
        if self._stale(message):
            return
        self._receipts.pop(message.message_id, None)
        try:
            with mapped(f"sqs delete from {message.queue}"):
                self.client.delete_message(QueueUrl=self._url(message.queue),
                                           ReceiptHandle=message.receipt)
        except Exception as error:
            if error_code(error) not in STALE_RECEIPT_CODES:  # type: ignore[arg-type]
                raise

    def change_visibility(self, message: ReceivedMessage, timeout_s: float) -> None:
        if self._stale(message):
            return
        try:
            with mapped(f"sqs change visibility in {message.queue}"):
                self.client.change_message_visibility(
                    QueueUrl=self._url(message.queue), ReceiptHandle=message.receipt,
                    VisibilityTimeout=visibility_seconds(timeout_s))
        except Exception as error:
            if error_code(error) not in STALE_RECEIPT_CODES:  # type: ignore[arg-type]
                raise

    def _counts(self, queue: str) -> tuple[int, int]:
        with mapped(f"sqs attributes of {queue}"):
            attributes = self.client.get_queue_attributes(
                QueueUrl=self._url(queue), AttributeNames=[
                    "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
            )["Attributes"]
        return (int(attributes.get("ApproximateNumberOfMessages", 0)),
                int(attributes.get("ApproximateNumberOfMessagesNotVisible", 0)))

    def depth(self, queue: str) -> QueueDepth:
        """SQS's approximate counts: good for the poller's backlog test and for dashboards; a
        queue with a small-documents twin counts both."""
        visible = in_flight = dead = 0
        for name in (queue, small_queue(queue)):
            if name != queue and name not in self.urls:
                continue
            shown, hidden = self._counts(name)
            visible, in_flight = visible + shown, in_flight + hidden
            dlq = dead_letter_queue(name)
            dead += sum(self._counts(dlq)) if dlq in self.urls else 0
        return QueueDepth(visible=visible, in_flight=in_flight, dead_letter=dead)
