"""Compaction's file work: removing stale temporary files, reading footers and rows, and
writing the outputs durably under temporary names before they are moved into place (the
listing of partitions is ``lake.partitions``).

Apart from ``lake.compaction`` (the order of the steps, which is what makes compaction safe,
and its reports) and ``lake.compaction_plan`` (the decisions, pure). Everything here talks to a
``pyarrow`` filesystem, local or S3.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from lake.compaction_plan import KEY_COLUMNS
from lake.files import fsync_directory, fsync_file
from lake.layout import COMPACTED_PREFIX, data_file_name
from lake.partitions import TMP_PREFIX, is_tmp_file
from lake.schema import arrow_fingerprint

__all__ = ["TMP_PREFIX", "OUTPUT_PREFIX", "ROW_GROUP_ROWS", "CACHE_BYTES", "SMALL_FILE_BYTES",
           "FETCH_BYTES", "IO_THREADS", "io_pool", "DataFile", "remove_stale_tmp", "read_footers",
           "delete", "read", "load", "write_outputs", "RollingWriter"]

OUTPUT_PREFIX = COMPACTED_PREFIX
# DuckDB's own row-group size: its unit of parallelism when it scans a file.
ROW_GROUP_ROWS = 122_880
# Inputs are read once and held in memory while their decoded total fits; the rest are read
# twice (keys first, then whole), so a huge partition never has to fit in memory.
CACHE_BYTES = 512 * 2**20
# A small file is fetched whole in one read (one GET on S3) instead of a footer read and then
# a data read; up to FETCH_BYTES of them per partition, in name order.
SMALL_FILE_BYTES = 1 * 2**20
FETCH_BYTES = 256 * 2**20
# Footer reads, reads and deletes are I/O-bound and release the GIL; on S3 each is a round trip.
IO_THREADS = 8

_pool: tuple[int, ThreadPoolExecutor] | None = None
_pool_lock = threading.Lock()


def io_pool() -> ThreadPoolExecutor:
    """The process's one pool of ``IO_THREADS`` for footer reads, reads and deletes. A pool a
    step started and stopped eight threads three times a partition: a run's end compacting 79
    files in 11 partitions started 175 threads, each start waiting for the busy main process's
    interpreter lock. Kept for the process's life (idle threads cost nothing); a child forked
    from a process that had one makes its own (threads do not survive a fork)."""
    global _pool
    with _pool_lock:
        if _pool is None or _pool[0] != os.getpid():
            _pool = (os.getpid(), ThreadPoolExecutor(IO_THREADS,
                                                     thread_name_prefix="lake-compaction-io"))
        return _pool[1]


@dataclass(frozen=True)
class DataFile:
    path: str
    rows: int
    nbytes: int  # decoded size, summed from the footer's row groups
    schema: pa.Schema
    content: pa.Buffer | None = None  # the whole file, when it was small enough to fetch at once


# --- a partition's files ----------------------------------------------------------------------


def remove_stale_tmp(filesystem: pafs.FileSystem, infos: list[pafs.FileInfo],
                      max_age_s: float) -> list[str]:
    """Delete ``.tmp-*`` leftovers of crashed writers; young ones may still be being written."""
    removed = []
    cutoff = time.time() - max_age_s
    for info in infos:
        if not is_tmp_file(info.path) or info.mtime is None:
            continue
        if info.mtime.timestamp() < cutoff:
            try:
                filesystem.delete_file(info.path)
            except FileNotFoundError:
                continue
            removed.append(info.path)
    return removed


def read_footers(filesystem: pafs.FileSystem, infos: list[pafs.FileInfo],
                 errors: list[str]) -> list[DataFile]:
    """Row counts, sizes and schemas; an unreadable file is reported and never becomes an input."""
    infos = sorted(infos, key=lambda i: i.path)
    budget, fetch = FETCH_BYTES, []
    for info in infos:
        whole = info.size is not None and info.size <= min(SMALL_FILE_BYTES, budget)
        budget -= info.size if whole else 0
        fetch.append(whole)

    def footer(info: pafs.FileInfo, whole: bool) -> DataFile | Exception:
        try:
            with filesystem.open_input_file(info.path) as source:
                content = source.read_buffer() if whole else None
                parquet = pq.ParquetFile(pa.BufferReader(content) if whole else source)
                meta = parquet.metadata
                nbytes = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
                return DataFile(info.path, meta.num_rows, nbytes, parquet.schema_arrow, content)
        except (OSError, pa.ArrowException) as error:
            return error

    results = list(io_pool().map(footer, infos, fetch))
    files = []
    for info, result in zip(infos, results, strict=True):
        if isinstance(result, Exception):
            errors.append(f"{info.path}: left in place, unreadable: {result}")
        else:
            files.append(result)
    return files


def delete(filesystem: pafs.FileSystem, path: str) -> None:
    # FileNotFoundError: another compaction got there first, and its outputs hold the rows.
    with contextlib.suppress(FileNotFoundError):
        filesystem.delete_file(path)


def read(filesystem: pafs.FileSystem, f: DataFile, schema: pa.Schema) -> pa.Table:
    """One input in ``schema`` (all columns, or just the keys): missing columns read as nulls."""
    columns = [n for n in schema.names if n in f.schema.names]
    if f.content is not None:
        table = pq.ParquetFile(pa.BufferReader(f.content)).read(columns=columns, use_threads=False)
    else:
        with filesystem.open_input_file(f.path) as source:
            table = pq.ParquetFile(source).read(columns=columns)
    if table.num_rows != f.rows:
        raise OSError(f"{f.path} changed while being compacted")
    if table.schema.equals(schema):
        return table
    arrays = [table[c.name].cast(c.type) if c.name in table.column_names
              else pa.nulls(len(table), c.type) for c in schema]
    return pa.Table.from_arrays(arrays, schema=schema)


def load(filesystem: pafs.FileSystem, inputs: list[DataFile],
          schema: pa.Schema) -> tuple[list[pa.Table | None], pa.Table]:
    """Read every input once, in parallel: whole while the decoded total stays within
    CACHE_BYTES (held for the write pass), else only its keys (read again when written)."""
    key_schema = pa.schema([schema.field(name) for name in KEY_COLUMNS])
    budget, plans = CACHE_BYTES, []
    for f in inputs:
        whole = f.nbytes <= budget
        budget -= f.nbytes if whole else 0
        plans.append((f, schema if whole else key_schema))
    tables = list(io_pool().map(lambda plan: read(filesystem, *plan), plans))
    keys = pa.concat_tables([t.select(list(KEY_COLUMNS)) for t in tables])
    held = [t if s is schema else None for t, (_, s) in zip(tables, plans, strict=True)]
    return held, keys


def write_outputs(filesystem: pafs.FileSystem, folder: str, inputs: list[DataFile],
                   held: list[pa.Table | None], keep: list[np.ndarray], schema: pa.Schema,
                   target_rows: int) -> list[str]:
    """Stream the kept rows of the inputs, in input order, into files of at most target_rows."""
    out = RollingWriter(filesystem, folder, schema, target_rows)
    try:
        for i, (f, mask) in enumerate(zip(inputs, keep, strict=True)):
            table, held[i] = held[i], None  # let go of each input once written
            if not mask.any():
                continue
            if table is None:
                table = read(filesystem, f, schema)
            out.add(table if mask.all() else table.filter(pa.array(mask)))
        return out.finish()
    except BaseException:
        out.abort()
        raise


class RollingWriter:
    """Writes row groups of ROW_GROUP_ROWS into files of at most target_rows, each made durable
    under a temporary name and then moved into place."""

    def __init__(self, filesystem: pafs.FileSystem, folder: str, schema: pa.Schema,
                 target_rows: int):
        self.filesystem = filesystem
        self.folder = folder
        self.schema = schema
        self.target_rows = target_rows
        self.local = isinstance(filesystem, pafs.LocalFileSystem)
        self.outputs: list[str] = []
        self._pending: list[pa.Table] = []
        self._pending_rows = 0
        self._writer: pq.ParquetWriter | None = None
        self._tmp: str | None = None
        self._rows_in_file = 0

    def add(self, table: pa.Table) -> None:
        self._pending.append(table)
        self._pending_rows += table.num_rows
        while self._pending_rows and self._pending_rows >= self._next_group():
            self._write_group(self._next_group())

    def finish(self) -> list[str]:
        if self._pending_rows:
            self._write_group(self._pending_rows)
        if self._writer is not None:
            self._close_file()
        return self.outputs

    def abort(self) -> None:
        """Drop the file being written; files already moved into place stay (harmless copies)."""
        if self._writer is not None:
            try:
                self._writer.close()
            finally:
                self._writer = None
        if self._tmp is not None:
            with contextlib.suppress(OSError):  # else a later run removes it by age
                self.filesystem.delete_file(self._tmp)
            self._tmp = None

    def _next_group(self) -> int:
        return min(ROW_GROUP_ROWS, self.target_rows - self._rows_in_file)

    def _write_group(self, rows: int) -> None:
        data = pa.concat_tables(self._pending)
        head, rest = data.slice(0, rows), data.slice(rows)
        if self._writer is None:
            self._tmp = f"{self.folder}/{TMP_PREFIX}{OUTPUT_PREFIX}{uuid.uuid4().hex}"
            self._writer = pq.ParquetWriter(self._tmp, self.schema, filesystem=self.filesystem,
                                            compression="zstd")
        self._writer.write_table(head, row_group_size=rows)
        self._rows_in_file += rows
        self._pending = [rest] if rest.num_rows else []
        self._pending_rows -= rows
        if self._rows_in_file >= self.target_rows:
            self._close_file()

    def _close_file(self) -> None:
        assert self._writer is not None and self._tmp is not None
        self._writer.close()
        self._writer = None
        final = f"{self.folder}/{data_file_name(OUTPUT_PREFIX, arrow_fingerprint(self.schema))}"
        if self.local:
            fsync_file(self._tmp)
        # Locally a rename; on S3 a server-side copy. Either way readers see all or nothing,
        # which a direct multipart upload cannot promise if the process fails half-way.
        self.filesystem.move(self._tmp, final)
        if self.local:
            fsync_directory(self.folder)
        self.outputs.append(final)
        self._tmp = None
        self._rows_in_file = 0
