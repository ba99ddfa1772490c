"""Durable files on a local disk: write under a temporary name, fsync, rename, fsync the folder.

A rename is only durable once the folder that holds it is fsynced, and a new folder only once its
parent is; without that, a power loss can leave a file that was acknowledged missing. Object store
writes go through here; the fsync primitives are the lake's own (``lake.files``), one copy of the
rule for both.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import hashlib
import os
import re
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from lake.files import fsync_directory, open_regular

__all__ = ["COPY_CHUNK", "fsync_dir", "make_dirs", "make_many_dirs", "write_bytes", "OPEN_AT_ONCE",
           "SYNC_FILESYSTEM_FROM", "SYNCFS_FILESYSTEMS", "SYNCFS_MAX_DIRTY_BYTES",
           "sync_filesystems", "write_many", "copy_file", "copy_many"]

COPY_CHUNK = 1024 * 1024


def fsync_dir(folder: Path) -> None:
    fsync_directory(str(folder))


def make_dirs(folder: Path) -> None:
    """``mkdir -p``, with each folder it creates made durable in its parent, and private (0700)
    whatever the umask: a CPU worker forked by a fork server started before the home was made
    private carries the umask of that moment, not 077."""
    make_many_dirs([folder])


def make_many_dirs(folders: Iterable[Path], *, sync: bool = True) -> None:
    """``make_dirs`` for several folders, each parent fsynced once after all are made (a batch
    of uploads makes a folder a document under one ``uploads/``: one fsync of it, not one a
    file). ``sync=False``: the caller makes them durable (``sync_filesystems``)."""
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
    if not sync:
        return
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
                    target: Callable[[object], Path], *, fsync: bool = True
                    ) -> list[tuple[Path, Path]]:
    """Each item written by ``fill(item, fd)`` to a new temporary file beside ``target(item)``,
    ``OPEN_AT_ONCE`` files at a time written first and fsynced after (``fsync=False``: not
    fsynced, the caller syncs the filesystem); returns (temporary, final) pairs. On an error,
    nothing of the batch is left behind."""
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
                for descriptor in opened if fsync else ():
                    os.fsync(descriptor)
            finally:
                for descriptor in opened:
                    os.close(descriptor)
    except BaseException:
        for temporary, _ in staged:
            temporary.unlink(missing_ok=True)
        raise
    return staged


SYNC_FILESYSTEM_FROM = 2
"""Files in one batch from which it is made durable by two ``syncfs`` of its filesystem (the
files written, synced, renamed, synced again) instead of an fsync a file and one a folder
(and one a parent of each new folder). Each fsync waits for its own flush of the disk; the two
``syncfs`` wait for two, however many files. A unit's five pages: the text set (899 pages)
ran in 1.82 s against 1.92 s on average with batches of two or more synced this way rather
than from sixteen (ten pairs alternating; the loop 1.66 s), and 1.77 s against 1.95 s with every
batch (twelve pairs); earlier, 96 pages of 16 documents cost 0.06 to 0.08 ms of CPU a page
against 0.14 to 0.19. A single file keeps its fsync and its folder's: two flushes either way,
and an fsync touches only its own file. ``syncfs`` writes back the whole filesystem, so a
batch written while much else waits for write-back keeps the fsyncs
(``SYNCFS_MAX_DIRTY_BYTES``)."""


@functools.cache
def _syncfs() -> Callable[[int], int] | None:
    """libc's ``syncfs(2)``, where it reports write-back errors (Linux 5.8 and later: before,
    it returned 0 whatever happened, and durability would rest on a call that cannot fail);
    None elsewhere (another system, or no such symbol), and the batch is fsynced file by file."""
    uname = os.uname()
    system, release = uname.sysname, uname.release
    if system != "Linux":
        return None
    try:
        major, minor = (int(part) for part in release.split(".")[:2])
    except ValueError:
        return None
    if (major, minor) < (5, 8):
        return None
    try:
        function = ctypes.CDLL(None, use_errno=True).syncfs
    except (AttributeError, OSError):
        return None
    function.argtypes = [ctypes.c_int]
    function.restype = ctypes.c_int
    return function


SYNCFS_FILESYSTEMS = frozenset({"ext4", "ext3", "xfs", "btrfs", "f2fs", "zfs", "tmpfs"})
"""Filesystems whose ``syncfs`` makes every file on them durable (``sync_fs`` writes back and
commits the journal; tmpfs holds nothing across a power loss either way). Elsewhere (FUSE before
Linux 5.15 returns from ``syncfs`` without asking its server; NFS, overlays) a batch keeps an
fsync a file, which every filesystem honours."""


def _mounts() -> list[tuple[str, str]]:
    """(mount point, filesystem type) of every mount this process sees, longest point first."""
    mounts = []
    try:
        with open("/proc/self/mounts", encoding="utf-8", errors="replace") as table:
            for line in table:
                fields = line.split()
                if len(fields) >= 3:  # spaces and such in a point are octal escapes (\040)
                    point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[1])
                    mounts.append((point, fields[2]))
    except OSError:
        return []
    return sorted(mounts, key=lambda mount: -len(mount[0]))


def _mount_honours_syncfs(folder: str) -> bool:
    """Whether the filesystem of ``folder`` (a real path) is one of ``SYNCFS_FILESYSTEMS``, by
    the longest mount point that holds it."""
    for point, kind in _mounts():
        if folder == point or folder.startswith(point.rstrip("/") + "/"):
            return kind in SYNCFS_FILESYSTEMS
    return False


_honoured: dict[int, bool] = {}
"""``_mount_honours_syncfs`` by device, once a process: a batch asks for each of its folders."""


def _syncfs_for(folders: Iterable[Path]) -> bool:
    """True when ``syncfs`` exists and every filesystem the folders are (to be made) on honours
    it; a folder not made yet is judged by its nearest existing parent."""
    if _syncfs() is None:
        return False
    for folder in folders:
        existing = folder
        while not existing.exists() and existing.parent != existing:
            existing = existing.parent
        device = os.stat(existing).st_dev
        if device not in _honoured:
            _honoured[device] = _mount_honours_syncfs(os.path.realpath(existing))
        if not _honoured[device]:
            return False
    return True


SYNCFS_MAX_DIRTY_BYTES = 32 * 2**20
"""Data waiting for write-back on the machine (``/proc/meminfo``'s Dirty and Writeback) above
which a batch is fsynced file by file instead: ``syncfs`` writes back everything on the
filesystem, so with a gigabyte of a user's fresh copy waiting a run of 83 NDAs took 2.51 s
against 1.93 s. A run's own pending writes (its SQLite logs, its lake) stay under 8 MB."""


def _dirty_bytes(meminfo: str = "/proc/meminfo") -> int | None:
    """Bytes waiting for write-back, machine-wide (Dirty and Writeback of ``/proc/meminfo``);
    None where that cannot be read."""
    found = 0
    try:
        with open(meminfo, encoding="ascii") as table:
            for line in table:
                if line.startswith(("Dirty:", "Writeback:")):
                    found += int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return found


def _little_else_to_write_back() -> bool:
    """Whether a ``syncfs`` now writes back little beyond the batch (``SYNCFS_MAX_DIRTY_BYTES``):
    a run must not wait for the write-back of other programs' files."""
    dirty = _dirty_bytes()
    return dirty is not None and dirty <= SYNCFS_MAX_DIRTY_BYTES


def sync_filesystems(folders: Iterable[Path]) -> None:
    """``syncfs`` once for each filesystem holding one of ``folders``: every file and folder
    entry written there before the call is durable after it, or this raises."""
    syncfs = _syncfs()
    assert syncfs is not None, "sync_filesystems needs syncfs (see _syncfs)"
    devices: dict[int, Path] = {}
    for folder in folders:
        devices.setdefault(os.stat(folder).st_dev, folder)
    for folder in devices.values():
        descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            if syncfs(descriptor) != 0:
                code = ctypes.get_errno()
                raise OSError(code, f"syncfs: {os.strerror(code)}", str(folder))
        finally:
            os.close(descriptor)


def _published(items: Sequence, fill: Callable[[object, int], None],
               target: Callable[[object], Path]) -> None:
    """Each item written by ``fill(item, fd)`` under a temporary name beside ``target(item)``,
    then renamed to it, durably: every final name holds all of its file or is absent, after a
    crash at any point. A batch of ``SYNC_FILESYSTEM_FROM`` files or more is made durable by two
    ``syncfs`` (the temporaries, then the renames and new folders); a smaller one, one on a
    filesystem not known to honour ``syncfs`` (``SYNCFS_FILESYSTEMS``), or one written while
    much else waits for write-back (``SYNCFS_MAX_DIRTY_BYTES``), by an fsync a file and one a
    folder. On an error no temporary is left."""
    folders = dict.fromkeys(target(item).parent for item in items)
    whole = (len(items) >= SYNC_FILESYSTEM_FROM and _syncfs_for(folders)
             and _little_else_to_write_back())
    make_many_dirs(folders, sync=not whole)
    staged = _staged_durably(items, fill, target, fsync=not whole)
    try:
        if whole:
            sync_filesystems(folders)  # the contents durable before any final name exists
        for temporary, path in staged:
            os.replace(temporary, path)
    except BaseException:
        for temporary, _ in staged:
            temporary.unlink(missing_ok=True)
        raise
    if whole:
        sync_filesystems(folders)
    else:
        for folder in folders:
            fsync_dir(folder)


def write_many(files: Sequence[tuple[Path, bytes, Callable[[int], None] | None]]) -> None:
    """Write several files durably for the price of one folder fsync per folder (or two
    ``syncfs`` for a large batch, ``_published``): each is written under a temporary name
    (``before_publish(fd)`` may tag it, e.g. with an xattr), made durable, then renamed."""

    def fill(item, descriptor: int) -> None:
        _, data, before_publish = item
        _write_all(descriptor, data)
        if before_publish is not None:
            before_publish(descriptor)

    _published(files, fill, lambda item: item[0])


def copy_file(source: Path, path: Path, *, max_bytes: int | None = None) -> None:
    """Copy ``source`` durably to ``path``. The source is opened without following a link and
    must be a regular file; with ``max_bytes`` at most ``max_bytes + 1`` bytes are copied (a
    file over the limit is stored only far enough to be failed ``file_too_large``). The copy is
    private to its owner (0600) whatever the source's mode; a failed copy leaves nothing."""
    copy_many([(source, path)], max_bytes=max_bytes)


def copy_many(copies: Sequence[tuple[Path, Path]], *, max_bytes: int | None = None,
              digests: Mapping[Path, str] | None = None) -> None:
    """``copy_file`` for several files, durable together (``_published``: one fsync per folder,
    or two ``syncfs`` for a large batch): the folders are made, each file is copied under a
    temporary name, made durable, then all are renamed. A copy that fails (a source gone, or
    swapped for a link) leaves none of the batch stored, and raises its error. ``digests``
    (target -> sha256): a copy whose bytes hash otherwise fails with ``OSError(ESTALE)``."""
    digests = digests or {}
    _published(copies, lambda item, fd: _copy_into(item[0], fd, max_bytes, digests.get(item[1])),
               lambda item: item[1])


def _copy_into(source: Path, target_fd: int, max_bytes: int | None,
               digest: str | None = None) -> None:
    """Copy ``source`` (a regular file, no link anywhere on its path) into ``target_fd`` (not
    fsynced); with ``digest``, the bytes copied must have that sha256."""
    source_fd = open_regular(source)
    hashed = hashlib.sha256() if digest is not None else None
    try:
        remaining = None if max_bytes is None else max_bytes + 1
        while remaining is None or remaining > 0:
            chunk = os.read(source_fd, COPY_CHUNK if remaining is None
                            else min(COPY_CHUNK, remaining))
            if not chunk:
                break
            _write_all(target_fd, chunk)
            if hashed is not None:
                hashed.update(chunk)
            if remaining is not None:
                remaining -= len(chunk)
    finally:
        os.close(source_fd)
    if hashed is not None and hashed.hexdigest() != digest:
        raise OSError(errno.ESTALE, "the file changed since it was hashed", str(source))
