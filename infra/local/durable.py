"""Durable files on a local disk: write under a temporary name, fsync, rename, fsync the folder.

A rename is only durable once the folder that holds it is fsynced, and a new folder only once its
parent is; without that, a power loss can leave a file that was acknowledged missing. Object store
writes go through here; the fsync primitives are the lake's own (``lake.files``), one copy of the
rule for both.
"""

from __future__ import annotations

import errno
import os
import stat
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

from lake.files import fsync_directory

COPY_CHUNK = 1024 * 1024


def fsync_dir(folder: Path) -> None:
    fsync_directory(str(folder))


def make_dirs(folder: Path) -> None:
    """``mkdir -p``, with each folder it creates made durable in its parent, and private (0700)
    whatever the umask: a CPU worker forked by a fork server started before the home was made
    private carries the umask of that moment, not 077."""
    missing = []
    current = folder
    while not current.exists():
        missing.append(current)
        current = current.parent
    for path in reversed(missing):
        try:
            path.mkdir(mode=0o700)
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
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        with open(descriptor, "wb") as handle:  # 0600 whatever the umask (see make_dirs)
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


def copy_file(source: Path, path: Path, *, max_bytes: int | None = None) -> None:
    """Copy ``source`` durably to ``path``. The source is opened without following a link and
    must be a regular file; with ``max_bytes`` at most ``max_bytes + 1`` bytes are copied (a
    file over the limit is stored only far enough to be failed ``file_too_large``). The copy is
    private to its owner (0600) whatever the source's mode; a failed copy leaves nothing."""
    make_dirs(path.parent)
    temporary = _temporary(path)
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    source_fd = os.open(source, flags)
    try:
        if not stat.S_ISREG(os.fstat(source_fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(source))
        target_fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            remaining = None if max_bytes is None else max_bytes + 1
            while remaining is None or remaining > 0:
                chunk = os.read(source_fd, COPY_CHUNK if remaining is None
                                else min(COPY_CHUNK, remaining))
                if not chunk:
                    break
                view = memoryview(chunk)
                while view:
                    view = view[os.write(target_fd, view):]
                if remaining is not None:
                    remaining -= len(chunk)
            os.fsync(target_fd)
        finally:
            os.close(target_fd)
        _publish(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    finally:
        os.close(source_fd)
