"""Documents, not arrivals: the least work left goes first, ties by arrival, no one starved
(``extract.scheduling``), in the SQLite queue and in the CPU lanes' waiting calls."""

from __future__ import annotations

import asyncio

from extract.scheduling import (
    PAGE_WEIGHT_S,
    PAGES_PRICED,
    guess_pages,
    queue_class,
    schedule_key,
)
from infra.local.cpu_priority import CALL_KEY, PriorityGate, call_key
from infra.local.queue import SqliteQueue


def test_the_document_with_fewer_pages_left_goes_first_when_they_arrive_together():
    book, letter = schedule_key(352, 100.0), schedule_key(1, 100.0)
    assert letter < book


def test_equal_pages_go_in_order_of_arrival():
    assert schedule_key(5, 100.0) < schedule_key(5, 100.001)


def test_age_raises_priority_so_a_book_is_not_starved():
    # The book arrived at 0; letters keep arriving. 352 pages at half a second a page are
    # 176 s: a letter arriving after that goes behind the book, one before it in front.
    book = schedule_key(352, 0.0)
    assert schedule_key(1, 175.0) < book
    assert schedule_key(1, 176.5) > book
    # However large the file, its wait behind later arrivals is bounded.
    huge = schedule_key(1_000_000, 0.0)
    assert schedule_key(1, PAGES_PRICED * PAGE_WEIGHT_S + 1.0) > huge


def test_unknown_pages_count_as_one_and_guesses_come_from_the_size():
    assert schedule_key(None, 10.0) == schedule_key(1, 10.0)
    assert guess_pages(None) == guess_pages(0) == 1
    assert guess_pages(20_000) == 1
    assert guess_pages(1_000_000) == 20


def test_small_documents_have_a_queue_of_their_own_on_sqs():
    assert queue_class(1) == queue_class(20) == queue_class(None) == "small"
    assert queue_class(21) == queue_class(352) == "bulk"


class _Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def test_the_queue_hands_out_a_letter_sent_after_a_book_before_the_books_units(tmp_path):
    clock = _Clock()
    queue = SqliteQueue(tmp_path / "q.db", clock=clock)
    queue.send_batch("read", [f"book-{i}" for i in range(71)], group="book", pages=352)
    clock.now += 1.0
    queue.send_batch("read", ["letter-1"], group="letter", pages=1)
    clock.now += 1.0
    queue.send_batch("read", ["nda-1", "nda-2"], group="nda", pages=10)
    bodies = [m.body for m in queue.receive("read", max_messages=5)]
    assert bodies == ["letter-1", "nda-1", "nda-2", "book-0", "book-1"]


def test_a_book_waiting_longer_than_its_price_passes_later_letters(tmp_path):
    clock = _Clock()
    queue = SqliteQueue(tmp_path / "q.db", clock=clock)
    queue.send_batch("read", ["book-0"], group="book", pages=352)
    clock.now += 200.0  # longer than 352 pages' price (176 s)
    queue.send_batch("read", ["letter-1"], group="letter", pages=1)
    assert [m.body for m in queue.receive("read", max_messages=2)] == ["book-0", "letter-1"]


def test_a_key_is_kept_across_a_redelivery_and_given_to_the_receiver(tmp_path):
    clock = _Clock()
    queue = SqliteQueue(tmp_path / "q.db", clock=clock)
    queue.send("read", "nda", pages=10)
    (first,) = queue.receive("read", visibility_timeout_s=2)
    assert first.schedule_key == 1_000.0 + 10 * PAGE_WEIGHT_S
    clock.now += 3  # the NDA's message is visible again, with its key of 1005
    queue.send("read", "letter", pages=1)  # later, but its key (1003.5) is smaller
    bodies = [m.body for m in queue.receive("read", max_messages=2)]
    assert bodies == ["letter", "nda"]


def test_one_page_count_a_message(tmp_path):
    queue = SqliteQueue(tmp_path / "q.db", clock=_Clock())
    queue.send_batch("split", ["big", "small", "mid"], pages=[40, 1, 5])
    assert [m.body for m in queue.receive("split", max_messages=3)] == ["small", "mid", "big"]


def test_a_queue_made_before_keys_existed_gets_the_column(tmp_path):
    import sqlite3

    path = tmp_path / "q.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE messages (seq INTEGER PRIMARY KEY AUTOINCREMENT, message_id "
                   "TEXT NOT NULL UNIQUE, queue TEXT NOT NULL, body TEXT NOT NULL, sent_at REAL "
                   "NOT NULL, visible_at REAL NOT NULL, receive_count INTEGER NOT NULL DEFAULT 0,"
                   " receipt TEXT, owner_host TEXT, owner_pid INTEGER, grp TEXT, group_rank "
                   "INTEGER NOT NULL DEFAULT 0)")
        db.execute("INSERT INTO messages (message_id, queue, body, sent_at, visible_at) "
                   "VALUES ('old', 'read', 'old-body', 0, 0)")
    queue = SqliteQueue(path, clock=_Clock())
    queue.send("read", "new", pages=1)
    assert [m.body for m in queue.receive("read", max_messages=2)] == ["old-body", "new"]


