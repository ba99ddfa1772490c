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
import contextlib
import logging
import threading
from collections.abc import Callable
from concurrent.futures import CancelledError as FutureCancelled
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

from pebble import ProcessExpired, ProcessPool

from extract.errors import TransientError, WorkerTimeout
from infra.local.cpu_priority import PriorityGate, call_key
from infra.local.forkserver import PRELOAD, context
from infra.local.prompt_pool import PromptStopPool

__all__ = ["PRELOAD", "ProcessPoolRunner"]

T = TypeVar("T")
log = logging.getLogger(__name__)

STOPPED_POOL_CHECK_S = 0.5
"""How often a blocking ``call`` checks that its pool has not been stopped meanwhile."""

# What one parser process may write in one file: decrypted copies are bounded by the file-size
# setting (512 MiB by default), so 2 GiB stops only a runaway, before it fills the disk.
MAX_WORKER_FILE_BYTES = 2 * 1024**3


def _limit_worker(nice: int = 0) -> None:
    """In each worker process, once: no core files (a crashing parser's memory is document
    content, and would land in the working folder), a file-size limit (``RLIMIT_FSIZE``), and
    the lane's scheduling priority (``nice``: the programs it starts, tesseract, inherit it),
    and the home's umask (077): a fork server started before the home was made private hands
    its children the umask of that moment, and workers write into the home (compacted lake
    files among them)."""
    import os
    import resource

    os.umask(0o077)  # infra.local.private_home.PRIVATE_UMASK
    if nice:
        os.nice(nice)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    limit = MAX_WORKER_FILE_BYTES if hard == resource.RLIM_INFINITY else min(
        MAX_WORKER_FILE_BYTES, hard)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))


def _warm_up() -> None:
    import pypdfium2  # noqa: F401  (the import is the warm-up)


