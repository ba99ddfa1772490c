"""The main process's CPU by thread: which of its threads hold the ceiling of one run.

``main_cpu_ms_per_page`` says what the main process costs a page, all its threads together; the
ceiling it sets (``1000 / ms`` pages a second, whatever the cores) moves only when the right
thread gets cheaper. A run's main process is the event loop (handlers, poller, receiver) beside
threads of its own: ingest and its hashing threads, the lake's writers and group commit,
background compaction and its read pools, pebble's scheduler and message threads. Sampled from
``/proc/self/task`` (Linux) ten times a second and once at the end; CPU of a thread that began
and ended between two samples is in ``other`` (the process's total less every thread seen). The
sampler is a Python thread: threads that hold the GIL for long can delay it, and the CPU of one
that ends meanwhile lands in ``other`` too, never lost.
"""

from __future__ import annotations

import os
import re
import resource
import threading
from collections import Counter
from types import TracebackType

__all__ = ["SAMPLE_S", "thread_group", "process_cpu_s", "ThreadCpu"]

SAMPLE_S = 0.1
_TICKS_PER_S = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

_POOL_SUFFIX = re.compile(r"[-_]\d+(_\d+)?$")  # ThreadPoolExecutor-0_3, lake-writer_1, asyncio_0
_TARGET = re.compile(r"^Thread-\d+ \((.+)\)$")  # Thread-3 (message_manager_loop): pebble's


def thread_group(name: str) -> str:
    """The name a thread's CPU is added up under: its pool's or its target's, not its number."""
    target = _TARGET.match(name)
    return target.group(1) if target else _POOL_SUFFIX.sub("", name)


def _thread_cpu_s(native_id: int) -> float | None:
    """User and system CPU seconds of one thread of this process, or None once it is gone."""
    try:
        with open(f"/proc/self/task/{native_id}/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / _TICKS_PER_S


def process_cpu_s() -> float:
    """CPU seconds of this process and its threads; its child processes (the pool's) are not
    counted."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class ThreadCpu:
    """``with ThreadCpu() as cpu: ...`` then ``cpu.by_thread()``: CPU seconds spent inside the
    block, by thread group; empty where ``/proc/self/task`` is not there."""

    def __init__(self, interval_s: float = SAMPLE_S):
        self.interval_s = interval_s
        self._available = os.path.isdir("/proc/self/task")
        self._baseline: dict[int, float] = {}  # threads alive at the start: their CPU then
        self._last: dict[int, tuple[str, float]] = {}  # every thread seen: name, latest CPU
        self._stop = threading.Event()
        self._sampler: threading.Thread | None = None
        self._started_cpu = 0.0
        self._total = 0.0

    def __enter__(self) -> ThreadCpu:
        if not self._available:
            return self
        self._sample()
        self._baseline = {tid: cpu for tid, (_, cpu) in self._last.items()}
        self._started_cpu = process_cpu_s()
        self._sampler = threading.Thread(target=self._run, name="bench-sampler", daemon=True)
        self._sampler.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if self._sampler is None:
            return
        self._stop.set()
        self._sampler.join()
        self._sample()
        self._total = process_cpu_s() - self._started_cpu

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._sample()

    def _sample(self) -> None:
        for thread in threading.enumerate():
            if thread is self._sampler or thread.native_id is None:
                continue
            cpu = _thread_cpu_s(thread.native_id)
            if cpu is not None:
                self._last[thread.native_id] = (thread.name, cpu)

    def by_thread(self) -> dict[str, float]:
        """CPU seconds by thread group, largest first, and ``other``: what no sample saw (short
        threads, and the sampler's own)."""
        if not self._last:
            return {}
        groups: Counter[str] = Counter()
        for tid, (name, cpu) in self._last.items():
            groups[thread_group(name)] += cpu - self._baseline.get(tid, 0.0)
        figures = {name: round(seconds, 3) for name, seconds in groups.most_common()}
        figures["other"] = round(max(0.0, self._total - sum(groups.values())), 3)
        return figures
