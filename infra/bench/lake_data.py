"""A synthetic but realistically shaped event stream for the lake benchmarks.

Jobs of one to dozens of five-page units, spread over a few days. Each unit emits what a worker
writes (unit_started, five page_read, unit_done); each job emits job_created, job_split and
job_succeeded (or job_failed). Events are grouped into *flushes* of about 50 events, the batches a
group commit hands the writer: seven units per flush, or sixteen jobs' status events per flush.

The stream is built column-wise with numpy, so a million events take seconds, and every row is
exactly what the event models would produce (same schema, same deterministic ``event_id``).
Two ways out: ``flush_events`` rebuilds pydantic events for the real ``ParquetEventWriter``;
``write_lake`` writes the same rows file by file the way the writer lays them out, for
lakes too large to push through pydantic within a benchmark's time budget.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from lake.events import EVENT_NAMESPACE, EVENT_TYPES, SCHEMA_VERSION, Event
from lake.layout import data_file_name, event_partition
from lake.schema import arrow_fingerprint, arrow_schema, from_row

__all__ = ["START", "UNITS_PER_FLUSH", "JOBS_PER_FLUSH", "READERS", "READER_SHARE", "Stream", "uuid7_at",
           "build_stream", "Piece", "iter_flushes", "flush_events", "write_files", "write_lake"]

START = np.datetime64("2025-03-01T00:00:00", "us")
UNITS_PER_FLUSH = 7  # 7 x (1 + 5 + 1) = 49 events
JOBS_PER_FLUSH = 16  # 16 x 3 = 48 events
READERS = np.array(["text", "ocr", "gemini-3-flash", "gemini-fallback"])
READER_SHARE = [0.75, 0.15, 0.08, 0.02]


@dataclass
class Stream:
    """Rows per event type, each with a ``_flush`` column (the flush it belongs to)."""

    tables: dict[str, pa.Table]
    flush_order: np.ndarray  # flush numbers in the order a running pipeline would write them

    @property
    def events(self) -> int:
        return sum(t.num_rows for t in self.tables.values())


def _seconds(values: np.ndarray) -> np.ndarray:
    return (values * 1_000_000).astype("timedelta64[us]")


def _event_ids(event_type: str, *identity: list) -> list[str]:
    """The ids the models derive (``Event._derive_event_id``), computed without pydantic."""
    return [str(uuid.uuid5(EVENT_NAMESPACE, "|".join((event_type, *map(str, parts)))))
            for parts in zip(*identity, strict=True)]


def uuid7_at(millis: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """UUIDv7 strings minted at the given Unix milliseconds (RFC 9562: 48-bit time, version 7,
    variant 10, random rest), as the planner's ids would have been at that moment."""
    rand_a = rng.integers(0, 1 << 12, len(millis))
    rand_b = rng.integers(0, 1 << 62, len(millis), dtype=np.uint64)
    return np.array([str(uuid.UUID(int=(int(ms) << 80) | (0x7 << 76) | (int(a) << 64)
                                    | (0b10 << 62) | int(b)))
                     for ms, a, b in zip(millis, rand_a, rand_b, strict=True)])


def _table(event_type: str, columns: dict[str, object], flush: np.ndarray,
           day: np.ndarray) -> pa.Table:
    """Rows of one type in the type's own Arrow schema; absent optional columns are null.
    ``_flush`` and ``_day`` (the partition date, ``lake.layout.partition_date``) ride along."""
    schema = arrow_schema(EVENT_TYPES[event_type])
    n = len(flush)
    data = {"schema_version": np.full(n, SCHEMA_VERSION), "event_type": [event_type] * n, **columns}
    arrays = [pa.array(data[f.name], f.type) if f.name in data else pa.nulls(n, f.type)
              for f in schema]
    table = pa.Table.from_arrays(arrays, schema=schema)
    table = table.append_column("_flush", pa.array(flush, pa.int64()))
    return table.append_column("_day", pa.array(day.astype("datetime64[D]").astype(str)))


