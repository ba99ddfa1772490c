"""CPU work on Lambda: each call in a child process of its own, over pipes, killed at its time
limit.

Lambda has no ``/dev/shm``, so ``multiprocessing`` pools and queues (POSIX semaphores) do not
start there; a plain child process with its stdin and stdout as pipes does. One thread beside the
event loop (the earlier design) could not stop a parse that ran past its limit: the thread kept
parsing, and every other record of the batch queued behind it, timed out too and spent a
delivery each. A child per call is killed at its limit (``WorkerTimeout``); a child that dies
(PDFium's crash, memory) is a ``TransientError``; the calls beside it are untouched. pdfium is not
thread-safe either, which a process per call settles too.

The child (``infra.aws.cpu_child``) reads the pickled ``sys.path`` then ``(fn, args)`` from stdin and
writes one pickled ``(ok, value)`` to stdout. Starting an interpreter costs some tens of
milliseconds plus the function's imports; a read unit's parse takes longer, and a Lambda function
has one or two vCPUs, so ``workers`` (the calls run at once) defaults to the CPUs seen, at
least two, so that one stuck parse never holds the only slot.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pickle
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from extract.errors import TransientError, WorkerTimeout

__all__ = ["T", "CHILD", "default_workers", "SubprocessRunner"]

T = TypeVar("T")
CHILD = "infra.aws.cpu_child"


def default_workers() -> int:
    return max(2, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
               else os.cpu_count() or 2)


class SubprocessRunner:
    """``CpuRunner`` with one child process per call (no pool, no semaphores, no shared memory).

    ``timeout_s`` counts from the moment the call's child starts, not while the call waits for
    one of the ``workers`` slots."""

    process_per_call = True
    """Each call pays a Python start and its imports: work of a few milliseconds is better done
    in the handler's own process (``extract.fields.kinds.applicability_in_worker``)."""

    def __init__(self, workers: int | None = None, *, python: str = sys.executable):
        self.workers = workers or default_workers()
        self.python = python
        self._slots: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.pids: list[int] = []
        """Every child started (for tests and logs: each is gone once its call returns)."""

    def _gate(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        if self._slots is None or self._loop is not loop:  # one Lambda invocation, one loop
            self._slots, self._loop = asyncio.Semaphore(self.workers), loop
        return self._slots

    async def run(self, fn: Callable[..., T], *args: Any, timeout_s: float) -> T:
        name = getattr(fn, "__name__", repr(fn))
        payload = (pickle.dumps(list(sys.path)) + pickle.dumps((fn, args),
                                                                protocol=pickle.HIGHEST_PROTOCOL))
        async with self._gate():
            child = await asyncio.create_subprocess_exec(
                self.python, "-m", CHILD, stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)})
            self.pids.append(child.pid)
            try:
                out, err = await asyncio.wait_for(child.communicate(payload), timeout=timeout_s)
            except TimeoutError:
                raise WorkerTimeout(f"{name} ran past {timeout_s:g} s; its process was "
                                    "killed") from None
            finally:
                if child.returncode is None:  # timed out or cancelled: never left running
                    with contextlib.suppress(ProcessLookupError):
                        child.kill()
                    await child.wait()
        if child.returncode != 0 or not out:
            tail = err.decode("utf-8", "replace")[-500:]
            raise TransientError(f"the worker process died (exit code {child.returncode}): "
                                 f"{tail}", error_type="worker_crashed")
        ok, value = pickle.loads(out)
        if not ok:
            raise value
        return value

    def close(self) -> None:
        """Nothing to stop: no call leaves a process behind."""
