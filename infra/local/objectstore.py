"""The object store as a folder: the same keys as the S3 bucket, atomic and durable writes
(temporary file, fsync, rename, fsync of the folder: ``infra.local.durable``).

Object metadata (S3 user metadata) is an extended attribute of the object's file, or, where the
filesystem has none, a sidecar JSON file under ``.meta/``; either way the key folders hold exactly
the objects, as a listing of the bucket would.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from infra.local import durable

__all__ = ["META_DIR", "XATTR", "FolderObjectStore"]

META_DIR = ".meta"
XATTR = "user.doclake.metadata"


def _set_metadata(encoded: bytes, descriptor: int) -> None:
    os.setxattr(descriptor, XATTR, encoded)


def _supports_xattrs(folder: Path) -> bool:
    """User extended attributes work here (Linux ext4, xfs, btrfs; not every tmpfs or macOS)."""
    if not hasattr(os, "setxattr"):
        return False
    probe = folder / f".xattr-probe-{os.getpid()}"
    try:
        probe.write_bytes(b"")
        os.setxattr(probe, XATTR, b"{}")
        return True
    except OSError:
        return False
    finally:
        probe.unlink(missing_ok=True)


class FolderObjectStore:
    local_reads = True
    """``list``, ``head`` and ``local_path`` are a directory read or a stat here: a handler calls
    them inline, as a thread hand-off for each costs the main process more than the call."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self._xattrs = _supports_xattrs(self.root)

    def _path(self, key: str) -> Path:
        if key.startswith("/") or ".." in key.split("/") or key.startswith(META_DIR):
            raise ValueError(f"invalid object key: {key!r}")
        return self.root / key

    def _meta_path(self, key: str) -> Path:
        return self.root / META_DIR / f"{key}.json"

    def put(self, key: str, data: bytes, *, metadata: dict[str, str] | None = None) -> None:
        self.put_many([(key, data, metadata)])

    def put_many(self, objects: Sequence[tuple[str, bytes, dict[str, str] | None]]) -> None:
        """Write several objects with one folder fsync per folder (a unit's pages at once).

        Metadata travels with the object as an extended attribute set before the rename, so an
        object never exists without it (as on S3). Where the filesystem has no user xattrs, it
        goes to a sidecar under ``.meta/`` written first.
        """
        files = []
        for key, data, metadata in objects:
            tag = None
            if metadata:
                encoded = json.dumps(metadata).encode()
                if self._xattrs:
                    tag = functools.partial(_set_metadata, encoded)
                else:
                    durable.write_bytes(self._meta_path(key), encoded)
            files.append((self._path(key), data, tag))
        durable.write_many(files)

    def put_file(self, key: str, path: Path, *, max_bytes: int | None = None) -> None:
        """Copy a local file in; with ``max_bytes``, no more than ``max_bytes + 1`` of it."""
        durable.copy_file(path, self._path(key), max_bytes=max_bytes)

    def put_files(self, files: Sequence[tuple[str, Path]], *, max_bytes: int | None = None,
                  digests: Mapping[str, str] | None = None) -> None:
        """Copy local files in with one fsync per folder (``durable.copy_many``): a batch of
        uploads, a folder each under ``uploads/``, fsyncs that folder once, not once a file."""
        durable.copy_many([(path, self._path(key)) for key, path in files], max_bytes=max_bytes,
                          digests=None if digests is None else
                          {self._path(key): digests[key] for key, _ in files if key in digests})

    def file_path(self, key: str) -> Path:
        """The file that holds the object, for a reader in another process on this machine (a
        CPU worker reads a job's pages itself: ``extract.fields.stored_pages``). The key is
        checked as every other call checks it; the file is not opened here."""
        return self._path(key)

    def get(self, key: str) -> bytes:
        try:
            return self._path(key).read_bytes()
        except FileNotFoundError:
            raise KeyError(key) from None

    def head(self, key: str) -> dict[str, str] | None:
        path = self._path(key)
        if not path.is_file():
            return None
        if self._xattrs:
            try:
                return json.loads(os.getxattr(path, XATTR))
            except OSError:
                pass  # no attribute: an object stored without metadata, or by a sidecar build
        try:
            return json.loads(self._meta_path(key).read_text())
        except FileNotFoundError:
            return {}

    def list(self, prefix: str) -> list[str]:
        """Keys under ``prefix``, sorted; files whose name starts with a dot (temporary files,
        the metadata folder's) are not objects, nor is a link (none is followed). By
        ``os.scandir``: the type comes with each entry, so a job's pages are listed without a
        ``stat`` and a path object each (the split and the indexer list them for every
        document)."""
        start = prefix if prefix.endswith("/") else prefix.rpartition("/")[0]
        keys: list[str] = []
        folders = [start.rstrip("/")]
        while folders:
            folder = folders.pop()
            try:
                entries = os.scandir(self.root / folder if folder else self.root)
            except (FileNotFoundError, NotADirectoryError):
                continue
            with entries:
                for entry in entries:
                    key = f"{folder}/{entry.name}" if folder else entry.name
                    if entry.is_dir(follow_symlinks=False):
                        folders.append(key)
                    elif entry.is_file(follow_symlinks=False) and \
                            not entry.name.startswith(".") and \
                            key.startswith(prefix):
                        keys.append(key)
        return sorted(keys)

    def delete_prefix(self, prefix: str) -> int:
        keys = self.list(prefix)
        for key in keys:
            self._path(key).unlink(missing_ok=True)
            self._meta_path(key).unlink(missing_ok=True)
        return len(keys)

    @contextmanager
    def local_path(self, key: str) -> Iterator[Path]:
        path = self._path(key)
        if not path.is_file():
            raise KeyError(key)
        yield path
