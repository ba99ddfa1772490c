"""Where a run's time goes, stage by stage: wrappers around the ports that add up their time.

The runtime wraps its CPU runner, event sink and object store in these, so ``doclake bench
pipeline`` can print the time spent reading, storing, committing events and polling beside the
wall time, with no timing code inside the handlers.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from extract.ports import CpuRunner, EventSink, ObjectStore
from lake.events import Event

__all__ = ["T", "StageTimes", "TimedCpu", "TimedSink", "TimedObjects"]

T = TypeVar("T")


@dataclass
class StageTimes:
    """Seconds and calls per stage; calls overlap, so the seconds add up past the wall time."""

    seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    calls: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    @contextmanager
    def timing(self, stage: str):
        started = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[stage] += time.perf_counter() - started
            self.calls[stage] += 1

    def as_dict(self) -> dict[str, dict[str, float]]:
        return {stage: {"seconds": round(self.seconds[stage], 3), "calls": self.calls[stage]}
                for stage in sorted(self.seconds)}


class TimedCpu:
    def __init__(self, inner: CpuRunner, times: StageTimes):
        self.inner = inner
        self.times = times

    async def run(self, fn: Callable[..., T], *args: Any, timeout_s: float) -> T:
        with self.times.timing(f"cpu:{fn.__name__}"):
            return await self.inner.run(fn, *args, timeout_s=timeout_s)


class TimedSink:
    def __init__(self, inner: EventSink, times: StageTimes):
        self.inner = inner
        self.times = times

    async def commit(self, events: Sequence[Event]) -> None:
        with self.times.timing("commit_events"):
            await self.inner.commit(events)


class TimedObjects:
    """Times writes; everything else passes through untouched."""

    def __init__(self, inner: ObjectStore, times: StageTimes):
        self.inner = inner
        self.times = times

    def put(self, key: str, data: bytes, *, metadata: dict[str, str] | None = None) -> None:
        with self.times.timing("store_put"):
            self.inner.put(key, data, metadata=metadata)

    def put_many(self, objects: Sequence[tuple[str, bytes, dict[str, str] | None]]) -> None:
        with self.times.timing("store_put"):
            self.inner.put_many(objects)

    def put_file(self, key: str, path: Path, *, max_bytes: int | None = None) -> None:
        with self.times.timing("store_put"):
            self.inner.put_file(key, path, max_bytes=max_bytes)

    def put_files(self, files: Sequence[tuple[str, Path]], *, max_bytes: int | None = None,
                  digests: Mapping[str, str] | None = None) -> None:
        with self.times.timing("store_put"):
            self.inner.put_files(files, max_bytes=max_bytes, digests=digests)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
