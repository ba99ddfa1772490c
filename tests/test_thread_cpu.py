"""``infra.bench.thread_cpu``: the main process's CPU by thread, for ``doclake bench pipeline``."""

from __future__ import annotations

import hashlib
import os
import threading
import time

import pytest

from infra.bench.thread_cpu import ThreadCpu, thread_group

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/task"),
                                reason="thread CPU is read from /proc/self/task (Linux)")


def _spin(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def _spin_in_c(seconds: float) -> None:
    """CPU with the GIL let go (sha256 of a megabyte at a time), as a parser or an encoder
    spends it: the sampler, a Python thread, is not starved by it."""
    data = b"x" * (1 << 20)
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        hashlib.sha256(data).digest()


def test_names_are_grouped_by_pool_or_target_not_number():
    assert thread_group("lake-writer_3") == "lake-writer"
    assert thread_group("ThreadPoolExecutor-12_0") == "ThreadPoolExecutor"
    assert thread_group("Thread-3 (message_manager_loop)") == "message_manager_loop"
    assert thread_group("MainThread") == "MainThread"
    assert thread_group("ingest") == "ingest"


def test_cpu_is_added_up_by_thread_and_only_inside_the_block():
    _spin(0.3)  # before the block: not counted
    with ThreadCpu(interval_s=0.02) as cpu:
        workers = [threading.Thread(target=_spin_in_c, args=(0.3,), name=f"busy_{n}")
                   for n in range(2)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        time.sleep(0.05)  # the workers are gone: their last sample stands
        _spin(0.2)
    figures = cpu.by_thread()
    assert 0.45 <= figures["busy"] <= 0.8  # two threads of 0.3 s, 10 ms ticks
    assert 0.15 <= figures["MainThread"] <= 0.35  # the 0.3 s before the block is not in it
    assert figures["other"] >= 0  # what no sample saw: counted there, never lost
    assert list(figures)[0] == "busy"  # largest first
