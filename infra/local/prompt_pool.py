"""pebble's process pool, with a stop its manager thread hears at once.

pebble's ``ProcessPool`` watches its workers (time limits, deaths) from a thread that sleeps
``CONSTS.sleep_unit`` (0.1 s) between looks, and ``join`` waits for that thread before it ends
the workers: every pool joined at the end of a run cost up to a tenth of a second of nothing
(0.05 to 0.1 s at the end of each ``doclake run``, measured between the last document's
indexing and the command's exit). A shorter sleep unit would end that wait but costs CPU all
along (22 ms a second at 0.02 s with three pools idle). ``PromptStopPool`` keeps pebble's look
every 0.1 s and replaces only the sleep by a wait on an event that ``stop`` sets: the thread
wakes, sees the pool stopped and ends, and ``join`` goes on to the workers at once.

Everything else is pebble's own: its scheduler and message threads, its workers, its time
limits. Should a pebble release rename the parts this reuses, the pool is pebble's unchanged
(it then waits as before; nothing breaks).
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
            and hasattr(ProcessPool, "_start_pool")):
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
