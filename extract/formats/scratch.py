"""Scratch folders that belong to the process that made them, and a sweep of the orphans.

A conversion copies the document into ``$TMPDIR/doclake-convert-*/in/``, a decryption writes a
decrypted copy, a workbook may be unpacked: each is removed when its step ends, and the
LibreOffice template profile when its process exits. A process killed with ``kill -9`` runs no
``finally`` and no ``atexit``, and its folders (a copy of a document among them) would stay.
So every such folder carries its owner's process id in its name
(``doclake-<kind>-<pid>-<random>``), and ``sweep_orphans`` removes the ones whose owner is gone:
the local runtime sweeps when it starts (``run``, ``worker`` and ``serve``: the commands that
write; the read-only ones write nothing, so they sweep nothing), and every process sweeps once
before its first conversion. A converter such a process left running (where no PID namespace
ended it) is killed first.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import signal
import tempfile
from pathlib import Path

from extract.processes import process_alive

__all__ = ["log", "scratch_folder", "scratch_prefix", "sweep_orphans"]

log = logging.getLogger(__name__)

_OWNED = re.compile(r"^doclake-(?:convert|lo-template|decrypt|sheet|image)-(\d+)-")


def scratch_folder(kind: str) -> Path:
    """A new private folder ``$TMPDIR/doclake-<kind>-<pid>-<random>`` (mode 0700)."""
    return Path(tempfile.mkdtemp(prefix=scratch_prefix(kind)))


def scratch_prefix(kind: str) -> str:
    """The name prefix of this process's folders of ``kind`` (for ``TemporaryDirectory``)."""
    return f"doclake-{kind}-{os.getpid()}-"


def _end_converter(folder: Path) -> None:
    """Kill what a dead process's converter left running in ``folder``: every process of its
    process group (the id in ``converter.pid``) that still names the folder on its command line.

    The group, not only its first process: a ``kill -9`` in the moment bwrap sets its sandbox
    up (before its init has a parent-death signal) leaves that init, and the converter under
    it, running with the first process gone. A process that does not name the folder (a reused
    id) is left alone."""
    try:
        group = int((folder / "converter.pid").read_text() or 0)
    except (OSError, ValueError):
        return
    if group <= 1:
        return
    for pid in _group_members(group):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if str(folder).encode() in command:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def _group_members(group: int) -> list[int]:
    """The processes of process group ``group`` (from ``/proc``; none where there is no /proc)."""
    members = []
    try:
        entries = [entry for entry in os.scandir("/proc") if entry.name.isdigit()]
    except OSError:
        return members
    for entry in entries:
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid pgrp ...: the name may hold spaces and parentheses
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 2 and fields[2] == str(group):
            members.append(int(entry.name))
    return members


def sweep_orphans(folder: str | os.PathLike[str] | None = None) -> list[str]:
    """Remove the scratch folders in ``folder`` (``$TMPDIR``) owned by this user whose process
    is gone; returns their paths. A live process's folders, another user's, and anything not
    named by ``scratch_folder`` are left alone (a reused process id only delays a removal)."""
    root = Path(folder or tempfile.gettempdir())
    removed: list[str] = []
    try:
        entries = list(os.scandir(root))
    except OSError:
        return removed
    for entry in entries:
        owned = _OWNED.match(entry.name)
        if owned is None or int(owned.group(1)) == os.getpid():
            continue
        try:
            if not entry.is_dir(follow_symlinks=False) or \
                    entry.stat(follow_symlinks=False).st_uid != os.geteuid():
                continue
        except OSError:
            continue
        if not process_alive(int(owned.group(1))):
            _end_converter(Path(entry.path))
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(entry.path)
    if removed:
        log.info("removed %d scratch folders left by processes that are gone", len(removed))
    return removed
