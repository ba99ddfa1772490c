"""The SQLite queue keeps SQS's semantics: visibility timeout, redelivery, dead-letter redrive."""

from __future__ import annotations

import subprocess
import sys

from infra.local.queue import SqliteQueue


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make_queue(tmp_path, max_receives=3):
    clock = Clock()
    return SqliteQueue(tmp_path / "q.db", max_receives=max_receives, clock=clock), clock


def test_received_message_is_hidden_until_its_visibility_timeout(tmp_path):
    queue, clock = make_queue(tmp_path)
    queue.send("work", "a")
    first = queue.receive("work", visibility_timeout_s=30)
    assert [m.body for m in first] == ["a"] and first[0].receive_count == 1
    assert queue.receive("work") == []
    clock.now += 29
    assert queue.receive("work") == []
    clock.now += 2
    again = queue.receive("work", visibility_timeout_s=30)
    assert [m.body for m in again] == ["a"] and again[0].receive_count == 2


def test_delete_acknowledges_and_a_stale_receipt_is_ignored(tmp_path):
    queue, clock = make_queue(tmp_path)
    queue.send("work", "a")
    stale = queue.receive("work", visibility_timeout_s=10)[0]
    clock.now += 11
    fresh = queue.receive("work", visibility_timeout_s=10)[0]
    queue.delete(stale)
    assert queue.depth("work").in_flight == 1
    queue.delete(fresh)
    assert queue.depth("work") == queue.depth("work").__class__(0, 0, 0)


def test_delete_many_acks_a_batch_and_ignores_its_stale_receipts(tmp_path):
    queue, clock = make_queue(tmp_path)
    queue.send_batch("work", ["a", "b", "c"])
    a, b = queue.receive("work", max_messages=2, visibility_timeout_s=30)
    (c,) = queue.receive("work", visibility_timeout_s=10)
    clock.now += 11  # c's receipt goes stale: another worker holds it now
    (fresh_c,) = queue.receive("work", max_messages=3, visibility_timeout_s=10)
    queue.delete_many([a, b, c])
    assert queue.depth("work").in_flight == 1  # only the message another worker holds is left
    queue.delete_many([fresh_c])
    queue.delete_many([])
    assert queue.depth("work") == queue.depth("work").__class__(0, 0, 0)


def test_change_visibility_brings_a_message_back_early(tmp_path):
    queue, clock = make_queue(tmp_path)
    queue.send("work", "a")
    message = queue.receive("work", visibility_timeout_s=300)[0]
    queue.change_visibility(message, 0)
    assert [m.body for m in queue.receive("work")] == ["a"]


def test_dead_letter_after_max_receives(tmp_path):
    queue, clock = make_queue(tmp_path, max_receives=3)
    queue.send("work", "poison")
    for attempt in (1, 2, 3):
        (message,) = queue.receive("work", visibility_timeout_s=5)
        assert message.receive_count == attempt
        clock.now += 6
    assert queue.receive("work") == []
    depth = queue.depth("work")
    assert (depth.visible, depth.in_flight, depth.dead_letter) == (0, 0, 1)
    (dead,) = queue.receive("work-dlq")
    assert dead.body == "poison"


def test_batch_send_keeps_order_and_groups_interleave_fairly(tmp_path):
    queue, _ = make_queue(tmp_path)
    queue.send_batch("work", [f"big-{i}" for i in range(5)], group="big")
    queue.send_batch("work", ["small-1"], group="small")
    bodies = [m.body for m in queue.receive("work", max_messages=10)]
    assert bodies[:3] == ["big-0", "small-1", "big-1"]
    assert sorted(bodies) == sorted([f"big-{i}" for i in range(5)] + ["small-1"])


def test_messages_of_a_dead_process_are_released(tmp_path):
    path = tmp_path / "q.db"
    queue = SqliteQueue(path)
    queue.send("work", "a")
    code = (
        "import sys; from pathlib import Path; from infra.local.queue import SqliteQueue;"
        f"q = SqliteQueue(Path({str(path)!r})); assert q.receive('work', visibility_timeout_s=3600)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    assert queue.receive("work") == []
    assert queue.release_orphans() == 1
    (message,) = queue.receive("work")
    assert message.body == "a" and message.receive_count == 2


def test_visible_queues_names_the_queues_with_a_message_to_receive_now(tmp_path):
    """The receiver asks which queues hold a visible message in one statement: a message in
    flight or due later does not count, and a queue it was not asked about is not named."""
    from infra.local.queue import SqliteQueue

    now = [1000.0]
    queue = SqliteQueue(tmp_path / "queue.db", clock=lambda: now[0])
    queue.send("split", "a")
    queue.send("index", "b")
    queue.send("read", "c")
    (taken,) = queue.receive("index", visibility_timeout_s=30)
    assert queue.visible_queues(["split", "index", "fields"]) == {"split"}
    assert queue.visible_queues([]) == set()
    now[0] += 31  # the index message's visibility timeout ran out: it is visible again
    assert queue.visible_queues(["split", "index", "read"]) == {"split", "index", "read"}
