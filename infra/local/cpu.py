"""CPU work in killable processes: a stuck or crashed parse costs one retry of its own message.

PDFium is not thread-safe and a hostile file can loop or crash it; in a separate process neither
reaches the event loop. The pool is pebble's: each call's time limit counts from the moment the
call starts in its worker process (not while it waits for a free one), and on expiry pebble kills
that one process and starts a fresh one, so the calls running beside it are untouched. The caller
gets a ``WorkerTimeout`` (or a ``TransientError`` for a process that died), which the handler turns
into a retry of that message only.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import threading
from collections.abc import Callable
from concurrent.futures import CancelledError as FutureCancelled
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

from pebble import ProcessExpired, ProcessPool

from extract.errors import TransientError, WorkerTimeout

T = TypeVar("T")
log = logging.getLogger(__name__)

# Modules every worker needs: imported once in the fork server, inherited by every worker it
# starts (a worker replaced after a timeout is ready in milliseconds, not after a fresh import).
# They are the modules of the functions the lanes run and of the objects sent with them (the
# readers, the handlers' pool calls, ingest's file work, the stores a worker writes to): a
# worker unpickles a call by importing its function's module, and before these were preloaded
# each fresh worker paid that import (0.2 s) on its first call. A burst's first ten renders
# for a model waited 0.43 to 0.51 s each for it (3 to 20 ms afterwards).
PRELOAD = ["pypdfium2", "extract.formats.pdf", "extract.readers", "extract.handlers.split",
           "extract.handlers.index", "extract.handlers.sheet", "ingest.fingerprint",
           "infra.local.search", "infra.local.objectstore"]


# What one parser process may write in one file: decrypted copies are bounded by the file-size
# setting (512 MiB by default), so 2 GiB stops only a runaway, before it fills the disk.
MAX_WORKER_FILE_BYTES = 2 * 1024**3


def _limit_worker() -> None:
    """In each worker process, once: no core files (a crashing parser's memory is document
    content, and would land in the working folder) and a file-size limit (``RLIMIT_FSIZE``)."""
    import resource

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    limit = MAX_WORKER_FILE_BYTES if hard == resource.RLIM_INFINITY else min(
        MAX_WORKER_FILE_BYTES, hard)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))


def _warm_up() -> None:
    import pypdfium2  # noqa: F401  (the import is the warm-up)


class ProcessPoolRunner:
    """``CpuRunner`` on a pebble process pool of ``workers`` processes."""

    def __init__(self, workers: int, warm_up: Callable[[], object] | None = None):
        self.workers = max(1, workers)
        self.warm_up = warm_up or _warm_up  # what ``warm`` runs in each process
        self._pool: ProcessPool | None = None
        self._lock = threading.Lock()
        # ``run`` calls not yet returned (the event loop's; ingest's ``call`` is not counted):
        # above ``workers``, calls wait for a process (the runtime's ``_note_saturation``).
        self.in_flight = 0

    def _get_pool(self) -> ProcessPool:
        with self._lock:
            if self._pool is None or not self._pool.active:
                context = multiprocessing.get_context("forkserver")
                context.set_forkserver_preload(PRELOAD)
                self._pool = ProcessPool(max_workers=self.workers, context=context,
                                         initializer=_limit_worker)
            return self._pool

    def warm(self) -> None:
        """Start the worker processes now (they import PDFium), while the caller does other work."""
        pool = self._get_pool()
        for _ in range(self.workers):
            pool.schedule(self.warm_up)

    def _schedule(self, fn: Callable[..., T], args: tuple, timeout_s: float | None):
        pool = self._get_pool()
        try:
            return pool, pool.schedule(fn, args=args, timeout=timeout_s)
        except RuntimeError:  # pebble: "the pool is not active" between the check and the call
            self._discard(pool)
            pool = self._get_pool()
            return pool, pool.schedule(fn, args=args, timeout=timeout_s)

    def _failed(self, pool: ProcessPool, fn: Callable, timeout_s: float | None,
                error: BaseException) -> BaseException:
        """The error a caller gets for a call the pool (not the call itself) failed."""
        if isinstance(error, TimeoutError):
            return WorkerTimeout(f"{fn.__name__} ran past {timeout_s:g} s")
        if isinstance(error, ProcessExpired):
            return TransientError(f"the worker process died (exit code {error.exitcode})",
                                  error_type="worker_crashed")
        self._discard(pool)  # BrokenProcessPool: the pool itself broke; start again, retry
        return TransientError(f"the process pool broke: {error}", error_type="worker_crashed")

    def call(self, fn: Callable[..., T], *args: Any, timeout_s: float | None = None) -> T:
        """``run`` for a caller on a thread of its own (ingest's), blocking until the call ends;
        without ``timeout_s``, the call has no time limit."""
        pool, future = self._schedule(fn, args, timeout_s)
        try:
            return future.result()
        except FutureCancelled:  # the pool was stopped (its run ended) before the call was done
            raise TransientError(f"{fn.__name__} was cancelled: its pool stopped",
                                 error_type="cancelled") from None
        except (TimeoutError, ProcessExpired, BrokenProcessPool) as error:
            if isinstance(error, TimeoutError) and timeout_s is None:
                raise  # no time limit was set: the call's own error
            raise self._failed(pool, fn, timeout_s, error) from None

    async def run(self, fn: Callable[..., T], *args: Any, timeout_s: float) -> T:
        self.in_flight += 1
        try:
            return await self._run(fn, *args, timeout_s=timeout_s)
        finally:
            self.in_flight -= 1

    async def _run(self, fn: Callable[..., T], *args: Any, timeout_s: float) -> T:
        pool, future = self._schedule(fn, args, timeout_s)
        try:
            return await asyncio.wrap_future(future)
        except (TimeoutError, ProcessExpired, BrokenProcessPool) as error:
            raise self._failed(pool, fn, timeout_s, error) from None
        except asyncio.CancelledError:
            # Our caller cancelled: wrap_future has cancelled the call too (pebble kills its
            # process). A call cancelled by anyone else is a retry, never a dead worker task.
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise
            raise TransientError(f"{fn.__name__} was cancelled", error_type="cancelled") from None
        # Anything else was raised by the call itself (pypdfium2's PdfiumError, a
        # NotImplementedError, a RecursionError are RuntimeErrors too): it is that call's error,
        # never a reason to stop the pool and the calls running beside it.

    def _discard(self, pool: ProcessPool) -> None:
        with self._lock:
            if self._pool is pool:
                self._pool = None
        pool.stop()

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.stop()
            pool.join(timeout=10)