class ProcessPoolRunner:
    """``CpuRunner`` on a pebble process pool of ``workers`` processes."""

    def __init__(self, workers: int, warm_up: Callable[[], object] | None = None, *,
                 nice: int = 0, admitted: int | None = None):
        """``nice``: added to each worker process's niceness (lower priority): its calls take
        only the CPU that calls of other lanes leave. ``admitted``: the event loop's calls
        (``run``) handed to the pool at once (default: two a process, one running and one
        ready beside it); the others wait in ``infra.local.cpu_priority``'s order, the work of
        the document with the least pages left first, not in the order they were made."""
        self.workers = max(1, workers)
        self.gate = PriorityGate(admitted or 2 * self.workers)
        self.nice = nice
        self.warm_up = warm_up or _warm_up  # what ``warm`` runs in each process
        self._pool: ProcessPool | None = None
        self._lock = threading.Lock()
        # Set once a call has been handed to a worker process: the pool's processes exist, so a
        # call no longer waits for them to start (``started``).
        self._started = threading.Event()
        # ``run`` calls not yet returned (the event loop's; ingest's ``call`` is not counted):
        # above ``workers``, calls wait for a process (the runtime's ``_note_saturation``).
        self.in_flight = 0
        # Called on the event loop each time a call here ends (``LanedCpu``: a process of the
        # documents lane left idle takes a rules call waiting for the short lane).
        self.after_release: Callable[[], object] | None = None

    def _get_pool(self) -> ProcessPool:
        with self._lock:
            if self._pool is None or not self._pool.active:
                self._pool = PromptStopPool(max_workers=self.workers, context=context(),
                                            initializer=_limit_worker, initargs=(self.nice,))
            return self._pool

    @property
    def started(self) -> bool:
        """Whether the worker processes exist (a call is then not held up by their start)."""
        return self._started.is_set()

    def warm(self, warm_up: Callable[[], object] | None = None) -> None:
        """Start the worker processes now, each running ``warm_up`` (default: the runner's),
        while the caller does other work. Blocks while the processes are forked (the fork
        server's imports, the first time): ``LanedCpu.warm`` calls it on a thread."""
        pool = self._get_pool()
        for _ in range(self.workers):
            pool.schedule(warm_up or self.warm_up)
        self._started.set()

    def _schedule(self, fn: Callable[..., T], args: tuple, timeout_s: float | None):
        pool = self._get_pool()
        try:
            future = pool.schedule(fn, args=args, timeout=timeout_s)
        except RuntimeError:  # pebble: "the pool is not active" between the check and the call
            self._discard(pool)
            pool = self._get_pool()
            future = pool.schedule(fn, args=args, timeout=timeout_s)
        self._started.set()
        return pool, future

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

    def submit(self, fn: Callable[..., object], *args: Any) -> None:
        """Start ``fn(*args)`` in a worker and return at once; its outcome is not waited for
        (a warm-up: a failure only means the later call pays for what it would have done)."""
        try:
            self._schedule(fn, args, None)
        except Exception as error:  # noqa: BLE001 - see above
            log.debug("%s not started in a worker: %r", getattr(fn, "__name__", fn), error)

    def call(self, fn: Callable[..., T], *args: Any, timeout_s: float | None = None) -> T:
        """``run`` for a caller on a thread of its own (ingest's), blocking until the call ends;
        without ``timeout_s``, the call has no time limit."""
        pool, future = self._schedule(fn, args, timeout_s)
        try:
            # Waited for a little at a time: a pool stopped while this call was in it (the end
            # of a run, from another thread) can leave its future pending for good, and ingest's
            # thread then held the command's exit forever.
            while not future.done():
                with contextlib.suppress(TimeoutError):
                    future.result(timeout=STOPPED_POOL_CHECK_S)
                if not future.done() and (self._pool is not pool or not pool.active):
                    raise FutureCancelled
            return future.result()
        except FutureCancelled:  # the pool was stopped (its run ended) before the call was done
            raise TransientError(f"{fn.__name__} was cancelled: its pool stopped",
                                 error_type="cancelled") from None
        except (TimeoutError, ProcessExpired, BrokenProcessPool) as error:
            if isinstance(error, TimeoutError) and timeout_s is None:
                raise  # no time limit was set: the call's own error
            raise self._failed(pool, fn, timeout_s, error) from None

    async def run(self, fn: Callable[..., T], *args: Any, timeout_s: float) -> T:
        key = call_key()
        self.in_flight += 1
        try:
            await self.gate.acquire(key)
        except BaseException:
            self.in_flight -= 1
            raise
        return await self.run_admitted(fn, *args, timeout_s=timeout_s, key=key, counted=True)

    async def run_admitted(self, fn: Callable[..., T], *args: Any, timeout_s: float, key: float,
                           counted: bool = False) -> T:
        """``fn(*args)`` in this pool, its slot already admitted by this runner's gate with
        ``key`` (by ``run``, or handed over from another lane's: ``PriorityGate.hand_over``),
        and released here when it ends. ``counted``: already in ``in_flight``."""
        if not counted:
            self.in_flight += 1
        try:
            return await self._run(fn, *args, timeout_s=timeout_s)
        finally:
            self.gate.release(key)
            self.in_flight -= 1
            if self.after_release is not None:
                self.after_release()

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
                self._started.clear()
        pool.stop()

    def close(self) -> None:
        stopped = self.stop()
        if stopped is not None:
            stopped.join(timeout=10)

    def stop(self) -> ProcessPool | None:
        """Stop the pool without waiting for its threads and processes to end; the pool
        stopped, to ``join`` (``LanedCpu.close`` stops every lane, then waits for them
        together; a ``PromptStopPool`` ends at once, where pebble's own waited for its manager
        thread's next look, up to 0.1 s a pool)."""
        with self._lock:
            pool, self._pool = self._pool, None
            self._started.clear()
        if pool is not None:
            pool.stop()
        return pool
