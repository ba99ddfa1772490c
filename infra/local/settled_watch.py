"""A run's stop test: which of its jobs are not settled yet, followed rather than recounted.

``LocalRuntime.process(done)`` asks ``done()`` after every poll pass. Listing a run's two
thousand jobs to ask each whether it is settled cost 35 ms a pass, a third of the main thread's
CPU on a text run; a store that numbers its changes (``SqliteJobStore.change_position``) is asked
instead for the jobs settled since the last pass. ``doclake run`` and ``doclake bench`` stop on
this one test, so the benchmark pays what a run pays.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["SettledWatch"]


class SettledWatch:
    """Callable stop test over ``job_ids``: true once every one is settled (``Job.settled``)."""

    def __init__(self, store, job_ids: Sequence[str]):
        self._store = store
        self._follow = hasattr(store, "settled_changed")  # a store that numbers its changes
        self._position: int | None = None
        self.job_ids = sorted(set(job_ids))
        self.pending = set(self.job_ids)

    def __call__(self) -> bool:
        store = self._store
        if not self.pending:
            return True
        if self._follow and self._position is not None:
            settled, self._position = store.settled_changed(self._position)
            self.pending.difference_update(settled)
        elif self._follow:
            self._position = store.change_position()  # read before the count: nothing missed
            unsettled = {j.job_id for j in store.list_jobs(sorted(self.pending))
                         if not j.settled}
            self.pending.intersection_update(unsettled)
        elif store.settled_count(self.job_ids) == len(self.job_ids):
            self.pending.clear()
        return not self.pending

    @property
    def settled(self) -> int:
        return len(self.job_ids) - len(self.pending)
