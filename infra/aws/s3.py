"""The object store on S3: the same keys as the local folder (``lake.layout``), in one bucket.

S3 already gives the port's atomicity (a PUT is all or nothing) and user metadata; what is left
here is paging, batching and turning boto errors into ours (``infra.aws.errors``). A key pinned
to a version (``lake.layout.pinned_key``: an upload a job claimed on the versioned uploads
bucket) is read at that version only, so bytes put at the key later are never read for it.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import io
import os
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from infra.aws.errors import is_not_found, mapped
from lake.files import open_regular
from lake.layout import unpinned

__all__ = ["PUT_THREADS", "DELETE_BATCH", "S3ObjectStore", "SharedDownloads"]

PUT_THREADS = 8  # a unit's five pages go up together; S3 latency, not bandwidth, is the cost
DELETE_BATCH = 1000  # DeleteObjects' limit


class _Hashing(io.RawIOBase):
    """A raw stream over a binary file (its first ``limit`` bytes, if given) that hashes what
    is read through it: the bytes uploaded are the bytes hashed."""

    def __init__(self, handle, limit: int | None):
        self._handle = handle
        self._left = limit
        self.sha256 = hashlib.sha256()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        view = memoryview(buffer)
        if self._left is not None:
            if self._left <= 0:
                return 0
            view = view[:self._left]
        count = self._handle.readinto(view) or 0
        self.sha256.update(view[:count])
        if self._left is not None:
            self._left -= count
        return count


class _Bounded(io.RawIOBase):
    """A raw stream over the first ``limit`` bytes of a binary file."""

    def __init__(self, handle, limit: int):
        self._handle = handle
        self._left = limit

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self._left <= 0:
            return 0
        view = memoryview(buffer)[:self._left]
        count = self._handle.readinto(view)
        self._left -= count or 0
        return count or 0


def _a_few_at_a_time(requests: Sequence[Callable[[], object]]) -> None:
    """Run S3 requests ``PUT_THREADS`` at a time (one alone on this thread); the first error is
    raised once all have ended."""
    if len(requests) <= 1:
        for request in requests:
            request()
        return
    with ThreadPoolExecutor(max_workers=min(PUT_THREADS, len(requests))) as pool:
        list(pool.map(lambda request: request(), requests))


class S3ObjectStore:
    def __init__(self, client, bucket: str, prefix: str = "", *,
                 downloads: SharedDownloads | None = None, ephemeral_bytes: int | None = None):
        self.client = client
        self.ephemeral_bytes = ephemeral_bytes
        """The function's /tmp: a larger object is refused before it is downloaded."""
        self.downloads = downloads or SharedDownloads()
        self.bucket = bucket
        self.prefix = f"{prefix.strip('/')}/" if prefix.strip("/") else ""

    def _key(self, key: str) -> str:
        if key.startswith("/") or ".." in key.split("/"):
            raise ValueError(f"invalid object key: {key!r}")
        return f"{self.prefix}{key}"

    def _address(self, key: str) -> dict[str, str]:
        """``Key`` (and ``VersionId`` for a pinned key) of a read."""
        bare, version = unpinned(key)
        return {"Key": self._key(bare), **({"VersionId": version} if version else {})}

    def _writable(self, key: str) -> str:
        if unpinned(key)[1] is not None:
            raise ValueError(f"a pinned version is read-only: {key!r}")
        return self._key(key)

    def put(self, key: str, data: bytes, *, metadata: dict[str, str] | None = None) -> None:
        with mapped(f"s3 put {key}"):
            self.client.put_object(Bucket=self.bucket, Key=self._writable(key), Body=data,
                                   Metadata=metadata or {})

    def put_many(self, objects: Sequence[tuple[str, bytes, dict[str, str] | None]]) -> None:
        _a_few_at_a_time([functools.partial(self.put, key, data, metadata=metadata)
                          for key, data, metadata in objects])

    def put_files(self, files: Sequence[tuple[str, Path]], *, max_bytes: int | None = None,
                  digests: Mapping[str, str] | None = None) -> None:
        """Upload several files of a data room, a few at a time (each its own request). Each is
        read through ``lake.files.open_regular``: no link anywhere on its path is followed (ingest
        gives such paths), so a folder swapped for a link since the walk uploads nothing."""
        _a_few_at_a_time([functools.partial(self._put_source, key, path, max_bytes,
                                            (digests or {}).get(key))
                          for key, path in files])

    def _put_source(self, key: str, path: Path, max_bytes: int | None,
                    digest: str | None) -> None:
        with os.fdopen(open_regular(path), "rb") as handle:
            hashed = _Hashing(handle, None if max_bytes is None else max_bytes + 1)
            with mapped(f"s3 upload {key}"):
                self.client.upload_fileobj(io.BufferedReader(hashed), self.bucket,
                                           self._writable(key))
        if digest is not None and hashed.sha256.hexdigest() != digest:
            self.delete_prefix(key)
            raise OSError(errno.ESTALE, "the file changed since it was hashed", str(path))

    def put_file(self, key: str, path: Path, *, max_bytes: int | None = None) -> None:
        """Upload a local file; with ``max_bytes``, no more than ``max_bytes + 1`` of it (what
        is needed to fail it ``file_too_large``), read through a bounded stream."""
        if max_bytes is None or path.stat().st_size <= max_bytes:
            with mapped(f"s3 upload {key}"):
                self.client.upload_file(str(path), self.bucket, self._writable(key))
            return
        with open(path, "rb") as handle, mapped(f"s3 upload {key}"):
            head = io.BufferedReader(_Bounded(handle, max_bytes + 1))
            self.client.upload_fileobj(head, self.bucket, self._writable(key))

    def get(self, key: str) -> bytes:
        try:
            with mapped(f"s3 get {key}"):
                return self.client.get_object(Bucket=self.bucket,
                                              **self._address(key))["Body"].read()
        except Exception as error:
            if is_not_found(error):
                raise KeyError(key) from None
            raise

    def head(self, key: str) -> dict[str, str] | None:
        try:
            with mapped(f"s3 head {key}"):
                return dict(self.client.head_object(Bucket=self.bucket,
                                                    **self._address(key)).get("Metadata", {}))
        except Exception as error:
            if is_not_found(error):
                return None
            raise

    def list(self, prefix: str) -> list[str]:
        keys = []
        with mapped(f"s3 list {prefix}"):
            pages = self.client.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=self._key(prefix) if prefix else self.prefix)
            for page in pages:
                keys += [o["Key"][len(self.prefix):] for o in page.get("Contents", [])]
        return sorted(keys)

    def delete_prefix(self, prefix: str) -> int:
        keys = self.list(prefix)
        for start in range(0, len(keys), DELETE_BATCH):
            batch = keys[start:start + DELETE_BATCH]
            with mapped(f"s3 delete {prefix}"):
                self.client.delete_objects(Bucket=self.bucket, Delete={
                    "Objects": [{"Key": self._key(k)} for k in batch], "Quiet": True})
        return len(keys)

    def _download(self, key: str, name: str) -> None:
        try:
            with mapped(f"s3 download {key}"):
                address = self._address(key)
                if self.ephemeral_bytes is not None:
                    from infra.aws.tmp_budget import check_fits

                    size = self.client.head_object(Bucket=self.bucket, **address)[
                        "ContentLength"]
                    check_fits(int(size), self.ephemeral_bytes, folder=str(Path(name).parent))
                self.client.download_file(self.bucket, address.pop("Key"), name,
                                          ExtraArgs=address or None)
        except Exception as error:
            if is_not_found(error):
                raise KeyError(key) from None
            raise

    def local_path(self, key: str) -> AbstractContextManager[Path]:
        """A temporary file (Lambda's /tmp) holding the object: one download shared by every
        caller that holds the same key at once, or within one ``downloads.invocation()``."""
        return self.downloads.open(key, lambda name: self._download(key, name))


