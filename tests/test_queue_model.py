"""The SQLite queue against a reference model of SQS semantics, driven by hypothesis.

Whatever the interleaving of sends, receives, deletes, visibility changes and time passing: no
message is lost or duplicated, a hidden message is never delivered, receive counts are exact,
and a message is dead-lettered exactly when it has used up its deliveries.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from infra.local.queue import SqliteQueue

MAX_RECEIVES = 3
VISIBILITY = 10.0


class QueueMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.now = 1000.0
        self.folder = tempfile.TemporaryDirectory()
        self.queue = SqliteQueue(Path(self.folder.name) / "q.db", max_receives=MAX_RECEIVES,
                                 clock=lambda: self.now)
        self.sent = 0
        self.model: dict[str, dict] = {}  # body -> visible_at, receives, dead, receipt
        self.deleted: set[str] = set()
        self.in_hand: list = []

    def teardown(self):
        self.queue.close()
        self.folder.cleanup()

    @rule()
    def send(self):
        body = f"m{self.sent}"
        self.sent += 1
        self.queue.send("work", body)
        self.model[body] = {"visible_at": self.now, "receives": 0, "dead": False}

    @rule(count=st.integers(1, 4))
    def receive(self, count):
        got = self.queue.receive("work", max_messages=count, visibility_timeout_s=VISIBILITY)
        due = sorted((int(b[1:]), b) for b, m in self.model.items()
                     if not m["dead"] and m["visible_at"] <= self.now)
        expected = []
        for _, body in due:
            if len(expected) == count:
                break
            state = self.model[body]
            if state["receives"] >= MAX_RECEIVES:
                state["dead"] = True
                continue
            expected.append(body)
        assert [m.body for m in got] == expected
        for message in got:
            state = self.model[message.body]
            state["receives"] += 1
            state["visible_at"] = self.now + VISIBILITY
            assert message.receive_count == state["receives"]
        self.in_hand = list(got)

    @precondition(lambda self: self.in_hand)
    @rule()
    def delete_first_in_hand(self):
        message = self.in_hand.pop(0)
        self.queue.delete(message)
        if self.model[message.body]["visible_at"] > self.now:  # the receipt is still current
            del self.model[message.body]
            self.deleted.add(message.body)

    @precondition(lambda self: self.in_hand)
    @rule()
    def release_first_in_hand(self):
        message = self.in_hand.pop(0)
        self.queue.change_visibility(message, 0)
        if self.model[message.body]["visible_at"] > self.now:
            self.model[message.body]["visible_at"] = self.now

    @rule(seconds=st.sampled_from([1.0, 5.0, 11.0]))
    def time_passes(self, seconds):
        self.now += seconds
        self.in_hand = [m for m in self.in_hand if self.model[m.body]["visible_at"] > self.now]

    @invariant()
    def nothing_lost_or_duplicated(self):
        live = self.queue.depth("work")
        dead = sum(1 for m in self.model.values() if m["dead"])
        assert live.visible + live.in_flight == len(self.model) - dead
        assert live.dead_letter == dead
        assert len(self.model) + len(self.deleted) == self.sent


TestQueueAgainstModel = QueueMachine.TestCase
TestQueueAgainstModel.settings = settings(max_examples=60, stateful_step_count=30, deadline=None)
