"""The lake's files as files: opening a lake URI, and fsync for the local folder.

The writer and compaction both need them; they live below both so that neither imports the
other for them (compaction used to import ``open_lake`` from the writer, which starts
compactions, a circle). The home's other file writers (``infra.local.durable``, ingest's
hashing) take their primitives from here too: one copy of each rule.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow.fs as pafs

__all__ = ["fsync_directory", "fsync_file", "is_local", "local_root", "open_folder_at",
           "open_lake", "open_regular"]


def is_local(uri: str) -> bool:
    """Whether a lake URI is a local folder (no ``scheme://``)."""
    return "://" not in uri


def local_root(uri: str) -> str:
    """The absolute root of a local lake, created if missing; no pyarrow needed (``doclake sql``
    reads a local lake without importing it)."""
    os.makedirs(uri, exist_ok=True)
    return os.path.abspath(uri)


def open_lake(uri: str) -> tuple[pafs.FileSystem, str]:
    """A filesystem and root path for a lake URI: a local folder or ``s3://bucket/prefix``."""
    import pyarrow.fs as pafs

    if is_local(uri):
        return pafs.LocalFileSystem(), local_root(uri)
    if uri.startswith("s3://"):
        from lake.s3 import open_s3  # honours DOCLAKE_S3_ENDPOINT / AWS_ENDPOINT_URL

        return open_s3(uri)
    fs, path = pafs.FileSystem.from_uri(uri)
    return fs, path


def fsync_file(path: str) -> None:
    """Make a file's contents durable (before it is renamed into place)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_directory(path: str) -> None:
    """Make a folder's entries (renames, new files, new sub-folders) durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def open_regular(path: str | os.PathLike[str]) -> int:
    """A descriptor on the regular file at ``path``, reached without following a link anywhere:
    ``/`` is opened, then each folder of the path relative to its parent with ``O_NOFOLLOW |
    O_DIRECTORY``, then the file with ``O_NOFOLLOW``. ``OSError`` (``ELOOP``) when any of them is
    a link, ``EINVAL`` when the file is anything but a regular file (a FIFO would block a read,
    a device would never end).

    A walk that checked each entry leaves a gap between its look and this open: a folder of the
    room exchanged for a link to an outside folder in that gap (``renameat2(RENAME_EXCHANGE)``)
    would lead a plain ``open`` outside the room, since ``O_NOFOLLOW`` alone checks only the last
    component. The path must therefore hold no link at all (``ingest.planner.walk_sources``
    gives paths under the real path of each folder named)."""
    parts = [part for part in os.path.abspath(path).split(os.sep) if part]
    if not parts:
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    folder = os.open(os.sep, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts[:-1]:
            child = open_folder_at(folder, part)
            os.close(folder)
            folder = child
        descriptor = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                             dir_fd=folder)
    finally:
        os.close(folder)
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):
        os.close(descriptor)
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    return descriptor


def open_folder_at(parent: int, name: str) -> int:
    """The folder ``name`` in the folder open as ``parent``, never through a link (``ELOOP``
    when ``name`` is one, or is no folder at all: the path is not what a walk saw)."""
    try:
        return os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                       dir_fd=parent)
    except NotADirectoryError:  # what O_NOFOLLOW | O_DIRECTORY says of a link (or of a file)
        raise OSError(errno.ELOOP, "a folder on the path is a symbolic link, or no longer a "
                      "folder", name) from None
