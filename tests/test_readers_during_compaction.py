"""A reader never fails and never misses a row while compaction runs, locally and on S3.

Three ways a reader meets a compaction (see ``lake.catalog``): a listed file deleted before it is
read (the statement is rerun), a listing cut in half by a compaction (listed again until two
listings agree), and a long session with an old file list (relisted before each statement).
Each has a deterministic test here, and a loop runs queries beside a compactor and checks every
count.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta

import pyarrow.fs as pafs
import pytest
from support.lakegen import uuid7_at

from lake.catalog import connect, query, stable_listing
from lake.compaction import compact
from lake.events import JobCreated, PageRead
from lake.replay import replay
from lake.writer import ParquetEventWriter

DAY = datetime(2026, 2, 1, 10, 0, tzinfo=UTC)
JOBS = 12
PAGES = 20


def _job(n: int) -> list:
    day = DAY + timedelta(days=n % 3)
    ids = {"job_id": uuid7_at(day, 2 * n + 1), "document_id": uuid7_at(day, 2 * n + 2)}
    return [JobCreated(**ids, occurred_at=day),
            *(PageRead(**ids, page_number=p, reader="text", chars=p,
                       occurred_at=day + timedelta(seconds=p)) for p in range(1, PAGES + 1))]


def _fill(writer: ParquetEventWriter) -> list:
    """Every job's events, written one small flush per job (the shape compaction merges)."""
    events = []
    for n in range(JOBS):
        batch = _job(n)
        writer.write(batch)
        events += batch
    return events


# --- the three cases, one at a time ----------------------------------------------------------


class _ScriptedListing:
    """A filesystem whose listings are given in advance, as a compaction would shape them."""

    def __init__(self, root: str, listings: list[list[str]]):
        self.root, self.listings, self.calls = root, listings, 0

    def get_file_info(self, selector):
        names = self.listings[min(self.calls, len(self.listings) - 1)]
        self.calls += 1
        return [pafs.FileInfo(f"{self.root}/events/event_type=page_read/dt=2026-02-01/{n}",
                              pafs.FileType.File) for n in names]


def test_a_listing_cut_in_half_by_a_compaction_is_not_trusted():
    # 1st listing: compacted-B was written behind its position and part-1/2 were deleted ahead
    # of it: it sees only part-3 (rows of part-1/2 silently missing). 2nd: compacted-B appears.
    fs = _ScriptedListing("/lake", [["part-3.parquet"],
                                    ["compacted-B.parquet", "part-3.parquet"],
                                    ["compacted-B.parquet", "part-3.parquet", "part-4.parquet"]])
    listing = stable_listing(fs, "/lake")
    assert [p.rsplit("/", 1)[1] for p in listing["page_read"]] == [
        "compacted-B.parquet", "part-3.parquet", "part-4.parquet"]
    assert fs.calls == 3  # the third agreed with the second: only a writer's new part file


def test_new_part_files_of_a_running_writer_do_not_hold_a_listing_up():
    fs = _ScriptedListing("/lake", [["part-1.parquet"], ["part-1.parquet", "part-2.parquet"]])
    assert len(stable_listing(fs, "/lake")["page_read"]) == 2 and fs.calls == 2


def test_a_statement_whose_files_vanished_is_run_again(tmp_path):
    root = str(tmp_path)
    _fill(ParquetEventWriter.for_uri(root))
    session = connect(root)  # lists the files
    compact(root)  # ... and every listed file is gone before the first statement reads them
    assert session.execute("SELECT count(*) FROM pages").fetchone() == (JOBS * PAGES,)
    assert session.retried == 1
    session.close()


def test_a_long_session_follows_the_lake(tmp_path):
    root = str(tmp_path)
    writer = ParquetEventWriter.for_uri(root)
    _fill(writer)
    with connect(root) as session:
        assert session.execute("SELECT count(*) FROM pages").fetchone() == (JOBS * PAGES,)
        compact(root)
        writer.write([PageRead(job_id="late", page_number=1, reader="text", chars=1,
                               occurred_at=DAY)])
        assert session.execute("SELECT count(*) FROM pages").fetchone() == (JOBS * PAGES + 1,)
        assert session.sql("SELECT count(*) AS n FROM jobs").fetchall() == [(JOBS,)]


# --- queries in a loop beside a compactor ------------------------------------------------------


def _race(uri: str, writer: ParquetEventWriter, events: list, seconds: float) -> dict:
    """A compactor thread re-writes redelivered copies of the events as small files and
    compacts them away, round after round, while readers count. Deduplicated counts never
    change; every distinct event id is always there."""
    stop = threading.Event()
    rounds = [0]
    failures: list[str] = []

    def compactor():
        try:
            while not stop.is_set():
                for n in range(0, len(events), 37):  # redeliveries: same ids, new small files
                    writer.write([e.model_copy(update={"attempt": 2}) for e in events[n:n + 37]])
                compact(uri)
                rounds[0] += 1
                stop.wait(0.2)  # a busy lake, compacted every few hundred ms
        except Exception as error:  # noqa: BLE001 - reported by the test
            failures.append(f"compactor: {error!r}")

    counts = {"session": 0, "query": 0, "replay": 0}
    expected = (JOBS * PAGES, JOBS * (PAGES + 1))
    thread = threading.Thread(target=compactor)
    thread.start()
    deadline = time.monotonic() + seconds
    session = connect(uri)
    try:
        while time.monotonic() < deadline or rounds[0] < 3:
            got = session.execute(
                "SELECT (SELECT count(*) FROM pages), (SELECT count(*) FROM events), "
                "(SELECT count(DISTINCT event_id) FROM raw_page_read)").fetchone()
            assert got == (*expected, JOBS * PAGES), got
            counts["session"] += 1
            assert query(uri, "SELECT count(*) AS n FROM jobs").to_pylist() == [{"n": JOBS}]
            counts["query"] += 1
            state = replay(uri)
            assert len(state.jobs) == JOBS
            counts["replay"] += 1
    finally:
        stop.set()
        thread.join()
        session.close()
    assert not failures, failures
    return {"rounds": rounds[0], **counts, "retried": session.retried}


def test_queries_beside_a_compactor_count_every_row_exactly_once(tmp_path):
    root = str(tmp_path)
    writer = ParquetEventWriter(pafs.LocalFileSystem(), root, compact_after_files=None)
    result = _race(root, writer, _fill(writer), seconds=4)
    assert result["rounds"] >= 3 and result["session"] >= 3, result


@pytest.fixture
def s3_uri(monkeypatch, moto_endpoint):
    boto3 = pytest.importorskip("boto3")
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                        "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true",
                        "DOCLAKE_S3_ENDPOINT": moto_endpoint}.items():
        monkeypatch.setenv(name, value)
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"):
        monkeypatch.delenv(name, raising=False)
    bucket = f"race-{time.monotonic_ns() % 10**9}"
    boto3.client("s3", endpoint_url=moto_endpoint).create_bucket(Bucket=bucket)
    return f"s3://{bucket}/lake"


def test_queries_beside_a_compactor_on_s3(s3_uri):
    writer = ParquetEventWriter.for_uri(s3_uri)
    writer.compact_after_files = None
    result = _race(s3_uri, writer, _fill(writer), seconds=6)
    assert result["rounds"] >= 3 and result["session"] >= 2, result
