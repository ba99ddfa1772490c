"""Compaction keeps every event exactly once, even when it is killed or runs beside a writer."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from lake import compaction_files
from lake.catalog import connect
from lake.compaction import PartitionReport, compact
from lake.events import EVENT_TYPES, Event, JobCreated, PageRead, UnitDone, UnitStarted
from lake.schema import to_table
from lake.writer import ParquetEventWriter

REPO = Path(__file__).resolve().parents[1]
DAY0 = datetime(2025, 3, 1, 8, 0, tzinfo=UTC)


def unit_events(job: str, unit: int, at: datetime, *, chars: int = 100) -> list[Event]:
    """What one five-page unit emits: started, five pages read, done."""
    unit_id = f"{job}-u{unit}"
    events: list[Event] = [UnitStarted(job_id=job, unit_id=unit_id, attempt=1, occurred_at=at)]
    for page in range(unit * 5 + 1, unit * 5 + 6):
        events.append(PageRead(job_id=job, unit_id=unit_id, page_number=page, reader="text",
                               chars=chars + page, occurred_at=at + timedelta(seconds=page)))
    events.append(UnitDone(job_id=job, unit_id=unit_id, pages=5,
                           occurred_at=at + timedelta(seconds=30)))
    return events


def write_lake(root: Path, *, days: int = 3, jobs: int = 4, units: int = 2) -> int:
    """A lake as a busy run leaves it: one flush per unit, so several small files per partition."""
    writer = ParquetEventWriter.for_uri(str(root))
    count = 0
    for day in range(days):
        for j in range(jobs):
            job = f"job-{day}-{j}"
            at = DAY0 + timedelta(days=day, minutes=j)
            writer.write([JobCreated(job_id=job, document_id=f"doc-{day}-{j}", occurred_at=at)])
            count += 1
            for u in range(units):
                batch = unit_events(job, u, at + timedelta(minutes=1))
                writer.write(batch)
                count += len(batch)
    return count


def snapshot(root: Path) -> dict[str, list[dict]]:
    """Every row of every deduplicated view, in a stable order: what an analyst sees."""
    con = connect(str(root))
    try:
        views = {"events": con.sql("SELECT * FROM events ORDER BY event_id").to_arrow_table()}
        for event_type in EVENT_TYPES:
            views[event_type] = con.sql(
                f"SELECT * FROM ev_{event_type} ORDER BY event_id").to_arrow_table()
        return {name: table.to_pylist() for name, table in views.items()}
    finally:
        con.close()


def raw_counts(root: Path) -> tuple[int, int]:
    """(rows, distinct event ids) over every raw file of the lake."""
    con = connect(str(root))
    try:
        parts = " UNION ALL ".join(f"SELECT event_id FROM raw_{t}" for t in EVENT_TYPES)
        sql = f"SELECT count(*), count(DISTINCT event_id) FROM ({parts})"
        rows, distinct = con.execute(sql).fetchone()
        return rows, distinct
    finally:
        con.close()


def data_files(root: Path) -> list[Path]:
    return sorted(p for p in (root / "events").rglob("*.parquet") if not p.name.startswith("."))


# --- (a) every event exactly once --------------------------------------------------------------


def test_compaction_keeps_every_event_exactly_once(tmp_path: Path) -> None:
    written = write_lake(tmp_path)
    before = snapshot(tmp_path)
    files_before = data_files(tmp_path)

    report = compact(str(tmp_path))

    assert snapshot(tmp_path) == before
    assert len(before["events"]) == written
    assert raw_counts(tmp_path) == (written, written)
    # Four event types times three days: one file per partition, all others gone.
    after = data_files(tmp_path)
    assert len(after) == 12 < len(files_before)
    assert all(p.name.startswith("compacted-") for p in after)
    assert not any(p.exists() for p in files_before)
    assert report.files_before == len(files_before) and report.files_after == len(after)
    assert report.rows_before == report.rows_after == written
    assert report.duplicates_dropped == 0 and report.errors == []
    assert pq.read_metadata(after[0]).row_group(0).column(0).compression == "ZSTD"


def test_outputs_are_capped_at_target_rows_and_a_second_run_changes_nothing(tmp_path: Path) -> None:
    writer = ParquetEventWriter.for_uri(str(tmp_path))
    for job in range(20):
        writer.write([PageRead(job_id=f"j{job}", page_number=p, reader="ocr", chars=p,
                               occurred_at=DAY0) for p in range(5)])
    before = snapshot(tmp_path)

    first = compact(str(tmp_path), target_rows=30)
    sizes = sorted(pq.read_metadata(p).num_rows for p in data_files(tmp_path))
    assert sizes == [10, 30, 30, 30]
    assert first.files_after == 4

    second = compact(str(tmp_path), target_rows=30)  # only one file under 30 rows: nothing to do
    assert second.partitions == []
    assert sorted(pq.read_metadata(p).num_rows for p in data_files(tmp_path)) == sizes
    assert snapshot(tmp_path) == before


def test_partitions_below_min_files_and_other_types_are_left_alone(tmp_path: Path) -> None:
    write_lake(tmp_path, days=1, jobs=1, units=1)  # one file per type
    files = data_files(tmp_path)
    assert compact(str(tmp_path)).partitions == []
    assert data_files(tmp_path) == files

    write_lake(tmp_path, days=1, jobs=3, units=1)
    report = compact(str(tmp_path), event_types=["page_read"])
    assert [p.event_type for p in report.partitions] == ["page_read"]
    assert len(list((tmp_path / "events/event_type=unit_done").rglob("part-*.parquet"))) > 1


# --- (b) duplicates ----------------------------------------------------------------------------


def test_redelivered_events_are_dropped_and_the_earliest_copy_wins(tmp_path: Path) -> None:
    writer = ParquetEventWriter.for_uri(str(tmp_path))
    first = unit_events("job-a", 0, DAY0, chars=100)
    writer.write(first)
    writer.write(unit_events("job-b", 0, DAY0))
    # The same unit redelivered an hour later: same event ids, later times, other values.
    again = unit_events("job-a", 0, DAY0 + timedelta(hours=1), chars=999)
    writer.write(again)
    assert [e.event_id for e in again] == [e.event_id for e in first]
    before = snapshot(tmp_path)
    assert raw_counts(tmp_path) == (21, 14)

    report = compact(str(tmp_path))

    assert report.duplicates_dropped == 7
    assert {p.event_type: p.duplicates_dropped for p in report.partitions} == {
        "unit_started": 1, "page_read": 5, "unit_done": 1}
    assert raw_counts(tmp_path) == (14, 14)
    assert snapshot(tmp_path) == before
    pages = pq.read_table(tmp_path / "events/event_type=page_read").filter(
        pc.field("job_id") == "job-a")
    assert sorted(pages["chars"].to_pylist()) == [101, 102, 103, 104, 105]


# --- (c) killed in the middle ------------------------------------------------------------------

KILL_SCRIPT = textwrap.dedent("""
    import os, sys, time
    from lake.compaction import compact

    stop_at, partial = int(sys.argv[2]), sys.argv[3] == "partial"
    seen = []

    def before_delete(partition):
        seen.append(partition)
        if len(seen) - 1 == stop_at:
            if partial:  # as if the kill landed half-way through the delete loop
                for path in partition.inputs[: len(partition.inputs) // 2]:
                    os.remove(path)
            print("READY", flush=True)
            time.sleep(120)

    compact(sys.argv[1], before_delete=before_delete)
    print("FINISHED", flush=True)
""")


@pytest.mark.parametrize(("stop_at", "mode"), [(0, "whole"), (5, "whole"), (11, "whole"),
                                               (3, "partial"), (11, "partial")])
def test_a_kill_loses_and_duplicates_nothing(tmp_path: Path, stop_at: int, mode: str) -> None:
    written = write_lake(tmp_path)
    before = snapshot(tmp_path)
    command = [sys.executable, "-c", KILL_SCRIPT, str(tmp_path), str(stop_at), mode]
    process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "READY"
        process.send_signal(signal.SIGKILL)
    finally:
        process.kill()
        process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL

    # Outputs of the stopped partition are in place next to (some of) their inputs.
    assert snapshot(tmp_path) == before
    rows, distinct = raw_counts(tmp_path)
    assert distinct == written and rows > written

    report = compact(str(tmp_path))
    assert report.errors == []
    assert raw_counts(tmp_path) == (written, written)
    assert snapshot(tmp_path) == before
    assert not list(tmp_path.rglob(".tmp-*"))


def test_a_failed_write_leaves_inputs_and_no_temporary_file(tmp_path: Path, monkeypatch) -> None:
    written = write_lake(tmp_path, days=1)
    files = data_files(tmp_path)

    def broken_close(self) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(compaction_files.RollingWriter, "_close_file", broken_close)
    report = compact(str(tmp_path))

    assert report.partitions == [] and len(report.errors) == 4
    assert all("disk full" in e for e in report.errors)
    assert data_files(tmp_path) == files
    assert not list(tmp_path.rglob(".tmp-*"))
    assert raw_counts(tmp_path) == (written, written)


# --- (d) files written while compaction runs ---------------------------------------------------


def test_files_written_after_listing_are_untouched(tmp_path: Path) -> None:
    written = write_lake(tmp_path, days=1)
    late_events = unit_events("job-late", 0, DAY0 + timedelta(minutes=30))
    late_files: list[str] = []

    def write_meanwhile(partition: PartitionReport) -> None:
        # The pipeline keeps writing into the very partition that has just been listed and read.
        mine = [e for e in late_events if e.event_type == partition.event_type]
        if mine:
            late_files.extend(ParquetEventWriter.for_uri(str(tmp_path)).write(mine))

    report = compact(str(tmp_path), before_delete=write_meanwhile)

    assert len(late_files) == 3
    for path in late_files:
        assert Path(path).exists()
        assert path not in {i for p in report.partitions for i in p.inputs}
    compacted = {p.event_type: pq.read_metadata(p.outputs[0]).num_rows for p in report.partitions}
    assert compacted == {"job_created": 4, "unit_started": 8, "page_read": 40, "unit_done": 8}
    events = snapshot(tmp_path)["events"]
    assert len(events) == written + len(late_events)
    assert {e.event_id for e in late_events} <= {row["event_id"] for row in events}


def test_stale_temporary_files_are_removed_and_fresh_ones_kept(tmp_path: Path) -> None:
    write_lake(tmp_path, days=1, jobs=1, units=1)
    folder = tmp_path / "events/event_type=page_read/dt=2025-03-01"
    stale, fresh = folder / ".tmp-crashed", folder / ".tmp-being-written"
    stale.write_bytes(b"half a file")
    fresh.write_bytes(b"half a file")
    hours_ago = time.time() - 2 * 3600
    os.utime(stale, (hours_ago, hours_ago))

    report = compact(str(tmp_path))

    assert report.tmp_removed == [str(stale)]
    assert not stale.exists() and fresh.exists()


# --- schema evolution --------------------------------------------------------------------------


def test_old_and_newer_files_are_merged_without_losing_columns(tmp_path: Path) -> None:
    writer = ParquetEventWriter.for_uri(str(tmp_path))
    writer.write(unit_events("job-new", 0, DAY0)[1:6])
    folder = tmp_path / "events/event_type=page_read/dt=2025-03-01"
    old = to_table([PageRead(job_id="job-old", page_number=1, reader="text", chars=7,
                             occurred_at=DAY0)])
    old = old.drop_columns(["object_key", "duration_ms"]).append_column(
        "future_field", pa.array(["kept"]))
    pq.write_table(old, folder / "part-old.parquet")

    compact(str(tmp_path))

    (output,) = data_files(tmp_path)
    table = pq.read_table(output)
    assert table.num_rows == 6
    expected = to_table([old_page()]).schema.names
    assert table.schema.names == [*expected, "future_field"]
    row = table.filter(pc.field("job_id") == "job-old").to_pylist()[0]
    assert row["future_field"] == "kept" and row["duration_ms"] is None and row["chars"] == 7


def old_page() -> PageRead:
    return PageRead(job_id="x", page_number=1, reader="text", chars=1, occurred_at=DAY0)


# --- an object store (moto server on 127.0.0.1) ------------------------------------------------


@pytest.fixture
def s3_lake(monkeypatch, tmp_path: Path):
    pytest.importorskip("moto")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1",
                               "-p", str(port)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                            "AWS_DEFAULT_REGION": "us-east-1"}.items():
            monkeypatch.setenv(name, value)
        uri = (f"s3://lake/prefix?endpoint_override=127.0.0.1:{port}&scheme=http"
               "&region=us-east-1&allow_bucket_creation=true")
        fs = pafs.FileSystem.from_uri(uri)[0]
        fs.create_dir("lake")
        yield uri, fs
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_compaction_on_s3(s3_lake) -> None:
    uri, fs = s3_lake
    writer = ParquetEventWriter.for_uri(uri)
    written = 0
    for job in range(3):
        batch = unit_events(f"job-{job}", 0, DAY0)
        writer.write(batch)
        written += len(batch)
    writer.write(unit_events("job-0", 0, DAY0 + timedelta(hours=2)))  # a redelivery
    con = connect(uri)
    before = con.execute("SELECT * FROM events ORDER BY event_id").fetchall()
    con.close()

    report = compact(uri)

    assert report.errors == [] and report.duplicates_dropped == 7
    selector = pafs.FileSelector("lake/prefix/events", recursive=True)
    names = [i.base_name for i in fs.get_file_info(selector) if i.type == pafs.FileType.File]
    assert len(names) == 3 and all(n.startswith("compacted-") for n in names)
    con = connect(uri)
    assert con.execute("SELECT * FROM events ORDER BY event_id").fetchall() == before
    assert con.execute("SELECT count(*) FROM raw_page_read").fetchone() == (15,)
    con.close()
    assert len(before) == written


# --- the benchmark stays runnable --------------------------------------------------------------


def test_lake_benchmark_runs_at_small_scale(tmp_path: Path, capsys) -> None:
    from infra.bench.lake_bench import main

    results = main(["--events", "3000", "--write-events", "300", "--single-write-events", "50",
                    "--anchor-events", "300", "--repeats", "1", "--workdir", str(tmp_path),
                    "--batched-events", "3000", "--flush", "1000", "--pruning-events", "3000",
                    "--pruning-days", "20", "--format", "json"])

    lake = results["lake"]
    assert lake["compaction"]["same_answers"] is True
    assert lake["files_after"] < lake["files_before"]
    assert lake["compaction"]["rows_after"] == lake["compaction"]["rows_before"] <= lake["events"]
    assert results["small_files"]["files"]["one_file_per_event"] == results["small_files"]["events"]
    assert '"events_per_s"' in capsys.readouterr().out
    assert results["batched_write"]["events"] >= 1000
    pruning = results["dt_pruning"]["queries"]["pages_by_reader"]
    assert 0 < pruning["rows_scanned_one_day"] < pruning["rows_scanned_every_day"] / 5


# --- (e) size tiers and compaction on its own ------------------------------------------------


def test_tiers_choose_the_small_files_not_the_partition() -> None:
    from lake.compaction import choose_inputs, tier

    assert [tier(n, 100, 4) for n in (1, 99, 100, 399, 400, 1599, 1600)] == [0, 0, 1, 1, 2, 2, 3]
    # a big compacted file and three new flushes: only the flushes are rewritten
    assert choose_inputs([5_000, 40, 60, 50], min_files=2, target_rows=10_000,
                         base_rows=100, fanout=4) == [1, 2, 3]
    # three files of tier 1 wait for a fourth; then the four merge
    assert choose_inputs([150, 200, 300], min_files=2, target_rows=10_000, base_rows=100,
                         fanout=4) == []
    assert choose_inputs([150, 200, 300, 120], min_files=2, target_rows=10_000, base_rows=100,
                         fanout=4) == [0, 1, 2, 3]
    assert choose_inputs([10_000, 1], min_files=1, target_rows=10_000) == [1]


def test_work_per_run_follows_the_new_data_not_the_partition(tmp_path: Path) -> None:
    """Ten runs, each adding three flushes of 50 rows to one partition: the rows each run
    rewrites stay bounded by the new rows plus one small tier, while the partition grows."""
    writer = ParquetEventWriter(pafs.LocalFileSystem(), str(tmp_path), compact_after_files=None)
    rewritten, total = [], 0
    for run in range(10):
        for flush in range(3):
            job = f"job-{run}-{flush}"
            writer.write([PageRead(job_id=job, page_number=p, reader="text", chars=p,
                                   occurred_at=DAY0) for p in range(50)])
            total += 50
        report = compact(str(tmp_path), tier_base_rows=200, fanout=4, target_rows=100_000)
        rewritten.append(sum(p.rows_before - p.rows_after + sum(
            pq.read_metadata(o).num_rows for o in p.outputs) for p in report.partitions))
    assert total == 1500
    # each run: its 150 new rows, plus a tier-0 file under 200 rows, plus now and then a merge
    # of four tier-1 files; rewriting the whole partition would be 150 * run rows (8,250 in all)
    assert rewritten[:2] == [150, 300] and max(rewritten) <= 150 + 200 + 4 * 800, rewritten
    assert sum(rewritten) < 4_000 < sum(150 * k for k in range(1, 11))
    con = connect(str(tmp_path))
    assert con.execute("SELECT count(*) FROM pages").fetchone() == (1500,)
    con.close()


def test_a_big_compacted_file_is_not_rewritten_for_a_few_new_rows(tmp_path: Path) -> None:
    writer = ParquetEventWriter.for_uri(str(tmp_path))
    writer.write([PageRead(job_id="big", page_number=p, reader="text", chars=p, occurred_at=DAY0)
                  for p in range(20_000)])
    (big,) = data_files(tmp_path)
    for job in range(3):
        writer.write([PageRead(job_id=f"new-{job}", page_number=1, reader="text", chars=1,
                               occurred_at=DAY0)])
    report = compact(str(tmp_path))
    (partition,) = report.partitions
    assert str(big) not in partition.inputs and big.exists()
    assert len(partition.inputs) == 3 and report.rows_after == 20_003


def test_a_writer_compacts_a_partition_that_passed_its_threshold(tmp_path: Path) -> None:
    fs, root = pafs.LocalFileSystem(), str(tmp_path)
    writer = ParquetEventWriter(fs, root, compact_after_files=6)
    for job in range(8):
        writer.write(unit_events(f"job-{job}", 0, DAY0))  # 3 files per flush, 3 partitions
        writer.wait_for_compaction()
    writer.close()
    assert writer.stats.compactions == 3  # each partition once, after its sixth file
    page_files = list((tmp_path / "events/event_type=page_read").rglob("*.parquet"))
    assert len(page_files) == 3  # one compacted + the two flushes written since
    con = connect(root)
    assert con.execute("SELECT count(*) FROM pages").fetchone() == (40,)
    con.close()


def test_compaction_after_a_run_tidies_up_and_never_raises(tmp_path: Path) -> None:
    from lake.compaction import compact_after_run

    write_lake(tmp_path)
    before = snapshot(tmp_path)
    files = len(data_files(tmp_path))
    messages: list[str] = []
    report = compact_after_run(str(tmp_path), 2, log=messages.append)
    assert report is not None and report.files_after < files
    assert snapshot(tmp_path) == before
    assert messages and messages[0].startswith("lake compacted:")
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    assert compact_after_run(str(blocked), log=messages.append) is None
    assert messages[-1].startswith("lake compaction skipped:")


def test_compaction_leaves_partitions_of_fewer_files_than_asked(tmp_path: Path) -> None:
    """``min_partition_files`` (a run's end asks for ``AFTER_RUN_MIN_FILES``): a partition of
    fewer data files is left as it is, one of as many is merged, and a ``.tmp-`` file (a
    crashed compaction's) makes a partition due whatever its count."""
    from lake.partitions import partitions_due

    def files_in(folder: Path) -> int:
        return sum(1 for p in folder.glob("*.parquet") if not p.name.startswith("."))

    write_lake(tmp_path, days=1, jobs=3, units=1)  # job_created: 3 files; the unit's: 3 each
    folders = {p.parent.name + "/" + p.name: p for p in
               (tmp_path / "events").glob("event_type=*/dt=*")}
    created = next(p for name, p in folders.items() if name.startswith("event_type=job_created"))
    # One more flush of job_created only: 4 files there, 3 in every other partition.
    ParquetEventWriter.for_uri(str(tmp_path)).write(
        [JobCreated(job_id="job-x", document_id="doc-x", occurred_at=DAY0)])
    before = snapshot(tmp_path)
    fs, root = pafs.LocalFileSystem(), str(tmp_path)
    assert partitions_due(fs, root, 4) == [str(created)]

    report = compact(str(tmp_path), min_partition_files=4)
    assert [p.event_type for p in report.partitions] == ["job_created"]
    assert files_in(created) == 1
    assert all(files_in(p) == 3 for p in folders.values() if p != created)
    assert snapshot(tmp_path) == before

    unit_started = next(p for name, p in folders.items() if "unit_started" in name)
    (unit_started / ".tmp-compacted-left-by-a-crash.parquet").write_bytes(b"")
    assert partitions_due(fs, root, 4) == [str(unit_started)]


# --- the file work's threads ------------------------------------------------------------------


def test_compacting_many_partitions_starts_no_more_threads_than_one_pool(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pool a step (footers, reads, deletes) a partition started threads three times a
    partition: 175 thread starts at the end of an 84-document run, each waiting for the busy
    process's interpreter lock. The file work now shares one pool for the process's life."""
    import threading

    write_lake(tmp_path / "first", days=3, jobs=4, units=2)  # 12 partitions, several files each
    write_lake(tmp_path / "again", days=2, jobs=3, units=2)
    started: list[str] = []
    start = threading.Thread.start

    def counting_start(self: threading.Thread) -> None:
        started.append(self.name)
        start(self)

    monkeypatch.setattr(threading.Thread, "start", counting_start)
    report = compact(str(tmp_path / "first"))
    again = compact(str(tmp_path / "again"))

    assert len(report.partitions) == 12 and len(again.partitions) == 8
    assert len(started) <= compaction_files.IO_THREADS, started


def test_a_forked_child_gets_a_pool_of_its_own(tmp_path: Path) -> None:
    """Threads do not survive a fork: a child that used the parent's pool would wait forever
    for work no thread takes. The child here compacts a lake after the parent used its pool."""
    import multiprocessing

    write_lake(tmp_path / "parent", days=1)
    compact(str(tmp_path / "parent"))  # the parent's pool exists, its threads started
    write_lake(tmp_path / "child", days=1)
    child = multiprocessing.get_context("fork").Process(
        target=compact, args=(str(tmp_path / "child"),))
    child.start()
    child.join(timeout=60)
    if child.is_alive():
        child.kill()
        child.join()
        pytest.fail("the forked child's compaction never ended (the parent's pool has no threads)")
    assert child.exitcode == 0
    assert all(p.name.startswith("compacted-") for p in data_files(tmp_path / "child"))
