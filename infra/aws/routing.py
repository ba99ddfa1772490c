"""Where things go on AWS.

Two buckets behind one ObjectStore: uploads in their own bucket (short lifecycle, the only
one callers can write to), everything the pipeline makes (pages, converted PDFs, results) in
the results bucket. The handlers see one store with one key layout, as locally.

Two queues behind one queue name (``routed_queues``): SQS has no priorities, so the queues whose
work grows with a document's pages (``TWINNED_QUEUES``) have a twin for small documents
(``read-small``, ``extract.scheduling.small_queue``) with its own consumers and its own cap; a
message goes to the twin when its document has few pages left (``extract.scheduling.queue_class``),
so a one-page letter's read never waits behind a book's hundred units in the bulk queue."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TypeVar

from extract.messages import CONVERT_QUEUE, READ_QUEUE
from extract.scheduling import queue_class, small_queue
from infra.aws.s3 import S3ObjectStore

__all__ = ["UPLOADS_PREFIX", "TWINNED_QUEUES", "routed_queues", "RoutedObjectStore"]

UPLOADS_PREFIX = "uploads/"

TWINNED_QUEUES = (READ_QUEUE, CONVERT_QUEUE)
"""Queues with a small-documents twin: a read's and a conversion's time grow with the pages."""


def routed_queues(queue: str, pages: int | Sequence[int] | None, count: int,
                  known: Collection[str]) -> list[str]:
    """For each of ``count`` messages to ``queue`` (``pages`` left: one count for all, or one
    a message), the queue it goes to: the small twin when ``known`` has one and the document is
    small, else ``queue`` itself."""
    twin = small_queue(queue)
    if pages is None or twin not in known:
        return [queue] * count
    counts = [pages] * count if isinstance(pages, int) else list(pages)
    if len(counts) != count:
        raise ValueError(f"{len(counts)} page counts for {count} messages")
    return [twin if queue_class(n) == "small" else queue for n in counts]

_Keyed = TypeVar("_Keyed", bound=tuple)


def _by_bucket(items: Sequence[_Keyed]) -> tuple[list[_Keyed], list[_Keyed]]:
    """``(key, ...)`` items split into the uploads bucket's and the results bucket's."""
    uploads = [item for item in items if item[0].startswith(UPLOADS_PREFIX)]
    return uploads, [item for item in items if not item[0].startswith(UPLOADS_PREFIX)]


class RoutedObjectStore:
    def __init__(self, uploads: S3ObjectStore, results: S3ObjectStore):
        self.uploads = uploads
        self.results = results

    def _for(self, key: str) -> S3ObjectStore:
        return self.uploads if key.startswith(UPLOADS_PREFIX) else self.results

    def put(self, key: str, data: bytes, *, metadata: dict[str, str] | None = None) -> None:
        self._for(key).put(key, data, metadata=metadata)

    def put_many(self, objects: Sequence[tuple[str, bytes, dict[str, str] | None]]) -> None:
        uploads, results = _by_bucket(objects)
        self.uploads.put_many(uploads)
        self.results.put_many(results)

    def put_file(self, key: str, path: Path, *, max_bytes: int | None = None) -> None:
        self._for(key).put_file(key, path, max_bytes=max_bytes)

    def put_files(self, files: Sequence[tuple[str, Path]], *, max_bytes: int | None = None,
                  digests: Mapping[str, str] | None = None) -> None:
        uploads, results = _by_bucket(files)
        self.uploads.put_files(uploads, max_bytes=max_bytes, digests=digests)
        self.results.put_files(results, max_bytes=max_bytes, digests=digests)

    def get(self, key: str) -> bytes:
        return self._for(key).get(key)

    def head(self, key: str) -> dict[str, str] | None:
        return self._for(key).head(key)

    def list(self, prefix: str) -> list[str]:
        return self._for(prefix).list(prefix)

    def delete_prefix(self, prefix: str) -> int:
        return self._for(prefix).delete_prefix(prefix)

    def local_path(self, key: str) -> AbstractContextManager[Path]:
        return self._for(key).local_path(key)
