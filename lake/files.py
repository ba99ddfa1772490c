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

__all__ = ["fsync_directory", "fsync_file", "is_local", "local_root", "open_lake",
           "open_regular"]


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
    """A descriptor on ``path`` opened without following a link at its last component, or
    ``OSError`` when it is a link or anything but a regular file (a FIFO would block a read,
    a device would never end): a walk that checked the same leaves a gap this closes."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):
        os.close(descriptor)
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    return descriptor