@dataclass
class _Copy:
    path: Path
    ready: threading.Event = field(default_factory=threading.Event)
    users: int = 0
    error: BaseException | None = None


class SharedDownloads:
    """Local copies of objects, one per key, reference-counted.

    Ten read units of one document in one SQS batch are ten ``local_path`` calls for the same
    key: with a copy each, ``/tmp`` (512 MB by default, the same as the file limit) holds ten
    copies, or fails. Here the first caller downloads and the others wait for that copy; the
    file is removed when its last user is done, or, inside ``invocation()``, when the invocation
    ends (so the batch's units that start later still find it). Thread-safe: callers download
    from worker threads, off the event loop."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._copies: dict[str, _Copy] = {}
        self._scopes = 0
        self.downloads = 0
        """Downloads made (for tests and logs)."""

    @contextmanager
    def invocation(self) -> Iterator[None]:
        """Keep every copy until the block ends (one Lambda invocation), then remove them."""
        with self._lock:
            self._scopes += 1
        try:
            yield
        finally:
            with self._lock:
                self._scopes -= 1
                idle = [k for k, c in self._copies.items() if c.users == 0] if not self._scopes \
                    else []
                removed = [self._copies.pop(k) for k in idle]
            for copy in removed:
                copy.path.unlink(missing_ok=True)

    def drop_idle(self) -> int:
        """Remove every copy no caller holds now (the next document needs the room); returns
        how many went."""
        with self._lock:
            idle = [k for k, c in self._copies.items() if c.users == 0]
            removed = [self._copies.pop(k) for k in idle]
        for copy in removed:
            copy.path.unlink(missing_ok=True)
        return len(removed)

    @contextmanager
    def open(self, key: str, fetch: Callable[[str], None]) -> Iterator[Path]:
        with self._lock:
            copy = self._copies.get(key)
            first = copy is None
            if copy is None:
                handle, name = tempfile.mkstemp(prefix="doclake-", suffix=Path(key).suffix)
                os.close(handle)
                copy = self._copies[key] = _Copy(Path(name))
            copy.users += 1
        try:
            if first:
                try:
                    fetch(str(copy.path))
                    self.downloads += 1
                except BaseException as error:
                    copy.error = error
                    raise
                finally:
                    copy.ready.set()
            else:
                copy.ready.wait()
                if copy.error is not None:
                    raise copy.error
            yield copy.path
        finally:
            with self._lock:
                copy.users -= 1
                drop = copy.users == 0 and (copy.error is not None or not self._scopes)
                if drop and self._copies.get(key) is copy:
                    del self._copies[key]
            if drop:
                copy.path.unlink(missing_ok=True)
