"""SQS has no priorities: a small document's messages go to its queue's twin for small
documents (``infra.aws.routing``), against moto's SQS on 127.0.0.1."""

from __future__ import annotations

from support import awsmoto

from extract.config import ExtractConfig
from extract.delivery_limits import stage_time_limit
from extract.scheduling import port_queue, small_queue
from infra.aws.routing import routed_queues


def _queue():
    from infra.aws.sqs import SqsQueue

    sqs = awsmoto.client("sqs")
    urls = awsmoto.create_queues(sqs, ["read", "read-small", "split"],
                         prefix=awsmoto.unique("q") + "-", visibility_timeout_s=30)
    return SqsQueue(sqs, urls)


def test_a_small_documents_messages_go_to_the_small_queue_and_a_books_to_the_bulk_one():
    queue = _queue()
    queue.send_batch("read", [f"book-{n}" for n in range(3)], group="book", pages=352)
    queue.send_batch("read", ["letter-1"], group="letter", pages=1)
    queue.send_batch("read", ["nda-1", "big-1"], pages=[12, 40])  # one count a message
    small = {m.body for m in queue.receive("read-small", max_messages=10)}
    bulk = {m.body for m in queue.receive("read", max_messages=10)}
    assert small == {"letter-1", "nda-1"}
    assert bulk == {"book-0", "book-1", "book-2", "big-1"}


def test_depth_counts_both_queues_and_a_queue_without_a_twin_is_unchanged():
    queue = _queue()
    queue.send_batch("read", ["a", "b"], pages=[1, 400])
    queue.send("split", "s", pages=1)  # no split-small configured: the split queue
    assert queue.depth("read").visible == 2
    assert [m.body for m in queue.receive("split")] == ["s"]


def test_a_received_twin_message_is_acknowledged_in_its_own_queue():
    queue = _queue()
    queue.send("read", "letter", pages=1)
    (message,) = queue.receive("read-small", visibility_timeout_s=30)
    assert message.queue == "read-small"
    queue.delete(message)
    assert queue.depth("read").in_flight == 0 and queue.depth("read").visible == 0


def test_names_and_limits_of_a_twin_are_its_queues():
    assert small_queue("read") == "read-small"
    assert small_queue("read-dlq") == "read-small-dlq"
    assert port_queue("read-small") == "read" and port_queue("read-small-dlq") == "read-dlq"
    config = ExtractConfig()
    assert stage_time_limit("read-small", config) == stage_time_limit("read", config)
    assert routed_queues("read", None, 2, {"read", "read-small"}) == ["read", "read"]
    assert routed_queues("read", 3, 1, {"read"}) == ["read"]
