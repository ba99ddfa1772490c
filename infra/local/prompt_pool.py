"""pebble's process pool, with a stop its manager thread hears at once.

pebble's ``ProcessPool`` watches its workers (time limits, deaths) from a thread that sleeps
``CONSTS.sleep_unit`` (0.1 s) between looks, and ``join`` waits for that thread before it ends
the workers: every pool joined at the end of a run cost up to a tenth of a second of nothing
(0.05 to 0.1 s at the end of each ``doclake run``, measured between the last document's
indexing and the command's exit). A shorter sleep unit would end that wait but costs CPU all
along (22 ms a second at 0.02 s with three pools idle). ``PromptStopPool`` keeps pebble's look
every 0.1 s and replaces only the sleep by a wait on an event that ``stop`` sets: the thread
wakes, sees the pool stopped and ends, and ``join`` goes on to the workers at once.

Its stop also ends the workers before it closes their channel (``_stop_pool``): pebble closed
the channel first, which unlinks the channel's semaphores, and then ended the workers one by
one; a worker forked a moment before, still starting, reached the channel after the unlink
and printed a traceback on the command's stderr.

Everything else is pebble's own: its scheduler and message threads, its workers, its time
limits. Should a pebble release rename the parts this reuses, the pool is pebble's unchanged
(it then waits and stops as before; nothing else breaks).
"""

from __future__ import annotations

import inspect
import threading
from concurrent.futures.process import BrokenProcessPool

import pebble.pool.process as pebble_process
from pebble import ProcessPool
from pebble.common import CONSTS

__all__ = ["PromptStopPool"]

# The parts of pebble 5 this relies on, checked once rather than assumed.
_REUSED = ("launch_thread", "task_scheduler_loop", "message_manager_loop", "PoolStatus")


def _pebble_known() -> bool:
    if not (all(hasattr(pebble_process, name) for name in _REUSED)
            and all(hasattr(ProcessPool, name) for name in ("_start_pool", "_stop_pool"))
            and hasattr(pebble_process.PoolManager, "stop")
            and all(hasattr(pebble_process.WorkerManager, name)
                    for name in ("force_stop_workers", "close_channels"))):
        return False
    parameters = list(inspect.signature(pebble_process.launch_thread).parameters)
    return parameters[:3] == ["name", "function", "daemon"]


_PEBBLE_KNOWN = _pebble_known()


def _manager_loop(pool_manager, stopped: threading.Event) -> None:
    """pebble's ``pool_manager_loop``, waking at a stop rather than at the end of its sleep."""
    try:
        while pool_manager.context.alive and not pebble_process.GLOBAL_SHUTDOWN:
            pool_manager.update_status()
            stopped.wait(CONSTS.sleep_unit)
    except BrokenProcessPool as error:
        pool_manager.handle_broken_pool(error)


class PromptStopPool(ProcessPool):
    """``ProcessPool`` whose ``stop`` wakes its manager thread (see the module's docstring)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._stopped = threading.Event()

    def _start_pool(self) -> None:
        if not _PEBBLE_KNOWN:
            super()._start_pool()
            return
        with self._context.status_mutex:
            if self._context.status == pebble_process.PoolStatus.CREATED:
                self._pool_manager.start()
                launch = pebble_process.launch_thread
                self._task_scheduler_loop = launch(
                    None, pebble_process.task_scheduler_loop, True, self._pool_manager)
                self._pool_manager_loop = launch(
                    None, _manager_loop, True, self._pool_manager, self._stopped)
                self._message_manager_loop = launch(
                    None, pebble_process.message_manager_loop, True, self._pool_manager)
                self._loops = (self._task_scheduler_loop, self._pool_manager_loop,
                               self._message_manager_loop)
                self._context.status = pebble_process.PoolStatus.RUNNING

    def stop(self) -> None:
        super().stop()
        self._stopped.set()

    def _stop_pool(self) -> None:
        """pebble's ``_stop_pool`` with the workers ended before their channel is closed.

        Closing a channel unlinks its semaphores (``WorkerChannel.close``), and a worker that
        has not yet read its channel rebuilds them from their names: pebble closed the channels
        and then ended the workers one at a time, each waited for, so a worker forked a moment
        before the stop (a lane warmed as a short run ended, its process still importing the
        command's main module) read its channel after the unlink and printed
        ``FileNotFoundError`` from ``SemLock._rebuild`` on the command's stderr: 4 runs in 60 of
        ``doclake run`` on a folder it had read before. Ended first, no worker is left to read
        it."""
        if not _PEBBLE_KNOWN:
            super()._stop_pool()
            return
        if self._pool_manager_loop is not None:
            self._pool_manager_loop.join()
        self._pool_manager.worker_manager.force_stop_workers()
        self._pool_manager.stop()  # closes the channels; its own stop of the workers finds none
        if self._task_scheduler_loop is not None:
            self._task_scheduler_loop.join()
        if self._message_manager_loop is not None:
            self._message_manager_loop.join()
