"""Durable files on a local disk: write under a temporary name, fsync, rename, fsync the folder.

A rename is only durable once the folder that holds it is fsynced, and a new folder only once its
parent is; without that, a power loss can leave a file that was acknowledged missing. Object store
writes go through here; the fsync primitives are the lake's own (``lake.files``), one copy of the
rule for both.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

from lake.files import fsync_directory


def fsync_dir(folder: Path) -> None:
    fsync_directory(str(folder))


def make_dirs(folder: Path) -> None:
    """``mkdir -p``, with each folder it creates made durable in its parent."""
    missing = []
    current = folder
    while not current.exists():
        missing.append(current)
        current = current.parent
    for path in reversed(missing):
        try:
            path.mkdir()
        except FileExistsError:
            continue  # another writer made it: theirs to fsync, and ours next
        fsync_dir(path.parent)


def _temporary(path: Path) -> Path:
    return path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")


def _publish(temporary: Path, path: Path) -> None:
    os.replace(temporary, path)
    fsync_dir(path.parent)


def write_bytes(path: Path, data: bytes) -> None:
    write_many([(path, data, None)])


def write_many(files: Sequence[tuple[Path, bytes, Callable[[int], None] | None]]) -> None:
    """Write several files durably for the price of one folder fsync per folder: each is written
    and fsynced under a temporary name (``before_publish(fd)`` may tag it, e.g. with an xattr),
    then all are renamed, then each folder is fsynced once."""
    folders: dict[Path, None] = {}
    staged = []
    for path, data, before_publish in files:
        if path.parent not in folders:
            make_dirs(path.parent)
            folders[path.parent] = None
        temporary = _temporary(path)
        with open(temporary, "wb") as handle:
            handle.write(data)
            handle.flush()
            if before_publish is not None:
                before_publish(handle.fileno())
            os.fsync(handle.fileno())
        staged.append((temporary, path))
    for temporary, path in staged:
        os.replace(temporary, path)
    for folder in folders:
        fsync_dir(folder)


def copy_file(source: Path, path: Path) -> None:
    make_dirs(path.parent)
    temporary = _temporary(path)
    shutil.copyfile(source, temporary)
    with open(temporary, "rb+") as handle:
        os.fsync(handle.fileno())
    _publish(temporary, path)