def build_stream(events: int, *, days: int = 7, seed: int = 7) -> Stream:
    """About ``events`` events (rounded to whole jobs) over ``days`` days."""
    rng = np.random.default_rng(seed)
    # Events per job: 3 status events plus 7 per unit; units per job average about 2.9.
    units = np.minimum(rng.geometric(0.35, events // 20 + 1), 70)
    n_jobs = max(1, int(np.searchsorted(np.cumsum(3 + 7 * units), events, side="right")))
    units = units[:n_jobs]
    start = np.sort(START + _seconds(rng.uniform(0, days * 86_400, n_jobs)))
    # ids minted when the job was planned: every event of a job is written under its day
    millis = start.astype("datetime64[ms]").astype(np.int64)
    job_ids = uuid7_at(millis, rng)
    doc_ids = uuid7_at(millis, rng)
    job_day = start.astype("datetime64[D]")

    # Units: the job's units run in parallel; each page takes about three seconds.
    job_of_unit = np.repeat(np.arange(n_jobs), units)
    n_units = len(job_of_unit)
    unit_no = np.arange(n_units) - np.repeat(np.cumsum(units) - units, units)
    unit_start = start[job_of_unit] + _seconds(2 + rng.uniform(0, 5, n_units))
    page_secs = rng.gamma(4, 0.75, (n_units, 5))
    page_at = unit_start[:, None] + _seconds(np.cumsum(page_secs, axis=1))
    unit_done = page_at[:, -1] + _seconds(rng.uniform(0.05, 0.3, n_units))
    unit_ids = np.char.add(np.char.add(job_ids[job_of_unit], "-u"), unit_no.astype(str))
    unit_flush = np.arange(n_units) // UNITS_PER_FLUSH

    # Jobs: the poller sees the last unit done a few seconds later.
    finish = np.maximum.reduceat(unit_done, np.cumsum(units) - units) + _seconds(
        rng.uniform(1, 5, n_jobs))
    failed = rng.random(n_jobs) < 0.03
    job_flush = unit_flush[-1] + 1 + np.arange(n_jobs) // JOBS_PER_FLUSH

    tables = {}
    tables["unit_started"] = _table("unit_started", {
        "event_id": _event_ids("unit_started", job_ids[job_of_unit], unit_ids, [1] * n_units),
        "occurred_at": unit_start, "job_id": job_ids[job_of_unit],
        "document_id": doc_ids[job_of_unit], "unit_id": unit_ids, "attempt": np.ones(n_units, np.int64),
        "kind": ["pdf"] * n_units}, unit_flush, job_day[job_of_unit])
    page_unit = np.repeat(np.arange(n_units), 5)
    page_number = (unit_no[page_unit] * 5 + np.tile(np.arange(1, 6), n_units))
    reader = rng.choice(READERS, n_units * 5, p=READER_SHARE)
    chars = rng.integers(200, 4_000, n_units * 5)
    tables["page_read"] = _table("page_read", {
        "event_id": _event_ids("page_read", job_ids[job_of_unit][page_unit], page_number),
        "occurred_at": page_at.reshape(-1), "job_id": job_ids[job_of_unit][page_unit],
        "document_id": doc_ids[job_of_unit][page_unit], "unit_id": unit_ids[page_unit],
        "attempt": np.ones(n_units * 5, np.int64), "page_number": page_number, "reader": reader,
        "chars": np.where(reader == "ocr", chars // 2, chars),
        "duration_ms": page_secs.reshape(-1) * 1000}, unit_flush[page_unit],
        job_day[job_of_unit][page_unit])
    tables["unit_done"] = _table("unit_done", {
        "event_id": _event_ids("unit_done", job_ids[job_of_unit], unit_ids),
        "occurred_at": unit_done, "job_id": job_ids[job_of_unit],
        "document_id": doc_ids[job_of_unit], "unit_id": unit_ids, "pages": np.full(n_units, 5),
        "duration_ms": page_secs.sum(axis=1) * 1000}, unit_flush, job_day[job_of_unit])
    common = {"job_id": job_ids, "document_id": doc_ids}
    tables["job_created"] = _table("job_created", {
        **common, "event_id": _event_ids("job_created", job_ids), "occurred_at": start,
        "status": ["queued"] * n_jobs}, job_flush, job_day)
    tables["job_split"] = _table("job_split", {
        **common, "event_id": _event_ids("job_split", job_ids),
        "occurred_at": start + _seconds(np.full(n_jobs, 1.0)), "pages": units * 5,
        "units": units, "pages_per_unit": np.full(n_jobs, 5)}, job_flush, job_day)
    ok, ko = ~failed, failed
    tables["job_succeeded"] = _table("job_succeeded", {
        "job_id": job_ids[ok], "document_id": doc_ids[ok],
        "event_id": _event_ids("job_succeeded", job_ids[ok]), "occurred_at": finish[ok],
        "status": ["succeeded"] * int(ok.sum()), "pages": units[ok] * 5, "units": units[ok]},
        job_flush[ok], job_day[ok])
    tables["job_failed"] = _table("job_failed", {
        "job_id": job_ids[ko], "document_id": doc_ids[ko],
        "event_id": _event_ids("job_failed", job_ids[ko]), "occurred_at": finish[ko],
        "status": ["failed"] * int(ko.sum()), "failure_reason": ["unit failed"] * int(ko.sum()),
        "pages": units[ko] * 5, "units": units[ko]}, job_flush[ko], job_day[ko])
    # A running pipeline writes each flush when its last event happens.
    last = np.full(int(job_flush[-1]) + 1, START)
    for table in tables.values():
        np.maximum.at(last, table["_flush"].to_numpy(), table["occurred_at"].to_numpy())
    return Stream(tables, np.argsort(last, kind="stable"))


Piece = tuple[str, str, pa.Table]  # (event_type, dt, rows): what becomes one file


def iter_flushes(stream: Stream) -> Iterator[list[Piece]]:
    """Each flush, in writing order, split by event type and ``dt`` as the writer splits it."""
    bounds = {}
    for event_type, table in stream.tables.items():
        order = np.argsort(table["_flush"].to_numpy(), kind="stable")
        table = table.take(order)
        days = table["_day"].to_numpy(zero_copy_only=False)
        bounds[event_type] = (table.drop_columns(["_flush", "_day"]), table["_flush"].to_numpy(),
                              days)
    for number in stream.flush_order:
        pieces = []
        for event_type, (table, flush, days) in bounds.items():
            lo, hi = np.searchsorted(flush, [number, number + 1])
            if hi == lo:
                continue
            rows, in_flush = table.slice(lo, hi - lo), days[lo:hi]
            for day in np.unique(in_flush):
                same = in_flush == day
                part = rows if same.all() else rows.filter(pa.array(same))
                pieces.append((event_type, str(day), part))
        yield pieces


def flush_events(pieces: list[Piece]) -> list[Event]:
    """A flush as pydantic events, for the real writer."""
    return [from_row(row) for _, _, table in pieces for row in table.to_pylist()]


def write_files(root: str, pieces: list[Piece], *, one_per_event: bool = False) -> int:
    """Write pieces the way ``ParquetEventWriter`` lays them out (one zstd file per piece, or per
    event), each renamed into place. No fsync: the layout is what matters here, not durability."""
    files = 0
    for event_type, day, table in pieces:
        folder = f"{root}/{event_partition(event_type, day)}"
        os.makedirs(folder, exist_ok=True)
        for rows in (table.slice(i, 1) for i in range(table.num_rows)) if one_per_event else [table]:
            temporary = f"{folder}/.tmp-{uuid.uuid4().hex}"
            pq.write_table(rows, temporary, compression="zstd")
            os.replace(temporary, f"{folder}/{data_file_name('part-', arrow_fingerprint(rows.schema))}")
            files += 1
    return files


def write_lake(root: str, stream: Stream, *, one_per_event: bool = False) -> int:
    """Every flush of the stream as files under ``root``; returns the number of files."""
    return sum(write_files(root, pieces, one_per_event=one_per_event)
               for pieces in iter_flushes(stream))
