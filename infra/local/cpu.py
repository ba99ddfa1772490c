"""CPU work in a pool of processes that can be killed: a stuck or crashed parse costs one retry.

PDFium is not thread-safe and a hostile file can loop or crash it; in a separate process neither
reaches the event loop. On a timeout or a dead worker the pool is torn down and rebuilt, and the
caller gets a ``TransientError`` so the message is retried (and fails for good at its last try).
"""

from __future__ import annotations

import asyncio
import multiprocessing
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

from extract.errors import TransientError, WorkerTimeout

T = TypeVar("T")


def _warm_up() -> None:
    import pypdfium2  # noqa: F401  (the import is the warm-up)


class ProcessPoolRunner:
    def __init__(self, workers: int):
        self.workers = max(1, workers)
        self._pool: ProcessPoolExecutor | None = None

    def _get_pool(self) -> ProcessPoolExecutor:
        if self._pool is None:
            context = multiprocessing.get_context("forkserver")
            self._pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=context)
        return self._pool

    def _reset(self) -> None:
        pool, self._pool = self._pool, None
        if pool is None:
            return
        for process in list(getattr(pool, "_processes", {}).values()):
            process.kill()
        pool.shutdown(wait=False, cancel_futures=True)

    def warm(self) -> None:
        """Start the worker processes now (they import PDFium), while the caller does other work."""
        pool = self._get_pool()
        for _ in range(self.workers):
            pool.submit(_warm_up)

    async def run(self, fn: Callable[..., T], *args: Any, timeout_s: float) -> T:
        loop = asyncio.get_running_loop()
        pool = self._get_pool()
        try:
            future = loop.run_in_executor(pool, fn, *args)
            return await asyncio.wait_for(future, timeout=timeout_s)
        except TimeoutError:
            if self._pool is pool:
                self._reset()
            raise WorkerTimeout(f"{fn.__name__} ran past {timeout_s:g} s") from None
        except BrokenProcessPool:
            if self._pool is pool:
                self._reset()
            raise TransientError("a worker process died", error_type="worker_crashed") from None

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
