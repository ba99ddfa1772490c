"""Event models are the one source of truth: schemas round-trip, ids are stable, views dedup."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lake.catalog import query
from lake.events import (
    EVENT_TYPES,
    SCHEMA_VERSION,
    JobCreated,
    PageRead,
    ResultPublished,
    UnitStarted,
)
from lake.schema import arrow_schema, columns, from_row, to_table
from lake.writer import ParquetEventWriter


def test_every_event_type_round_trips_through_parquet(tmp_path):
    for event_type, cls in EVENT_TYPES.items():
        required = {name: _sample(field.annotation) for name, field in cls.model_fields.items()
                    if field.is_required()}
        event = cls(job_id="j", document_id="d", **required)
        path = tmp_path / f"{event_type}.parquet"
        pq.write_table(to_table([event]), path)
        table = pq.read_table(path)
        assert table.schema.equals(arrow_schema(cls), check_metadata=False), event_type
        assert table.schema.metadata[b"doclake.schema_version"] == str(SCHEMA_VERSION).encode()
        assert from_row(table.to_pylist()[0]) == event, event_type


def _sample(annotation):
    return {str: "x", int: 7, float: 1.5, bool: True}.get(annotation, "x")


def test_the_same_logical_event_keeps_its_id_and_others_do_not():
    a = PageRead(job_id="j", page_number=3, reader="text", chars=10)
    b = PageRead(job_id="j", page_number=3, reader="text", chars=10, attempt=2)
    c = PageRead(job_id="j", page_number=4, reader="text", chars=10)
    assert a.event_id == b.event_id != c.event_id
    first = UnitStarted(job_id="j", unit_id="u1", attempt=1)
    second = UnitStarted(job_id="j", unit_id="u1", attempt=2)
    assert first.event_id != second.event_id
    assert JobCreated(job_id="j").event_id != JobCreated(job_id="k").event_id


def test_naive_timestamps_are_refused():
    from datetime import datetime

    with pytest.raises(ValueError, match="timezone"):
        JobCreated(job_id="j", occurred_at=datetime(2026, 1, 1))


def test_columns_in_three_type_systems_agree():
    cols = {c.name: c for c in columns(ResultPublished)}
    assert (cols["party"].duckdb, cols["party"].glue) == ("VARCHAR[]", "array<string>")
    assert cols["party"].arrow == pa.list_(pa.string())
    assert (cols["occurred_at"].duckdb, cols["occurred_at"].glue) == ("TIMESTAMPTZ", "timestamp")
    assert list(cols)[:9] == ["schema_version", "event_id", "event_type", "occurred_at",
                              "document_id", "job_id", "unit_id", "attempt", "worker"]


def test_views_deduplicate_redelivered_events(tmp_path):
    writer = ParquetEventWriter.for_uri(str(tmp_path))
    page = PageRead(job_id="j", document_id="d", page_number=1, reader="text", chars=5)
    writer.write([page, PageRead(job_id="j", document_id="d", page_number=2, reader="text",
                                 chars=6)])
    writer.write([page.model_copy(update={"attempt": 2})])  # the same event, redelivered
    raw = query(str(tmp_path), "SELECT count(*) AS n FROM raw_page_read").to_pylist()
    assert raw == [{"n": 3}]
    pages = query(str(tmp_path), "SELECT page_number, chars FROM pages ORDER BY 1").to_pylist()
    assert pages == [{"page_number": 1, "chars": 5}, {"page_number": 2, "chars": 6}]
    events = query(str(tmp_path), "SELECT count(*) AS n FROM events").to_pylist()
    assert events == [{"n": 2}]


def test_an_old_file_without_a_new_column_reads_as_null(tmp_path):
    """Schema evolution is additive: files written before a field existed still read."""
    writer = ParquetEventWriter.for_uri(str(tmp_path))
    (path,) = writer.write([PageRead(job_id="j", page_number=1, reader="text", chars=5)])
    old = pq.read_table(path).drop_columns(["duration_ms", "object_key"])
    pq.write_table(old, path)
    rows = query(str(tmp_path), "SELECT chars, duration_ms FROM ev_page_read").to_pylist()
    assert rows == [{"chars": 5, "duration_ms": None}]


def test_empty_lake_has_every_contract_table(tmp_path):
    for table in ("events", "documents", "jobs", "units", "pages", "model_calls", "failures",
                  "results", "job_latency", "daily_costs"):
        assert query(str(tmp_path / "lake"), f"SELECT count(*) AS n FROM {table}").to_pylist() == \
            [{"n": 0}]


def test_the_lake_and_the_job_store_share_one_status_vocabulary():
    from extract.state import JobStatus, UnitStatus
    from lake.replay import JOB_STATUSES, TERMINAL_JOB_STATUSES, UNIT_STATUSES

    assert {s.value for s in JobStatus} == JOB_STATUSES
    assert {s.value for s in JobStatus if s.terminal} == TERMINAL_JOB_STATUSES
    assert {s.value for s in UnitStatus} == UNIT_STATUSES


def test_a_write_is_durable_down_to_its_new_folders(tmp_path, monkeypatch):
    """fsync the file, rename it, fsync its folder; a folder created for it is only durable
    once its parent is fsynced too (lake/, events/, event_type=..., dt=...)."""
    import os

    synced: list[str] = []
    real_fsync = os.fsync

    def recording_fsync(fd):
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    root = tmp_path / "lake"
    writer = ParquetEventWriter.for_uri(str(root))
    (path,) = writer.write([PageRead(job_id="j", page_number=1, reader="text", chars=5)])
    folder = os.path.dirname(path)
    file_sync = next(i for i, p in enumerate(synced) if "/.tmp-" in p)
    assert synced[file_sync + 1:] == [folder, os.path.dirname(folder),
                                      f"{root}/events", str(root)]
    synced.clear()
    writer.write([PageRead(job_id="j", page_number=2, reader="text", chars=5)])
    assert synced[-1] == folder and len(synced) == 2  # known folder: the file, then the folder


def test_event_ids_are_the_uuid5_of_their_identity():
    """The fast derivation gives the very ids ``uuid.uuid5`` gives (ids already in a lake stay
    the ids a redelivery derives), names with non-ASCII text included."""
    import uuid

    from lake.events import EVENT_NAMESPACE, PageRead, event_uuid

    for name in ("page_read|j|1", "", "x" * 500, "job_created|é|ü€"):
        assert event_uuid(name) == str(uuid.uuid5(EVENT_NAMESPACE, name))
    event = PageRead(document_id="d", job_id="j", page_number=3, reader="text", chars=1)
    assert event.event_id == str(uuid.uuid5(EVENT_NAMESPACE, "page_read|j|3"))
