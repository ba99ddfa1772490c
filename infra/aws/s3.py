"""The object store on S3: the same keys as the local folder (``lake.layout``), in one bucket.

S3 already gives the port's atomicity (a PUT is all or nothing) and user metadata; what is left
here is paging, batching and turning boto errors into ours (``infra.aws.errors``).
"""

from __future__ import annotations

import io
import os
import tempfile
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

from infra.aws.errors import is_not_found, mapped

PUT_THREADS = 8  # a unit's five pages go up together; S3 latency, not bandwidth, is the cost
DELETE_BATCH = 1000  # DeleteObjects' limit


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


class S3ObjectStore:
    def __init__(self, client, bucket: str, prefix: str = ""):
        self.client = client
        self.bucket = bucket
        self.prefix = f"{prefix.strip('/')}/" if prefix.strip("/") else ""

    def _key(self, key: str) -> str:
        if key.startswith("/") or ".." in key.split("/"):
            raise ValueError(f"invalid object key: {key!r}")
        return f"{self.prefix}{key}"

    def put(self, key: str, data: bytes, *, metadata: dict[str, str] | None = None) -> None:
        with mapped(f"s3 put {key}"):
            self.client.put_object(Bucket=self.bucket, Key=self._key(key), Body=data,
                                   Metadata=metadata or {})

    def put_many(self, objects: Sequence[tuple[str, bytes, dict[str, str] | None]]) -> None:
        if len(objects) <= 1:
            for key, data, metadata in objects:
                self.put(key, data, metadata=metadata)
            return
        with ThreadPoolExecutor(max_workers=min(PUT_THREADS, len(objects))) as pool:
            list(pool.map(lambda o: self.put(o[0], o[1], metadata=o[2]), objects))

    def put_file(self, key: str, path: Path, *, max_bytes: int | None = None) -> None:
        """Upload a local file; with ``max_bytes``, no more than ``max_bytes + 1`` of it (what
        is needed to fail it ``file_too_large``), read through a bounded stream."""
        if max_bytes is None or path.stat().st_size <= max_bytes:
            with mapped(f"s3 upload {key}"):
                self.client.upload_file(str(path), self.bucket, self._key(key))
            return
        with open(path, "rb") as handle, mapped(f"s3 upload {key}"):
            head = io.BufferedReader(_Bounded(handle, max_bytes + 1))
            self.client.upload_fileobj(head, self.bucket, self._key(key))

    def get(self, key: str) -> bytes:
        try:
            with mapped(f"s3 get {key}"):
                return self.client.get_object(Bucket=self.bucket, Key=self._key(key))["Body"].read()
        except Exception as error:
            if is_not_found(error):
                raise KeyError(key) from None
            raise

    def head(self, key: str) -> dict[str, str] | None:
        try:
            with mapped(f"s3 head {key}"):
                return dict(self.client.head_object(Bucket=self.bucket,
                                                    Key=self._key(key)).get("Metadata", {}))
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

    @contextmanager
    def local_path(self, key: str) -> Iterator[Path]:
        """Download to a temporary file (Lambda's /tmp), removed when the block ends."""
        handle, name = tempfile.mkstemp(prefix="doclake-", suffix=Path(key).suffix)
        os.close(handle)
        try:
            try:
                with mapped(f"s3 download {key}"):
                    self.client.download_file(self.bucket, self._key(key), name)
            except Exception as error:
                if is_not_found(error):
                    raise KeyError(key) from None
                raise
            yield Path(name)
        finally:
            Path(name).unlink(missing_ok=True)
