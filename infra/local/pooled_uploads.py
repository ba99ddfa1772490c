"""Ingest's file work in a worker process: the main process decides and records, never reads bytes.

Hashing every file and copying the new ones durably (a folder each, a file each, their fsyncs)
were 1.7 s of the main process's 2.8 s of ingest CPU on 2,032 files, on the one process whose CPU
caps a run whatever the cores. ``PooledUploads`` runs them, a batch a call, in the CPU runner's
``uploads`` lane (``infra.local.cpu_lanes``); the batch's decisions, rows, events and messages
stay on ingest's thread, in the order the planner keeps (every upload durable before its job).

A small batch that comes before the lane's process exists (a run's first: one file, then two,
then four) is done on ingest's thread instead: a few files' hashing and copies take
milliseconds, where waiting for the lane's process to be forked took 0.1 to 0.9 s before a
run's first job was registered (``HERE_UNTIL_STARTED``).

A call the pool cannot finish (its process died, the pool broke) is done again on ingest's
thread (``ThreadedUploads``): the pool is where the work is cheapest for the run, not a new way
for ingest to fail. A call that raised (a file gone) raises as it would have on the thread.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path

from extract.errors import TransientError
from extract.ports import ObjectStore
from infra.local.cpu import MAX_WORKER_FILE_BYTES
from infra.local.cpu_lanes import LanedCpu
from ingest.fingerprint import Fingerprint, ThreadedUploads, fingerprint_files, store_uploads

__all__ = ["log", "HERE_UNTIL_STARTED", "PooledUploads"]

log = logging.getLogger(__name__)

HERE_UNTIL_STARTED = 8
"""Batches of at most this many files are done on ingest's thread while the lane is not yet
started (ingest's batches grow 1, 2, 4, 8, ...: ``infra.local.background_ingest``)."""


class PooledUploads:
    """``ingest.fingerprint.UploadWork`` on the ``uploads`` lane of ``cpu``."""

    def __init__(self, cpu: LanedCpu):
        self._cpu = cpu
        self._here = ThreadedUploads()

    def _here_now(self, files: int) -> bool:
        return files <= HERE_UNTIL_STARTED and not self._cpu.uploads_started

    def fingerprints(self, paths: Sequence[Path], max_bytes: int | None
                     ) -> list[Fingerprint | OSError]:
        if self._here_now(len(paths)):
            return self._here.fingerprints(paths, max_bytes)
        try:
            return self._cpu.call(fingerprint_files, list(paths), max_bytes)
        except TransientError as error:
            log.warning("hashing %d files in a worker failed (%s); hashing them here",
                        len(paths), error)
            return self._here.fingerprints(paths, max_bytes)

    def store(self, objects: ObjectStore, uploads: Sequence[tuple[str, Path]],
              max_bytes: int | None, digests: Mapping[str, str] | None = None) -> list[str]:
        if (max_bytes is None or max_bytes >= MAX_WORKER_FILE_BYTES
                or self._here_now(len(uploads))):
            # A worker may write no file that large (``RLIMIT_FSIZE``): a home whose size limit
            # is above it copies its uploads here, as before (and so does an early small batch).
            return self._here.store(objects, uploads, max_bytes, digests)
        try:
            return self._cpu.call(store_uploads, objects, list(uploads), max_bytes, digests)
        except TransientError as error:
            log.warning("storing %d uploads in a worker failed (%s); storing them here",
                        len(uploads), error)
            return self._here.store(objects, uploads, max_bytes, digests)

    def close(self) -> None:
        self._here.close()
