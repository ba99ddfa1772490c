"""One command as a user runs it: its wall from its start, and its own process's CPU from the OS.

``doclake run`` coordinates the run in one process (the event loop, ingest's thread, the lake's
writers) and parses in worker processes. The coordinating process's CPU, all its threads, is
the ceiling of one run whatever the cores (``1000 / ms a page`` pages a second), so the bench
reads it from the kernel (``/proc/PID/stat``: ``utime + stime`` of the whole thread group,
threads that ended included) at the moment the process exits: the child is waited for without
being reaped (``waitid(WNOWAIT)``), its figures read, then reaped. Imports, start-up, compaction
after the run and the summary are in it, as a user pays them; the worker processes are not
(they are the forkserver's children, not this process's), nor is anything the bench does.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from dataclasses import dataclass

__all__ = ["CommandFigures", "run_command"]

_TICKS_PER_S = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class CommandFigures:
    wall_s: float
    """From just before the process was started to its exit."""
    cpu_s: float
    """The process's own CPU, user and system, every thread; no child processes."""
    peak_rss_mb: float | None
    """The process's peak resident memory (``ru_maxrss``; a child it waited for counts if
    larger), where the OS reports it."""
    stdout: str
    started_at: float
    """``time.time()`` when the process was started (to place the run's own timestamps)."""


def _own_cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS_PER_S


def run_command(command: list[str], *, env: dict[str, str] | None = None) -> CommandFigures:
    """Run ``command`` to its end; raise ``RuntimeError`` with its stderr if it fails.

    Linux only (``/proc``): elsewhere the CPU is the children's ``getrusage``, which counts
    the worker processes too."""
    started_at, started = time.time(), time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env=env)
    # Pipes are read on threads while the command runs (a full pipe would block it).
    streams: dict[str, str] = {}

    def drain(name: str, pipe) -> None:
        streams[name] = pipe.read()

    readers = [threading.Thread(target=drain, args=(name, pipe), daemon=True)
               for name, pipe in (("out", process.stdout), ("err", process.stderr))]
    for reader in readers:
        reader.start()
    cpu_s: float | None = None
    peak: float | None = None
    if hasattr(os, "waitid") and os.path.isdir(f"/proc/{process.pid}"):
        os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOWAIT)  # exited, not yet reaped
        wall = time.perf_counter() - started
        cpu_s = _own_cpu_s(process.pid)
        # Reaped here for its rusage: the peak resident memory of the process (a zombie's
        # /proc no longer says), or of a child it waited for if that was larger.
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        peak = usage.ru_maxrss / 1024
    else:  # pragma: no cover - not Linux
        import resource

        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        process.wait()
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    for reader in readers:
        reader.join()
    if process.returncode != 0:
        raise RuntimeError(f"{command[:3]} failed ({process.returncode}): "
                           f"{streams.get('err', '')[-2000:]}")
    return CommandFigures(wall, cpu_s, peak, streams.get("out", ""), started_at)
