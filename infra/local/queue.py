"""Queues on SQLite with SQS semantics: visibility timeout, receive count, dead-letter redrive.

A received message stays in its table, hidden until ``visible_at``; deleting it with its current
receipt acknowledges it. A message already received ``max_receives`` times is moved to
``<queue>-dlq`` when it next becomes due, as SQS's redrive policy does.

One local addition SQS does not need: each receive records the receiving process, and
``release_orphans`` makes visible at once the messages held by a process that has died, so that
resuming after ``kill -9`` does not wait out a long visibility timeout.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

from extract.messages import dead_letter_queue
from extract.ports import QueueDepth, ReceivedMessage
from extract.processes import process_alive
from extract.scheduling import schedule_key
from infra.local.sqlite import open_database, transaction

__all__ = ["schedule_keys", "SqliteQueue"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS messages (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  message_id TEXT NOT NULL UNIQUE,
  queue TEXT NOT NULL,
  body TEXT NOT NULL,
  sent_at REAL NOT NULL,
  visible_at REAL NOT NULL,
  receive_count INTEGER NOT NULL DEFAULT 0,
  receipt TEXT,
  owner_host TEXT,
  owner_pid INTEGER,
  grp TEXT,
  group_rank INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS messages_due ON messages (queue, visible_at, group_rank, seq);
"""

_SCHEDULE_KEY = "ALTER TABLE messages ADD COLUMN sched_key REAL NOT NULL DEFAULT 0"
"""The column ``extract.scheduling.schedule_key`` fills, added to a queue made before it existed
(0: its messages go first, in the order they went before)."""



def schedule_keys(pages: int | Sequence[int] | None, count: int, now: float) -> list[float]:
    """Each message's ``sched_key``: 0 without ``pages`` (first, as before keys existed)."""
    if pages is None:
        return [0.0] * count
    if isinstance(pages, int):
        return [schedule_key(pages, now)] * count
    if len(pages) != count:
        raise ValueError(f"{len(pages)} page counts for {count} messages")
    return [schedule_key(p, now) for p in pages]


