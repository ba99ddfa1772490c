"""A home only its owner can read: 0700 folders and 0600 files, whatever the umask.

The home holds what a data room's owner would not show other users of the machine: originals,
decrypted copies, converted PDFs, page text, the lake, and the passwords of documents in flight
(``jobs.db``). Every command that works in a home calls ``make_private`` first: it sets the
process umask to 077, so everything created afterwards (by us, SQLite, pyarrow, DuckDB or
LibreOffice) is private from birth, and closes the home folder itself to others. A home made by
an older build, with 0755 and 0644 inside, is tightened once, file by file.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["PRIVATE_UMASK", "make_private"]

PRIVATE_UMASK = 0o077


def make_private(home: Path) -> Path:
    """Create ``home`` (0700) if missing, set the process umask to 077, and take away group and
    other permissions from the home and, when it was open to them, from everything in it."""
    os.umask(PRIVATE_UMASK)
    home.mkdir(parents=True, exist_ok=True)
    mode = stat.S_IMODE(home.stat().st_mode)
    if mode & 0o077:
        _tighten_tree(home)
    return home


def _tighten_tree(root: Path) -> None:
    """chmod g-rwx,o-rwx on ``root`` and everything under it; links are left alone (their
    permissions mean nothing) and never followed."""
    _tighten(root)
    for folder, folders, files in os.walk(root):
        for name in folders + files:
            _tighten(Path(folder) / name)


def _tighten(path: Path) -> None:
    try:
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode) or not stat.S_IMODE(info.st_mode) & 0o077:
            return
        os.chmod(path, stat.S_IMODE(info.st_mode) & 0o700)
    except OSError:
        pass  # vanished meanwhile, or not ours: the closed home folder covers it
