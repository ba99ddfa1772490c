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

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field

import pyarrow as pa
import pyarrow.fs as pafs

from lake.compaction_files import (
    OUTPUT_PREFIX,
    ROW_GROUP_ROWS,
    delete,
    io_pool,
    load,
    read_footers,
    remove_stale_tmp,
    write_outputs,
)
from lake.compaction_plan import FANOUT, TIER_BASE_ROWS, choose_inputs, keep_masks, output_schema, tier
from lake.files import open_lake
from lake.partitions import (
    AFTER_RUN_MIN_FILES,
    TMP_PREFIX,
    basename,
    is_data_file,
    partition_due,
    partitions,
)
from lake.partitions import event_types as event_types_in
from lake.schema import convert_lists_without_pandas

__all__ = [
    "AFTER_RUN_MIN_FILES", "AUTO_MIN_SMALL_FILES", "FANOUT", "OUTPUT_PREFIX", "ROW_GROUP_ROWS",
    "TIER_BASE_ROWS", "TMP_PREFIX", "BeforeDelete", "CompactionReport", "PartitionReport", "choose_inputs",
    "compact", "compact_after_run", "tier",
]

logger = logging.getLogger(__name__)


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


BeforeDelete = Callable[[PartitionReport], None]


def compact(
    lake_uri: str | tuple[pafs.FileSystem, str],
    *,
    event_types: Iterable[str] | None = None,
    days: Iterable[str] | None = None,
    min_files: int = 2,
    min_partition_files: int = 0,
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
    ones may belong to a running writer). A partition of fewer than ``min_partition_files`` data
    files and no ``.tmp-*`` file is left as it is (``lake.partitions.partition_due``: a run's
    end merges only where it pays).

    ``before_delete`` is a test seam: it is called with the partition's report once its outputs
    are durable and before any input is deleted, so a test can pause or kill the process there.
    """
    if target_rows < 1 or min_files < 1 or fanout < 2:
        raise ValueError("target_rows and min_files must be at least 1, fanout at least 2")
    wanted_days = None if days is None else {f"dt={d}" for d in days}
    started = time.monotonic()
    convert_lists_without_pandas()  # pyarrow's first list would import pandas: 0.3 s, unused
    filesystem, root = lake_uri if isinstance(lake_uri, tuple) else open_lake(lake_uri)
    report = CompactionReport()
    types = list(event_types) if event_types is not None else event_types_in(filesystem, root)
    for event_type in types:
        for folder, infos in partitions(filesystem, root, event_type).items():
            if wanted_days is not None and basename(folder) not in wanted_days:
                continue
            if not partition_due(infos, min_partition_files):
                continue
            report.tmp_removed += remove_stale_tmp(filesystem, infos, tmp_max_age_s)
            data = [i for i in infos if is_data_file(i.path)]
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


def compact_folders(lake_uri: str | tuple[pafs.FileSystem, str], folders: Iterable[str]) -> int:
    """Compact each partition folder (``<root>/event_type=T/dt=D``) of ``folders``: the writer's
    background compaction. A function of a lake's address alone (a local root is a string), so
    it can run in another process; never raises (the events are durable regardless). Returns
    how many partitions were compacted."""
    compacted = 0
    for folder in folders:
        event_type = folder.rsplit("/", 2)[-2].removeprefix("event_type=")
        day = folder.rsplit("/", 1)[-1].removeprefix("dt=")
        try:
            report = compact(lake_uri, event_types=[event_type], days=[day])
        except Exception as error:  # noqa: BLE001 - the events are durable regardless
            logger.warning("background compaction of %s failed: %s", folder, error)
            continue
        for error in report.errors:
            logger.warning("background compaction: %s", error)
        compacted += len(report.partitions)
    return compacted


def compact_after_run(lake_uri: str, min_partition_files: int = AFTER_RUN_MIN_FILES, *,
                      min_small_files: int = AUTO_MIN_SMALL_FILES,
                      log: Callable[[str], None] | None = None) -> CompactionReport | None:
    """Compaction as the last step of ``doclake run`` / ``worker``: never raises.

    Only the partitions holding ``min_partition_files`` data files or more are merged
    (``lake.partitions.AFTER_RUN_MIN_FILES`` says why), and in them size tiers keep it cheap
    (the run's new small files, not whole partitions), so an analyst opening the lake after a
    run meets fewer than ``min_partition_files`` files a partition, never thousands. Returns
    the report, or None if compaction itself failed (logged; the run's outcome does not change:
    the events are durable either way, and the next run or ``doclake lake compact`` retries)."""
    try:
        report = compact(lake_uri, min_files=min_small_files,
                         min_partition_files=min_partition_files)
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
    files = read_footers(filesystem, infos, report.errors)
    chosen = choose_inputs([f.rows for f in files], min_files=min_files, target_rows=target_rows,
                           base_rows=base_rows, fanout=fanout)
    inputs = [files[i] for i in chosen]
    if not inputs:
        return None
    schema = output_schema(event_type, [f.schema for f in inputs])
    held, keys = load(filesystem, inputs, schema)
    keep = keep_masks(keys, [f.rows for f in inputs])
    outputs = write_outputs(filesystem, folder, inputs, held, keep, schema, target_rows)
    kept = sum(int(mask.sum()) for mask in keep)
    total = sum(f.rows for f in files)
    dt = basename(folder).removeprefix("dt=")
    result = PartitionReport(
        event_type=event_type, dt=dt, path=folder,
        files_before=len(files), files_after=len(files) - len(inputs) + len(outputs),
        rows_before=total, rows_after=total - sum(f.rows for f in inputs) + kept,
        inputs=[f.path for f in inputs], outputs=outputs,
    )
    if before_delete is not None:
        before_delete(result)
    list(io_pool().map(lambda path: delete(filesystem, path), result.inputs))
    return result
