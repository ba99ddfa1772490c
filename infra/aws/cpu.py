"""CPU work on Lambda: in one thread beside the event loop. One invocation is one process already,
and Lambda's own timeout ends a runaway parse; ``timeout_s`` still frees the handler to record a
timeout. One thread, not many: pdfium is not thread-safe, and a function has one or two vCPUs
(concurrency comes from the number of functions, not from threads)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from extract.errors import WorkerTimeout

T = TypeVar("T")


class ThreadRunner:
    def __init__(self) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cpu")

    async def run(self, fn: Callable[..., T], *args: Any, timeout_s: float) -> T:
        loop = asyncio.get_running_loop()
        try:
            return await asyncio.wait_for(loop.run_in_executor(self._executor, fn, *args),
                                          timeout=timeout_s)
        except TimeoutError:
            raise WorkerTimeout(f"{getattr(fn, '__name__', fn)} ran past {timeout_s:g} s") from None

    def close(self) -> None:
        self._executor.shutdown(wait=False)