class SqliteQueue:
    def __init__(self, path: Path, *, max_receives: int = 5,
                 clock: Callable[[], float] = time.time):
        self.max_receives = max_receives
        self.clock = clock
        self._db = open_database(path)
        self._db.executescript(_SCHEMA)
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(messages)")}
        if "sched_key" not in columns:
            with transaction(self._db) as db:
                db.execute(_SCHEDULE_KEY)
        self._host = socket.gethostname()

    def send(self, queue: str, body: str, *, group: str | None = None,
             pages: int | Sequence[int] | None = None, arrived_at: float | None = None) -> str:
        return self.send_batch(queue, [body], group=group, pages=pages,
                               arrived_at=arrived_at)[0]

    def send_batch(self, queue: str, bodies: Sequence[str], *, group: str | None = None,
                   pages: int | Sequence[int] | None = None,
                   arrived_at: float | None = None) -> list[str]:
        """Send messages; ``pages`` (the pages their document has left, one count for all or one
        a message) orders them by
        ``extract.scheduling.schedule_key``: the document with the least work left first, ties
        by arrival, and none waits longer than its pages' price behind later work.

        ``arrived_at``: when their document arrived (default: now).
        Messages sent without ``pages`` go first, by their rank within their group (``group``,
        a job id), then in order sent: jobs interleave fairly.
        """
        now = self.clock()
        # A document's arrival, not its message's: a one-page file whose conversion took a
        # minute does not go behind the units of NDAs that arrived after it.
        keys = schedule_keys(pages, len(bodies), now if arrived_at is None else arrived_at)
        ids = [str(uuid.uuid4()) for _ in bodies]
        with transaction(self._db) as db:
            base = 0
            if group is not None:
                base = db.execute(
                    "SELECT coalesce(max(group_rank), 0) FROM messages WHERE queue = ? AND grp = ?",
                    (queue, group),
                ).fetchone()[0]
            db.executemany(
                "INSERT INTO messages (message_id, queue, body, sent_at, visible_at, grp, "
                "group_rank, sched_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [(i, queue, body, now, now, group, base + n + 1 if group else 0, key)
                 for n, (i, body, key) in enumerate(zip(ids, bodies, keys, strict=True))],
            )
        return ids

    def receive(self, queue: str, *, max_messages: int = 1,
                visibility_timeout_s: float = 300) -> list[ReceivedMessage]:
        now = self.clock()
        received: list[ReceivedMessage] = []
        redriven = queue.endswith("-dlq")
        # A read without the write lock first: most receives of a busy runtime find an empty
        # queue (the dead-letter queues nearly always), and BEGIN IMMEDIATE would serialise
        # them with every writer for nothing.
        if self._db.execute("SELECT 1 FROM messages WHERE queue = ? AND visible_at <= ? LIMIT 1",
                            (queue, now)).fetchone() is None:
            return received
        with transaction(self._db) as db:
            while len(received) < max_messages:
                rows = db.execute(
                    "SELECT seq, message_id, body, receive_count, sched_key FROM messages "
                    "WHERE queue = ? AND visible_at <= ? ORDER BY sched_key, group_rank, seq "
                    "LIMIT ?",
                    (queue, now, max_messages - len(received)),
                ).fetchall()
                if not rows:
                    break
                for row in rows:
                    if row["receive_count"] >= self.max_receives and not redriven:
                        # Counted afresh in the dead-letter queue, which has no redrive itself.
                        db.execute(
                            "UPDATE messages SET queue = ?, visible_at = ?, receipt = NULL, "
                            "receive_count = 0 WHERE seq = ?",
                            (dead_letter_queue(queue), now, row["seq"]),
                        )
                        continue
                    receipt = uuid.uuid4().hex
                    count = row["receive_count"] + 1
                    db.execute(
                        "UPDATE messages SET receive_count = ?, visible_at = ?, receipt = ?, "
                        "owner_host = ?, owner_pid = ? WHERE seq = ?",
                        (count, now + visibility_timeout_s, receipt, self._host, os.getpid(),
                         row["seq"]),
                    )
                    received.append(ReceivedMessage(
                        queue, row["message_id"], row["body"], receipt, count,
                        schedule_key=row["sched_key"] or None))
        return received

    def delete(self, message: ReceivedMessage) -> None:
        self._db.execute(
            "DELETE FROM messages WHERE message_id = ? AND receipt = ?",
            (message.message_id, message.receipt),
        )

    def delete_many(self, messages: Sequence[ReceivedMessage]) -> None:
        """``delete`` for the messages of a batch, in one transaction: a batch of sixteen
        splits is acked by one commit, not sixteen."""
        if len(messages) == 1:
            self.delete(messages[0])
        elif messages:
            with transaction(self._db) as db:
                db.executemany("DELETE FROM messages WHERE message_id = ? AND receipt = ?",
                               [(m.message_id, m.receipt) for m in messages])

    def change_visibility(self, message: ReceivedMessage, timeout_s: float) -> None:
        self._db.execute(
            "UPDATE messages SET visible_at = ? WHERE message_id = ? AND receipt = ?",
            (self.clock() + timeout_s, message.message_id, message.receipt),
        )

    def visible_queues(self, queues: Sequence[str]) -> set[str]:
        """Which of ``queues`` have a message to receive now, in one statement (an index probe
        each): the runtime's receiver asks this before receiving, not each queue in turn (six
        round trips for every message a busy run handled, most to empty queues)."""
        if not queues:
            return set()
        names = ", ".join("(?)" for _ in queues)
        rows = self._db.execute(
            f"WITH asked(name) AS (VALUES {names}) SELECT name FROM asked WHERE EXISTS "
            "(SELECT 1 FROM messages WHERE queue = asked.name AND visible_at <= ?)",
            (*queues, self.clock()),
        ).fetchall()
        return {row[0] for row in rows}

    def visible_count(self, queue: str, *, at_most: int) -> int:
        """How many messages of ``queue`` could be received now, counted up to ``at_most`` (an
        index range read, however long the queue)."""
        return self._db.execute(
            "SELECT count(*) FROM (SELECT 1 FROM messages WHERE queue = ? AND visible_at <= ? "
            "LIMIT ?)", (queue, self.clock(), at_most)).fetchone()[0]

    def waiting_documents(self, queues: Sequence[str]) -> int:
        """Documents (message groups; a message without one counts alone) with a message in
        ``queues`` that could be received now and that no worker has taken: the live
        progress's "waiting for a worker"."""
        if not queues:
            return 0
        marks = ", ".join("?" for _ in queues)
        return self._db.execute(
            f"SELECT count(DISTINCT coalesce(grp, message_id)) FROM messages "
            f"WHERE queue IN ({marks}) AND visible_at <= ?", (*queues, self.clock())).fetchone()[0]

    def depth(self, queue: str) -> QueueDepth:
        now = self.clock()
        row = self._db.execute(
            "SELECT "
            " sum(CASE WHEN queue = ? AND visible_at <= ? THEN 1 ELSE 0 END),"
            " sum(CASE WHEN queue = ? AND visible_at > ? THEN 1 ELSE 0 END),"
            " sum(CASE WHEN queue = ? THEN 1 ELSE 0 END) "
            "FROM messages WHERE queue IN (?, ?)",
            (queue, now, queue, now, dead_letter_queue(queue), queue, dead_letter_queue(queue)),
        ).fetchone()
        return QueueDepth(visible=row[0] or 0, in_flight=row[1] or 0, dead_letter=row[2] or 0)

    def release_orphans(self) -> int:
        """Make visible now the messages held by dead processes of this host."""
        now = self.clock()
        rows = self._db.execute(
            "SELECT DISTINCT owner_pid FROM messages WHERE owner_host = ? AND visible_at > ?",
            (self._host, now),
        ).fetchall()
        dead = [r[0] for r in rows if r[0] is not None and not process_alive(r[0])]
        released = 0
        for pid in dead:
            cursor = self._db.execute(
                "UPDATE messages SET visible_at = ? "
                "WHERE owner_host = ? AND owner_pid = ? AND visible_at > ?",
                (now, self._host, pid, now),
            )
            released += cursor.rowcount
        return released

    def close(self) -> None:
        self._db.close()
