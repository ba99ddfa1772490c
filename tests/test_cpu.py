"""CPU work in killable processes: a stuck or crashed parse costs one retry, not the run."""

from __future__ import annotations

import cpu_tasks
import pytest

from extract.errors import TransientError, WorkerTimeout
from infra.local.cpu import ProcessPoolRunner


async def test_a_stuck_call_times_out_and_the_pool_recovers():
    runner = ProcessPoolRunner(1)
    try:
        with pytest.raises(WorkerTimeout, match="sleep_for ran past 0.5 s"):
            await runner.run(cpu_tasks.sleep_for, 30, timeout_s=0.5)
        assert await runner.run(cpu_tasks.square, 7, timeout_s=30) == 49
    finally:
        runner.close()


async def test_a_crashed_worker_is_a_transient_error_and_the_pool_recovers():
    runner = ProcessPoolRunner(1)
    try:
        with pytest.raises(TransientError) as caught:
            await runner.run(cpu_tasks.die, timeout_s=30)
        assert caught.value.error_type == "worker_crashed"
        assert await runner.run(cpu_tasks.square, 3, timeout_s=30) == 9
    finally:
        runner.close()
