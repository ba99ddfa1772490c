"""One home, one writer: ``run``, ``worker`` and ``serve`` hold an exclusive lock on
``<home>/writer.lock`` while they work.

Two runs on one home once both finished, but each counted the other's pages as "read by this
run" (519 + 78 against 519 pages in the lake): the summary is a run's own only when no one else
writes. The lock is the kernel's (``flock``), so it is released on any exit, a crash or a
``kill -9`` included; the file keeps the holder's pid and command only to name it in the
refusal, and a file left by a process that is gone is simply taken over.
"""

from __future__ import annotations

import fcntl
import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["LOCK_NAME", "HomeBusy", "WriterLock", "release_all"]

LOCK_NAME = "writer.lock"


class HomeBusy(RuntimeError):
    """Another live process holds the home's writer lock."""

    def __init__(self, home: Path, holder: str):
        super().__init__(f"{home} is being written by another doclake ({holder})")
        self.home = home
        self.holder = holder


@dataclass
class WriterLock:
    """The held lock; ``release`` is idempotent (the kernel releases it at exit anyway)."""

    path: Path
    fd: int | None

    @classmethod
    def acquire(cls, home: Path, command: str) -> WriterLock:
        """Take the lock without waiting, or raise ``HomeBusy`` naming the holder."""
        path = home / LOCK_NAME
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise HomeBusy(home, holder) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {command}\n".encode(), 0)
        lock = cls(path, fd)
        _HELD.append(lock)
        return lock

    def release(self) -> None:
        if self.fd is None:
            return
        try:
            os.ftruncate(self.fd, 0)  # no stale name for the next reader
        finally:
            os.close(self.fd)  # closing the only descriptor drops the flock
            self.fd = None


_HELD: list[WriterLock] = []


def release_all() -> None:
    """Release every lock this process holds: the command line calls it when a command ends
    (a test's in-process run, then the next, on one home)."""
    while _HELD:
        _HELD.pop().release()


def _holder(fd: int) -> str:
    """'pid N, doclake run' from the lock file; what a refusal shows of the other process."""
    text = os.pread(fd, 200, 0).decode(errors="replace").strip()
    pid, _, command = text.partition(" ")
    if not pid.isdigit():
        return "a process that has just started"
    return f"pid {pid}, {command}" if command else f"pid {pid}"
