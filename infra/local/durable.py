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
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from lake.files import fsync_directory

COPY_CHUNK = 1024 * 1024


def fsync_dir(folder: Path) -> None:
    fsync_directory(str(folder))


def make_dirs(folder: Path) -> None:
    """``mkdir -p``, with each folder it creates made durable in its parent, and private (0700)
    whatever the umask: a CPU worker forked by a fork server started before the home was made
    private carries the umask of that moment, not 077."""
    make_many_dirs([folder])


def make_many_dirs(folders: Iterable[Path]) -> None:
    """``make_dirs`` for several folders, each parent fsynced once after all are made (a batch
    of uploads makes a folder a document under one ``uploads/``: one fsync of it, not one a
    file)."""
    parents: dict[Path, None] = {}
    for folder in folders:
        missing = []
        current = folder
        while not current.exists():
            missing.append(current)
            current = current.parent
        for path in reversed(missing):
            try:
                path.mkdir(mode=0o700)
            except FileExistsError:
                continue  # another writer made it: theirs to fsync
            parents[path.parent] = None
    for parent in sorted(parents, key=lambda p: -len(p.parts)):  # children before parents
        fsync_dir(parent)


def _temporary(path: Path) -> Path:
    return path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")


def write_bytes(path: Path, data: bytes) -> None:
    write_many([(path, data, None)])


OPEN_AT_ONCE = 64
"""Files written before their fsyncs: the first fsync commits the filesystem's journal with the
others' blocks and names in it (ext4's ordered mode), so the rest find little left to do. Six
pages of a document: 0.17 to 0.22 ms of CPU a page written this way against 0.25 to 0.36 ms
each fsynced before the next is written. Bounded, so a batch of thousands keeps few open."""


def _create(temporary: Path) -> int:
    """A new file, 0600 whatever the umask (see ``make_dirs``)."""
    return os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)


def _write_all(descriptor: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(descriptor, view):]


def _staged_durably(items: Sequence, fill: Callable[[object, int], None],
                    target: Callable[[object], Path]) -> list[tuple[Path, Path]]:
    """Each item written by ``fill(item, fd)`` to a new temporary file beside ``target(item)``,
    ``OPEN_AT_ONCE`` files at a time written first and fsynced after; returns (temporary, final)
    pairs. On an error, nothing of the batch is left behind."""
    staged: list[tuple[Path, Path]] = []
    try:
        for start in range(0, len(items), OPEN_AT_ONCE):
            opened: list[int] = []
            try:
                for item in items[start:start + OPEN_AT_ONCE]:
                    path = target(item)
                    temporary = _temporary(path)
                    descriptor = _create(temporary)
                    opened.append(descriptor)
                    staged.append((temporary, path))
                    fill(item, descriptor)
                for descriptor in opened:
                    os.fsync(descriptor)
            finally:
                for descriptor in opened:
                    os.close(descriptor)
    except BaseException:
        for temporary, _ in staged:
            temporary.unlink(missing_ok=True)
        raise
    return staged


def write_many(files: Sequence[tuple[Path, bytes, Callable[[int], None] | None]]) -> None:
    """Write several files durably for the price of one folder fsync per folder: each is written
    and fsynced under a temporary name (``before_publish(fd)`` may tag it, e.g. with an xattr),
    then all are renamed, then each folder is fsynced once."""
    folders = dict.fromkeys(path.parent for path, _, _ in files)
    make_many_dirs(folders)

    def fill(item, descriptor: int) -> None:
        _, data, before_publish = item
        _write_all(descriptor, data)
        if before_publish is not None:
            before_publish(descriptor)

    for temporary, path in _staged_durably(files, fill, lambda item: item[0]):
        os.replace(temporary, path)
    for folder in folders:
        fsync_dir(folder)


def copy_file(source: Path, path: Path, *, max_bytes: int | None = None) -> None:
    """Copy ``source`` durably to ``path``. The source is opened without following a link and
    must be a regular file; with ``max_bytes`` at most ``max_bytes + 1`` bytes are copied (a
    file over the limit is stored only far enough to be failed ``file_too_large``). The copy is
    private to its owner (0600) whatever the source's mode; a failed copy leaves nothing."""
    copy_many([(source, path)], max_bytes=max_bytes)


def copy_many(copies: Sequence[tuple[Path, Path]], *, max_bytes: int | None = None) -> None:
    """``copy_file`` for several files, durable together for one fsync per folder: the folders
    are made, each file is copied and fsynced under a temporary name, then all are renamed and
    each folder is fsynced once. A copy that fails (a source gone, or swapped for a link)
    leaves none of the batch stored, and raises its error."""
    folders = dict.fromkeys(path.parent for _, path in copies)
    make_many_dirs(folders)
    staged = _staged_durably(copies, lambda item, fd: _copy_into(item[0], fd, max_bytes),
                             lambda item: item[1])
    try:
        for temporary, path in staged:
            os.replace(temporary, path)
    except BaseException:
        for temporary, _ in staged:
            temporary.unlink(missing_ok=True)
        raise
    for folder in folders:
        fsync_dir(folder)


def _copy_into(source: Path, target_fd: int, max_bytes: int | None) -> None:
    """Copy ``source`` (a regular file, no link followed) into ``target_fd`` (not fsynced)."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    source_fd = os.open(source, flags)
    try:
        if not stat.S_ISREG(os.fstat(source_fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(source))
        remaining = None if max_bytes is None else max_bytes + 1
        while remaining is None or remaining > 0:
            chunk = os.read(source_fd, COPY_CHUNK if remaining is None
                            else min(COPY_CHUNK, remaining))
            if not chunk:
                break
            _write_all(target_fd, chunk)
            if remaining is not None:
                remaining -= len(chunk)
    finally:
        os.close(source_fd)
