"""A stopped process pool ends at once, not at its manager thread's next look.

pebble's manager thread sleeps ``CONSTS.sleep_unit`` between looks at its workers, and ``join``
waits for it: 0.05 to 0.1 s at the end of every ``doclake run``. Here the sleep unit is made 30 s:
pebble's own pool would then take up to 30 s to join; ``PromptStopPool`` must take a moment,
and still do what pebble's does (time limits, a worker's death), which needs the same thread.
"""

from __future__ import annotations

import time
from concurrent.futures import TimeoutError as FutureTimeout

import pytest
from pebble import ProcessExpired
from pebble.common import CONSTS
from support import cpu_tasks

from infra.local import prompt_pool
from infra.local.forkserver import context
from infra.local.prompt_pool import PromptStopPool

LONG_SLEEP_UNIT_S = 30.0


@pytest.fixture
def slow_looks(monkeypatch):
    """The manager thread's sleep between looks, 30 s instead of 0.1."""
    monkeypatch.setattr(CONSTS, "sleep_unit", LONG_SLEEP_UNIT_S)


def _a_pool_that_worked(workers: int = 2) -> PromptStopPool:
    pool = PromptStopPool(max_workers=workers, context=context())
    assert pool.schedule(cpu_tasks.square, (6,)).result(timeout=60) == 36
    return pool


def test_a_stop_ends_the_pool_without_waiting_for_the_managers_next_look(slow_looks):
    pool = _a_pool_that_worked()
    workers = list(pool._pool_manager.worker_manager.workers.values())
    assert workers and all(worker.is_alive() for worker in workers)
    started = time.monotonic()
    pool.stop()
    pool.join(timeout=60)
    took = time.monotonic() - started
    assert took < LONG_SLEEP_UNIT_S / 3, f"join took {took:.1f} s: it waited for the sleep"
    assert not any(worker.is_alive() for worker in workers)


def test_time_limits_and_a_dead_worker_are_still_seen():
    """The manager thread this pool replaces is the one that enforces time limits and notices a
    worker that died: both still happen, and the pool goes on."""
    pool = _a_pool_that_worked(workers=1)
    try:
        with pytest.raises(FutureTimeout):
            pool.schedule(cpu_tasks.sleep_for, (30,), timeout=0.5).result(timeout=20)
        with pytest.raises(ProcessExpired):
            pool.schedule(cpu_tasks.die).result(timeout=20)
        assert pool.schedule(cpu_tasks.square, (5,)).result(timeout=60) == 25
    finally:
        pool.stop()
        pool.join(timeout=60)


def test_a_pebble_without_the_parts_reused_gets_pebbles_own_pool(monkeypatch):
    monkeypatch.setattr(prompt_pool, "_PEBBLE_KNOWN", False)
    pool = _a_pool_that_worked()
    try:
        assert pool._pool_manager_loop._target is not prompt_pool._manager_loop
        assert pool.schedule(cpu_tasks.square, (4,)).result(timeout=60) == 16
    finally:
        pool.stop()
        pool.join(timeout=60)


def test_the_workers_end_before_their_channel_is_closed():
    """Closing a pool's channel unlinks its semaphores; a worker still starting then reads it
    after the unlink and prints a traceback on the command's stderr (``SemLock._rebuild``). So
    no worker may be alive when the channel is closed."""
    pool = _a_pool_that_worked()
    manager = pool._pool_manager.worker_manager
    workers = list(manager.workers.values())
    alive_at_close: list[bool] = []
    close = manager.close_channels

    def closing() -> None:
        alive_at_close.extend(worker.is_alive() for worker in workers)
        close()

    manager.close_channels = closing
    pool.stop()
    pool.join(timeout=60)
    assert alive_at_close == [False] * len(workers)