def test_the_gate_admits_waiting_calls_by_key_not_by_arrival():
    async def scenario() -> list[str]:
        gate = PriorityGate(1)
        order: list[str] = []
        await gate.acquire(0.0)  # a call runs; the others wait

        async def call(name: str, key: float) -> None:
            await gate.acquire(key)
            order.append(name)
            gate.release(key)

        tasks = [asyncio.create_task(call(name, key))
                 for name, key in (("book", 50.0), ("nda", 10.0), ("letter", 1.0))]
        await asyncio.sleep(0)
        gate.release(0.0)
        await asyncio.gather(*tasks)
        return order

    assert asyncio.run(scenario()) == ["letter", "nda", "book"]


def test_a_cancelled_waiter_does_not_keep_its_place_or_a_slot():
    async def scenario() -> tuple[int, list[str]]:
        gate = PriorityGate(1)
        order: list[str] = []
        await gate.acquire(0.0)
        gone = asyncio.create_task(gate.acquire(1.0))

        async def call() -> None:
            await gate.acquire(5.0)
            order.append("next")
            gate.release(5.0)

        waiting = asyncio.create_task(call())
        await asyncio.sleep(0)
        gone.cancel()
        await asyncio.sleep(0)
        gate.release(0.0)
        await waiting
        return gate.admitted, order

    assert asyncio.run(scenario()) == (0, ["next"])


def test_only_movable_waiters_are_handed_to_another_gate_first_by_key():
    """``hand_over`` admits into another gate the first movable call waiting here (by key,
    then arrival) and says where it runs; a call that may not move keeps its place here."""
    async def scenario() -> tuple[dict[str, object], int, int, bool]:
        gate, other = PriorityGate(1), PriorityGate(2)
        where: dict[str, object] = {}
        await gate.acquire(0.0)

        async def call(name: str, key: float, movable: bool) -> None:
            where[name] = await gate.acquire(key, movable=movable)

        tasks = [asyncio.create_task(call(name, key, movable)) for name, key, movable in
                 (("book", 50.0, True), ("sniff", 1.0, False), ("nda", 10.0, True))]
        await asyncio.sleep(0)
        assert other.admitted == 0
        assert gate.hand_over("documents", other)  # the nda (key 10) before the book (50)
        await asyncio.sleep(0)
        assert where == {"nda": "documents"}
        assert gate.hand_over("documents", other)
        none_left = not gate.hand_over("documents", other)  # the sniff may not move
        gate.release(0.0)  # the sniff is admitted here
        await asyncio.gather(*tasks)
        return where, other.admitted, gate.admitted, none_left

    where, other_admitted, admitted, none_left = asyncio.run(scenario())
    assert where == {"nda": "documents", "book": "documents", "sniff": None}
    assert (other_admitted, admitted, none_left) == (2, 1, True)


def test_a_call_cancelled_as_it_is_handed_over_gives_the_other_gates_slot_back():
    """A call handed over and cancelled before it resumes runs nowhere: the other gate's slot
    is freed and what the caller counted for the hand-over is undone (``undo``)."""
    async def scenario() -> tuple[int, int, list[str]]:
        gate, other = PriorityGate(1), PriorityGate(1)
        undone: list[str] = []
        await gate.acquire(0.0)
        waiting = asyncio.create_task(gate.acquire(3.0, movable=True))
        await asyncio.sleep(0)
        assert gate.hand_over("documents", other, undo=lambda: undone.append("undone"))
        waiting.cancel()  # before the waiter ran again: its admission must be undone
        await asyncio.gather(waiting, return_exceptions=True)
        return other.admitted, gate.admitted, undone

    assert asyncio.run(scenario()) == (0, 1, ["undone"])


def test_a_call_takes_the_key_of_the_message_its_task_handles():
    token = CALL_KEY.set(123.0)
    try:
        assert call_key() == 123.0
    finally:
        CALL_KEY.reset(token)
    assert call_key() > 1_000_000_000  # none set: now, as one page of work


def test_a_documents_arrival_orders_its_later_messages(tmp_path):
    """A one-page file converted for a minute is not passed by the units of NDAs that arrived
    after it: its unit's key counts from the document's arrival, not its message's."""
    clock = _Clock()
    queue = SqliteQueue(tmp_path / "q.db", clock=clock)
    letter_arrived = clock.now
    clock.now += 5.0
    queue.send_batch("read", ["nda-1", "nda-2"], group="nda", pages=10, arrived_at=clock.now)
    clock.now += 60.0  # the letter's conversion
    queue.send("read", "letter", group="letter", pages=1, arrived_at=letter_arrived)
    assert [m.body for m in queue.receive("read", max_messages=3)] == [
        "letter", "nda-1", "nda-2"]
