"""Compaction: many small event files in a partition become a few large ones, duplicates dropped.

Why: the writer makes one file per event type per flush, so a busy day of ``page_read`` events is
tens of thousands of files, and every query pays a listing entry, an open and a footer read for
each. ``compact`` rewrites the small files of each ``(event_type, dt)`` partition into files of up
to ``target_rows`` rows in the *same* folder, so the Hive layout, the views' glob and Athena's
partition projection do not change; it keeps one row per ``event_id`` on the way.

Safety comes from the order of the steps, for one partition:

1. list the partition once; those files, and only those, are the inputs (files written later,
   and ``.tmp-*`` files, are never inputs);
2. read the inputs' ``event_id`` and ``occurred_at`` and choose one row per id: the earliest, as
   the ``ev_<type>`` views do, so compaction never changes what a view shows;
3. write each output under a ``.tmp-`` name, then move it into place as
   ``compacted-<uuid7>.parquet`` (locally: fsync the file, rename, fsync the folder);
4. only then delete the inputs.

A kill before step 4 ends leaves every row at least twice: readers deduplicate by ``event_id``
and the next run removes the extra copies. A kill inside step 3 leaves a ``.tmp-`` file that no
reader's glob matches; a later run deletes it once it is older than ``tmp_max_age_s``. Two
compactions racing on one partition lose nothing either: each deletes only files it has read in
full and whose rows it has made durable.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from lake.events import EVENT_TYPES
from lake.layout import EVENTS_PREFIX, data_file_name
from lake.schema import arrow_fingerprint, arrow_schema
from lake.writer import open_lake

logger = logging.getLogger(__name__)

TMP_PREFIX = ".tmp-"
OUTPUT_PREFIX = "compacted-"
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
KEY_COLUMNS = ("event_id", "occurred_at")


@dataclass
class PartitionReport:
    """What compaction did to one partition.

    ``files_*`` and ``rows_*`` count every data file of the partition as listed, including the
    large files that were left alone; ``inputs`` are the files rewritten and then deleted.
    """

    event_type: str
    dt: str
    path: str
    files_before: int
    files_after: int
    rows_before: int
    rows_after: int
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)

    @property
    def duplicates_dropped(self) -> int:
        return self.rows_before - self.rows_after


@dataclass
class CompactionReport:
    """The outcome of one ``compact`` run; ``errors`` names what was left as it was."""

    partitions: list[PartitionReport] = field(default_factory=list)
    tmp_removed: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def files_before(self) -> int:
        return sum(p.files_before for p in self.partitions)

    @property
    def files_after(self) -> int:
        return sum(p.files_after for p in self.partitions)

    @property
    def rows_before(self) -> int:
        return sum(p.rows_before for p in self.partitions)

    @property
    def rows_after(self) -> int:
        return sum(p.rows_after for p in self.partitions)

    @property
    def duplicates_dropped(self) -> int:
        return sum(p.duplicates_dropped for p in self.partitions)

    def to_dict(self) -> dict:
        """A JSON-ready summary, one entry per compacted partition (paths left out)."""
        partitions = []
        for p in self.partitions:
            entry = {k: v for k, v in asdict(p).items() if k not in ("inputs", "outputs")}
            partitions.append({**entry, "duplicates_dropped": p.duplicates_dropped})
        return {
            "partitions": partitions,
            "files_before": self.files_before,
            "files_after": self.files_after,
            "rows_before": self.rows_before,
            "rows_after": self.rows_after,
            "duplicates_dropped": self.duplicates_dropped,
            "tmp_removed": len(self.tmp_removed),
            "errors": self.errors,
            "seconds": round(self.seconds, 3),
        }


@dataclass(frozen=True)
class _DataFile:
    path: str
    rows: int
    nbytes: int  # decoded size, summed from the footer's row groups
    schema: pa.Schema
    content: pa.Buffer | None = None  # the whole file, when it was small enough to fetch at once


BeforeDelete = Callable[[PartitionReport], None]


TIER_BASE_ROWS = 10_000
FANOUT = 4


def tier(rows: int, base_rows: int = TIER_BASE_ROWS, fanout: int = FANOUT) -> int:
    """A file's size tier: 0 below ``base_rows`` (the writer's flushes), then one tier per
    factor of ``fanout``: tier k holds files of ``base_rows * fanout**(k-1)`` rows and up."""
    level, bound = 0, base_rows
    while rows >= bound:
        level, bound = level + 1, bound * fanout
    return level


def choose_inputs(rows: list[int], *, min_files: int, target_rows: int,
                  base_rows: int = TIER_BASE_ROWS, fanout: int = FANOUT) -> list[int]:
    """Which files of a partition to rewrite (indexes into ``rows``), size-tiered.

    Files of ``target_rows`` or more are done. The others are grouped by ``tier``; tier 0 (the
    writer's small files) is merged once it has ``min_files`` files, and a higher tier once it
    has ``fanout`` files. So a run rewrites the new small files (and a tier-0 output of at most
    ``base_rows`` rows), not the partition: a row is rewritten about once per tier over its
    life, ``log(target_rows / base_rows) / log(fanout)`` times, instead of on every run.
    Duplicates between tiers stay until their tiers merge; the views drop them meanwhile."""
    tiers: dict[int, list[int]] = {}
    for index, count in enumerate(rows):
        if count < target_rows:
            tiers.setdefault(tier(count, base_rows, fanout), []).append(index)
    chosen = []
    for level, members in sorted(tiers.items()):
        if len(members) >= (min_files if level == 0 else max(fanout, min_files)):
            chosen += members
    return sorted(chosen)


def compact(
    lake_uri: str | tuple[pafs.FileSystem, str],
    *,
    event_types: Iterable[str] | None = None,
    days: Iterable[str] | None = None,
    min_files: int = 2,
    target_rows: int = 1_000_000,
    tier_base_rows: int = TIER_BASE_ROWS,
    fanout: int = FANOUT,
    tmp_max_age_s: float = 3600.0,
    before_delete: BeforeDelete | None = None,
) -> CompactionReport:
    """Compact the event partitions of the lake at ``lake_uri`` (a folder or ``s3://...``).

    In each partition (of ``event_types`` and ``days`` when given, else all), the files chosen
    by ``choose_inputs`` (size tiers; ``tier_base_rows=target_rows`` puts every file in tier 0
    and rewrites the whole partition, the old behaviour) are rewritten into files of at most
    ``target_rows`` rows. ``.tmp-*`` files older than ``tmp_max_age_s`` are removed (younger
    ones may belong to a running writer).

    ``before_delete`` is a test seam: it is called with the partition's report once its outputs
    are durable and before any input is deleted, so a test can pause or kill the process there.
    """
    if target_rows < 1 or min_files < 1 or fanout < 2:
        raise ValueError("target_rows and min_files must be at least 1, fanout at least 2")
    wanted_days = None if days is None else {f"dt={d}" for d in days}
    started = time.monotonic()
    filesystem, root = lake_uri if isinstance(lake_uri, tuple) else open_lake(lake_uri)
    report = CompactionReport()
    types = list(event_types) if event_types is not None else _event_types(filesystem, root)
    for event_type in types:
        for folder, infos in _partitions(filesystem, root, event_type).items():
            if wanted_days is not None and _basename(folder) not in wanted_days:
                continue
            report.tmp_removed += _remove_stale_tmp(filesystem, infos, tmp_max_age_s)
            data = [i for i in infos if _is_data_file(i.path)]
            try:
                result = _compact_partition(
                    filesystem, folder, event_type, data, report,
                    min_files=min_files, target_rows=target_rows, base_rows=tier_base_rows,
                    fanout=fanout, before_delete=before_delete,
                )
            except (OSError, pa.ArrowException) as error:
                report.errors.append(f"{folder}: {type(error).__name__}: {error}")
                continue
            if result is not None:
                report.partitions.append(result)
    report.seconds = time.monotonic() - started
    return report


AUTO_MIN_SMALL_FILES = 2


def compact_after_run(lake_uri: str, *, min_small_files: int = AUTO_MIN_SMALL_FILES,
                      log: Callable[[str], None] | None = None) -> CompactionReport | None:
    """Compaction as the last step of ``doclake run`` / ``worker``: never raises.

    Size tiers keep it cheap (the run's new small files, not whole partitions), so an analyst
    opening the lake after a run meets a few files per partition, never thousands. Returns the
    report, or None if compaction itself failed (logged; the run's outcome does not change:
    the events are durable either way, and the next run or ``doclake lake compact`` retries)."""
    try:
        report = compact(lake_uri, min_files=min_small_files)
    except Exception as error:  # noqa: BLE001 - a failed tidy-up must not fail the run
        logger.warning("compaction after the run failed: %s", error)
        if log:
            log(f"lake compaction skipped: {error}")
        return None
    for error in report.errors:
        logger.warning("compaction: %s", error)
    if log and report.partitions:
        log(f"lake compacted: {report.files_before} files -> {report.files_after} "
            f"in {report.seconds:.1f} s")
    return report


# --- listing -----------------------------------------------------------------------------------


def _basename(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def _is_data_file(path: str) -> bool:
    name = _basename(path)
    return name.endswith(".parquet") and not name.startswith(".")


def _event_types(filesystem: pafs.FileSystem, root: str) -> list[str]:
    """Every event type with a folder in the lake, known to this release or not."""
    selector = pafs.FileSelector(f"{root}/{EVENTS_PREFIX}", allow_not_found=True)
    names = [_basename(i.path) for i in filesystem.get_file_info(selector)
             if i.type == pafs.FileType.Directory]
    return sorted(n.split("=", 1)[1] for n in names if n.startswith("event_type="))


def _partitions(filesystem: pafs.FileSystem, root: str,
                event_type: str) -> dict[str, list[pafs.FileInfo]]:
    """Files directly inside each partition folder, as the views' ``*/*.parquet`` glob sees them."""
    base = f"{root}/{EVENTS_PREFIX}/event_type={event_type}"
    selector = pafs.FileSelector(base, recursive=True, allow_not_found=True)
    folders: dict[str, list[pafs.FileInfo]] = {}
    for info in filesystem.get_file_info(selector):
        if info.type != pafs.FileType.File:
            continue
        folder = info.path.rsplit("/", 1)[0]
        if folder.rsplit("/", 1)[0] == base:
            folders.setdefault(folder, []).append(info)
    return dict(sorted(folders.items()))


def _remove_stale_tmp(filesystem: pafs.FileSystem, infos: list[pafs.FileInfo],
                      max_age_s: float) -> list[str]:
    """Delete ``.tmp-*`` leftovers of crashed writers; young ones may still be being written."""
    removed = []
    cutoff = time.time() - max_age_s
    for info in infos:
        if not _basename(info.path).startswith(TMP_PREFIX) or info.mtime is None:
            continue
        if info.mtime.timestamp() < cutoff:
            try:
                filesystem.delete_file(info.path)
            except FileNotFoundError:
                continue
            removed.append(info.path)
    return removed


def _read_footers(filesystem: pafs.FileSystem, infos: list[pafs.FileInfo],
                  report: CompactionReport) -> list[_DataFile]:
    """Row counts, sizes and schemas; an unreadable file is reported and never becomes an input."""
    infos = sorted(infos, key=lambda i: i.path)
    budget, fetch = FETCH_BYTES, []
    for info in infos:
        whole = info.size is not None and info.size <= min(SMALL_FILE_BYTES, budget)
        budget -= info.size if whole else 0
        fetch.append(whole)

    def footer(info: pafs.FileInfo, whole: bool) -> _DataFile | Exception:
        try:
            with filesystem.open_input_file(info.path) as source:
                content = source.read_buffer() if whole else None
                parquet = pq.ParquetFile(pa.BufferReader(content) if whole else source)
                meta = parquet.metadata
                nbytes = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
                return _DataFile(info.path, meta.num_rows, nbytes, parquet.schema_arrow, content)
        except (OSError, pa.ArrowException) as error:
            return error

    with ThreadPoolExecutor(IO_THREADS) as pool:
        results = list(pool.map(footer, infos, fetch))
    files = []
    for info, result in zip(infos, results, strict=True):
        if isinstance(result, Exception):
            report.errors.append(f"{info.path}: left in place, unreadable: {result}")
        else:
            files.append(result)
    return files


# --- one partition -----------------------------------------------------------------------------


def _compact_partition(
    filesystem: pafs.FileSystem,
    folder: str,
    event_type: str,
    infos: list[pafs.FileInfo],
    report: CompactionReport,
    *,
    min_files: int,
    target_rows: int,
    base_rows: int,
    fanout: int,
    before_delete: BeforeDelete | None,
) -> PartitionReport | None:
    files = _read_footers(filesystem, infos, report)
    chosen = choose_inputs([f.rows for f in files], min_files=min_files, target_rows=target_rows,
                           base_rows=base_rows, fanout=fanout)
    inputs = [files[i] for i in chosen]
    if not inputs:
        return None
    schema = _output_schema(event_type, [f.schema for f in inputs])
    held, keys = _load(filesystem, inputs, schema)
    keep = _keep_masks(keys, [f.rows for f in inputs])
    outputs = _write_outputs(filesystem, folder, inputs, held, keep, schema, target_rows)
    kept = sum(int(mask.sum()) for mask in keep)
    total = sum(f.rows for f in files)
    dt = _basename(folder).removeprefix("dt=")
    result = PartitionReport(
        event_type=event_type, dt=dt, path=folder,
        files_before=len(files), files_after=len(files) - len(inputs) + len(outputs),
        rows_before=total, rows_after=total - sum(f.rows for f in inputs) + kept,
        inputs=[f.path for f in inputs], outputs=outputs,
    )
    if before_delete is not None:
        before_delete(result)
    with ThreadPoolExecutor(IO_THREADS) as pool:
        list(pool.map(lambda path: _delete(filesystem, path), result.inputs))
    return result


def _delete(filesystem: pafs.FileSystem, path: str) -> None:
    # FileNotFoundError: another compaction got there first, and its outputs hold the rows.
    with contextlib.suppress(FileNotFoundError):
        filesystem.delete_file(path)


def _output_schema(event_type: str, schemas: list[pa.Schema]) -> pa.Schema:
    """Today's schema first, then any column an input has that today's model lacks (never lost)."""
    cls = EVENT_TYPES.get(event_type)
    if cls is None:
        return pa.unify_schemas(schemas)
    current = arrow_schema(cls)
    return pa.unify_schemas([current, *schemas]).with_metadata(current.metadata)


def _read(filesystem: pafs.FileSystem, f: _DataFile, schema: pa.Schema) -> pa.Table:
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


def _load(filesystem: pafs.FileSystem, inputs: list[_DataFile],
          schema: pa.Schema) -> tuple[list[pa.Table | None], pa.Table]:
    """Read every input once, in parallel: whole while the decoded total stays within
    CACHE_BYTES (held for the write pass), else only its keys (read again when written)."""
    key_schema = pa.schema([schema.field(name) for name in KEY_COLUMNS])
    budget, plans = CACHE_BYTES, []
    for f in inputs:
        whole = f.nbytes <= budget
        budget -= f.nbytes if whole else 0
        plans.append((f, schema if whole else key_schema))
    with ThreadPoolExecutor(IO_THREADS) as pool:
        tables = list(pool.map(lambda plan: _read(filesystem, *plan), plans))
    keys = pa.concat_tables([t.select(list(KEY_COLUMNS)) for t in tables])
    held = [t if s is schema else None for t, (_, s) in zip(tables, plans, strict=True)]
    return held, keys


def _keep_masks(keys: pa.Table, rows: list[int]) -> list[np.ndarray]:
    """Per input, which rows to keep: the earliest row of each event_id, ties to the first file
    (files are in name order: earlier compactions first, then writes in time order)."""
    total = keys.num_rows
    table = keys.append_column("order", pa.array(np.arange(total, dtype=np.int64)))
    order = pc.sort_indices(table, sort_keys=[
        ("event_id", "ascending"), ("occurred_at", "ascending"), ("order", "ascending")])
    sorted_ids = pc.take(table["event_id"], order).combine_chunks()
    first = pc.fill_null(pc.not_equal(sorted_ids[1:], sorted_ids[:-1]), True)
    first_of_run = np.concatenate([[True], first.to_numpy(zero_copy_only=False)])[:total]
    keep = np.zeros(total, dtype=bool)
    keep[order.to_numpy()[first_of_run]] = True
    bounds = np.cumsum([0, *rows])
    return [keep[bounds[i]:bounds[i + 1]] for i in range(len(rows))]


def _write_outputs(filesystem: pafs.FileSystem, folder: str, inputs: list[_DataFile],
                   held: list[pa.Table | None], keep: list[np.ndarray], schema: pa.Schema,
                   target_rows: int) -> list[str]:
    """Stream the kept rows of the inputs, in input order, into files of at most target_rows."""
    out = _RollingWriter(filesystem, folder, schema, target_rows)
    try:
        for i, (f, mask) in enumerate(zip(inputs, keep, strict=True)):
            table, held[i] = held[i], None  # let go of each input once written
            if not mask.any():
                continue
            if table is None:
                table = _read(filesystem, f, schema)
            out.add(table if mask.all() else table.filter(pa.array(mask)))
        return out.finish()
    except BaseException:
        out.abort()
        raise


class _RollingWriter:
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
            _fsync(self._tmp)
        # Locally a rename; on S3 a server-side copy. Either way readers see all or nothing,
        # which a direct multipart upload cannot promise if the process fails half-way.
        self.filesystem.move(self._tmp, final)
        if self.local:
            _fsync(self.folder, directory=True)
        self.outputs.append(final)
        self._tmp = None
        self._rows_in_file = 0


def _fsync(path: str, *, directory: bool = False) -> None:
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if directory else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
