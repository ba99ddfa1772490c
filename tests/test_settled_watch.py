"""A run's stop test follows its jobs settling through the store's change numbers: the first
pass lists the run's jobs, later passes ask only for those settled since (``SettledWatch``)."""

from __future__ import annotations

from types import SimpleNamespace

from infra.local.settled_watch import SettledWatch


class NumberedStore:
    """Jobs that settle when told, each settling one change later; counts what is asked."""

    def __init__(self, ids):
        self.settled: dict[str, int] = {}
        self.position = 0
        self.ids = ids
        self.listed = 0
        self.asked_after: list[int] = []

    def settle(self, job_id):
        self.position += 1
        self.settled[job_id] = self.position

    def change_position(self):
        return self.position

    def list_jobs(self, ids):
        self.listed += 1
        return [SimpleNamespace(job_id=i, settled=i in self.settled) for i in ids]

    def settled_changed(self, after):
        self.asked_after.append(after)
        return [i for i, at in self.settled.items() if at > after], self.position


def test_the_watch_lists_once_then_follows_the_changes():
    store = NumberedStore(["a", "b", "c"])
    store.settle("a")
    watch = SettledWatch(store, ["c", "b", "a", "a"])
    assert watch() is False and store.listed == 1 and watch.pending == {"b", "c"}
    assert watch() is False and store.listed == 1 and store.asked_after == [1]
    store.settle("c")
    assert watch() is False and watch.pending == {"b"} and watch.settled == 2
    store.settle("b")
    assert watch() is True and store.listed == 1
    assert watch() is True and store.asked_after == [1, 1, 2]  # done: no more questions


def test_a_store_without_change_numbers_is_counted():
    counts = iter([1, 2])
    store = SimpleNamespace(settled_count=lambda ids: next(counts))
    watch = SettledWatch(store, ["a", "b"])
    assert watch() is False
    assert watch() is True and watch.settled == 2
