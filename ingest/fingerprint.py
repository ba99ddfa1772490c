"""What ingest learns from a file before it decides anything: its sha256, its size, its real path.

These are the planner's per-file work (reading every byte, resolving a path component by
component), so they are functions of paths alone, runnable in another process: the local runtime
runs them, and the copy of new uploads, in a worker process of its own (``UploadWork``), and the
main process that coordinates the run only decides and records. Without a runtime, the planner
hashes on a few threads of its own (``ThreadedUploads``), as before.
"""

from __future__ import annotations

import errno
import hashlib
import os
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from extract.ports import ObjectStore
from lake.files import open_regular

__all__ = ["CHUNK", "IO_THREADS", "Fingerprint", "fingerprint", "fingerprint_or_error", "fingerprint_files",
           "CHANGED_WHILE_READ", "store_uploads", "UploadWork", "ThreadedUploads"]

CHUNK = 1024 * 1024
IO_THREADS = 8  # files hashed at once: the disk, not the CPU, is what they wait on


@dataclass(frozen=True)
class Fingerprint:
    """A file as ingest decides on it: its bytes' sha256 (of the first ``max_bytes + 1`` for a
    longer file), its size, and its real path (the document's ``source_key``)."""

    sha256: str
    bytes: int
    source_key: str


def fingerprint(path: Path, max_bytes: int | None = None) -> Fingerprint:
    """``path``'s ``Fingerprint``; the size is the open file's own, so it is the file hashed.
    A file longer than ``max_bytes`` is hashed to its first ``max_bytes + 1`` bytes (what is
    stored of it: enough to fail it ``file_too_large``, never the whole of a sparse terabyte)."""
    digest = hashlib.sha256()
    remaining = None if max_bytes is None else max_bytes + 1
    with os.fdopen(open_regular(path), "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        while remaining is None or remaining > 0:
            chunk = handle.read(CHUNK if remaining is None else min(CHUNK, remaining))
            if not chunk:
                break
            digest.update(chunk)
            if remaining is not None:
                remaining -= len(chunk)
    # The path holds no link (open_regular refuses one anywhere on it): it is the real path.
    return Fingerprint(digest.hexdigest(), size, os.path.abspath(path))


def fingerprint_or_error(path: Path, max_bytes: int | None) -> Fingerprint | OSError:
    """``fingerprint``, or the ``OSError`` that stopped it, returned rather than raised: one
    file swapped for a link must not cost the rest of its batch their fingerprints."""
    try:
        return fingerprint(path, max_bytes)
    except OSError as error:
        return error


def fingerprint_files(paths: Sequence[Path], max_bytes: int | None
                      ) -> list[Fingerprint | OSError]:
    """``fingerprint_or_error`` for each of ``paths``, in order (a worker process's call: the
    paths must be absolute, as a worker's working folder is not the caller's)."""
    return [fingerprint_or_error(path, max_bytes) for path in paths]


CHANGED_WHILE_READ = (errno.ELOOP, errno.EINVAL, errno.ENOENT, errno.ENOTDIR, errno.ESTALE)


def store_uploads(objects: ObjectStore, uploads: Sequence[tuple[str, Path]],
                  max_bytes: int | None, digests: Mapping[str, str] | None = None) -> list[str]:
    """Store new uploads (key, file) together (``ObjectStore.put_files``), durable on return;
    with ``digests`` (key -> the sha256 the planner decided on), the bytes stored are checked to
    be the bytes hashed, as they are copied.

    Returns the keys of the files that could not be stored because they changed since they were
    hashed (a folder on the way swapped for a link, the file for a FIFO, the file gone or
    rewritten): the batch is then stored one file at a time, the others kept. Any other error
    raises."""
    try:
        objects.put_files(uploads, max_bytes=max_bytes, digests=digests)
        return []
    except OSError as error:
        if error.errno not in CHANGED_WHILE_READ:
            raise
    changed = []
    for key, path in uploads:
        try:
            objects.put_files([(key, path)], max_bytes=max_bytes, digests=digests)
        except OSError as error:
            if error.errno not in CHANGED_WHILE_READ:
                raise
            changed.append(key)
    return changed


class UploadWork(Protocol):
    """Where the planner's per-file work runs: hashing every file of a batch, and storing the
    new ones. Each call is made for a whole batch and returns when it is done (stored: durable)."""

    def fingerprints(self, paths: Sequence[Path], max_bytes: int | None
                     ) -> list[Fingerprint | OSError]:
        ...

    def store(self, objects: ObjectStore, uploads: Sequence[tuple[str, Path]],
              max_bytes: int | None, digests: Mapping[str, str] | None = None) -> list[str]:
        """The keys not stored because their file changed since it was hashed."""
        ...

    def close(self) -> None:
        ...


class ThreadedUploads:
    """``UploadWork`` in the caller's process: hashing on ``IO_THREADS`` threads kept for the
    planner's life (they wait on the disk; a pool made per batch started 2,000 threads for
    2,032 files), storing on the caller's thread."""

    def __init__(self) -> None:
        self._threads: ThreadPoolExecutor | None = None  # made on the first batch, then kept

    def fingerprints(self, paths: Sequence[Path], max_bytes: int | None
                     ) -> list[Fingerprint | OSError]:
        if self._threads is None:
            self._threads = ThreadPoolExecutor(IO_THREADS, thread_name_prefix="ingest-hash")
        return list(self._threads.map(lambda path: fingerprint_or_error(path, max_bytes), paths))

    def store(self, objects: ObjectStore, uploads: Sequence[tuple[str, Path]],
              max_bytes: int | None, digests: Mapping[str, str] | None = None) -> list[str]:
        return store_uploads(objects, uploads, max_bytes, digests)

    def close(self) -> None:
        if self._threads is not None:
            self._threads.shutdown()
            self._threads = None
