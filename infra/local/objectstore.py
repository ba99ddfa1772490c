"""The object store as a folder: the same keys as the S3 bucket, atomic and durable writes
(temporary file, fsync, rename, fsync of the folder: ``infra.local.durable``).

Object metadata (S3 user metadata) lives in a sidecar JSON file under ``.meta/`` so that the
key folders hold exactly the objects, as a listing of the bucket would.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from infra.local import durable

META_DIR = ".meta"


class FolderObjectStore:
    def __init__(self, root: Path):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        if key.startswith("/") or ".." in key.split("/") or key.startswith(META_DIR):
            raise ValueError(f"invalid object key: {key!r}")
        return self.root / key

    def _meta_path(self, key: str) -> Path:
        return self.root / META_DIR / f"{key}.json"

    def put(self, key: str, data: bytes, *, metadata: dict[str, str] | None = None) -> None:
        # Metadata first: an object that exists always has its metadata.
        target = self._path(key)
        if metadata:
            durable.write_bytes(self._meta_path(key), json.dumps(metadata).encode())
        durable.write_bytes(target, data)

    def put_file(self, key: str, path: Path) -> None:
        durable.copy_file(path, self._path(key))

    def get(self, key: str) -> bytes:
        try:
            return self._path(key).read_bytes()
        except FileNotFoundError:
            raise KeyError(key) from None

    def head(self, key: str) -> dict[str, str] | None:
        if not self._path(key).is_file():
            return None
        try:
            return json.loads(self._meta_path(key).read_text())
        except FileNotFoundError:
            return {}

    def list(self, prefix: str) -> list[str]:
        base = self.root / prefix
        folder = base if prefix.endswith("/") else base.parent
        if not folder.is_dir():
            return []
        keys = []
        for path in folder.rglob("*"):
            if path.is_file() and not path.name.startswith("."):
                key = path.relative_to(self.root).as_posix()
                if key.startswith(prefix):
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
