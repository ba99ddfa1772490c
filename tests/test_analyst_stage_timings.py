"""Where a job's time went: ``stage_timings``, one row per job and stage, consecutive, adding up
to the job's time in ``job_latency``."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta

import pytest
from support.lakegen import uuid7_at
from typer.testing import CliRunner

from infra.cli.main import app
from lake import events as ev
from lake.catalog import query
from lake.writer import ParquetEventWriter

FAST = {"DOCLAKE_EVENT_FLUSH_S": "0.02", "DOCLAKE_POLL_INTERVAL_S": "0.2",
        "DOCLAKE_CPU_WORKERS": "1"}
START = datetime(2026, 4, 7, 9, 0, tzinfo=UTC)


def _office_job(doc: str, job: str, reader: str = "ocr") -> list[ev.Event]:
    """A Word file's job, second by second: queued 10 s, waiting for a converter 10 s,
    LibreOffice 20 s, its unit waiting 17 s and reading 3 s, the poller 2 s, the index 1 s,
    waiting for fields 2 s, extracting 4 s, publishing 1 s."""
    ids = {"document_id": doc, "job_id": job}
    unit = {**ids, "unit_id": "u00001"}

    def at(seconds: float) -> datetime:
        return START + timedelta(seconds=seconds)

    return [
        ev.DocumentRegistered(**ids, occurred_at=at(0), source_name="a.docx", sha256="ab" * 32,
                              bytes=10),
        ev.JobCreated(**ids, occurred_at=at(0)),
        ev.FormatDetected(**ids, attempt=1, occurred_at=at(10), detected_format="docx"),
        ev.JobSplit(**ids, attempt=1, occurred_at=at(40), pages=1, units=1,
                    converter="soffice", conversion_ms=20_000),
        ev.UnitPlanned(**unit, kind="pdf_pages", first_page=1, last_page=1, occurred_at=at(40)),
        ev.UnitStarted(**unit, attempt=1, occurred_at=at(45)),
        ev.PageRead(**unit, attempt=1, page_number=1, reader=reader, chars=100,
                    duration_ms=3_000, occurred_at=at(59.5)),
        ev.UnitDone(**unit, attempt=1, pages=1, duration_ms=15_000, occurred_at=at(60)),
        ev.JobSucceeded(**ids, pages=1, units=1, occurred_at=at(62)),
        ev.DocumentIndexed(**ids, pages=1, chars=100, occurred_at=at(63)),
        ev.ResultPublished(**ids, status="succeeded", strategy="rules", processing_ms=4_000,
                           extracted_at=at(69), occurred_at=at(70)),
    ]


def test_a_word_files_stages_are_consecutive_and_measured_from_their_events(tmp_path):
    lake = str(tmp_path / "lake")
    doc, job = uuid7_at(START, 1), uuid7_at(START, 2)
    ParquetEventWriter.for_uri(lake).write(_office_job(doc, job))
    rows = query(lake, "SELECT stage, seconds, started_at, finished_at, after_finished "
                       "FROM stage_timings ORDER BY stage_number").to_pylist()
    assert [(r["stage"], r["seconds"]) for r in rows] == [
        ("queued", 10), ("waiting for a converter", 10), ("convert", 20),
        ("waiting for a worker", 17), ("read", 3), ("finish", 2), ("index", 1),
        ("waiting for fields", 2), ("fields", 4), ("publish", 1)]
    assert rows[0]["started_at"] == START.replace(tzinfo=None)
    assert rows[-1]["finished_at"] == (START + timedelta(seconds=70)).replace(tzinfo=None)
    for before, after in zip(rows, rows[1:], strict=False):
        assert before["finished_at"] == after["started_at"]
    assert [r["stage"] for r in rows if r["after_finished"]] == [
        "index", "waiting for fields", "fields", "publish"]
    latency = query(lake, "SELECT seconds, end_to_end_seconds FROM job_latency").to_pylist()
    assert latency == [{"seconds": 62, "end_to_end_seconds": 70}]


def test_a_job_without_conversion_or_fields_has_a_split_and_no_later_stage(tmp_path):
    lake = str(tmp_path / "lake")
    doc, job = uuid7_at(START, 3), uuid7_at(START, 4)
    events = [e for e in _office_job(doc, job)
              if not isinstance(e, ev.ResultPublished | ev.DocumentIndexed)]
    events = [e.model_copy(update={"conversion_ms": None}) if isinstance(e, ev.JobSplit) else e
              for e in events]
    ParquetEventWriter.for_uri(lake).write(events)
    rows = query(lake, "SELECT stage, seconds FROM stage_timings ORDER BY stage_number").to_pylist()
    assert [(r["stage"], r["seconds"]) for r in rows] == [
        ("queued", 10), ("split", 30), ("waiting for a worker", 17), ("read", 3), ("finish", 2)]


def test_each_waiting_stage_names_the_lane_it_waited_for(tmp_path):
    lake = str(tmp_path / "lake")
    doc, job = uuid7_at(START, 5), uuid7_at(START, 6)
    text_doc, text_job = uuid7_at(START, 7), uuid7_at(START, 8)
    ParquetEventWriter.for_uri(lake).write(_office_job(doc, job)
                                           + _office_job(text_doc, text_job, reader="text"))
    rows = query(lake, "SELECT job_id, stage, lane FROM stage_timings "
                       "ORDER BY job_id, stage_number").to_pylist()
    lanes = {(r["job_id"] == job, r["stage"]): r["lane"] for r in rows}
    assert lanes[(True, "queued")] == "split"
    assert lanes[(True, "waiting for a converter")] == "converter"
    assert lanes[(True, "waiting for a worker")] == "ocr"  # its page was read by OCR
    assert lanes[(False, "waiting for a worker")] == "cpu"  # the text layer's
    assert lanes[(True, "waiting for fields")] == "fields"
    assert lanes[(True, "read")] is None and lanes[(True, "convert")] is None


def _sql(home: str, statement: str) -> list[dict]:
    result = CliRunner().invoke(app, ["sql", statement, "--home", home, "--format", "json"],
                                env=FAST)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


@pytest.mark.parametrize("fields", ["nda", "none"])
def test_a_real_runs_stages_add_up_to_its_jobs_latency(tmp_path, pdf_factory, fields):
    pdf_factory("short.pdf", 2)
    pdf_factory("long.pdf", 12)
    (tmp_path / "docs" / "broken.pdf").write_bytes(b"%PDF-1.7 not really")
    home = str(tmp_path / "home")
    # This test's own clocks around the run: every stage lies inside them, and no job's stages
    # add up to more than the run's wall clock (a stage counted twice, or an interval taken from
    # the wrong event, would).
    begun = datetime.now(UTC).replace(tzinfo=None) - timedelta(seconds=0.01)
    wall_started = time.monotonic()
    result = CliRunner().invoke(app, ["run", str(tmp_path / "docs"), "--home", home,
                                      "--fields", fields], env=FAST)
    wall = time.monotonic() - wall_started
    ended = datetime.now(UTC).replace(tzinfo=None) + timedelta(seconds=0.01)
    assert result.exit_code == 0, result.output
    window = _sql(home, "SELECT min(started_at) AS first, max(finished_at) AS last, "
                        "max(seconds) AS longest FROM stage_timings")[0]
    assert begun <= datetime.fromisoformat(window["first"]), (begun, window)
    assert datetime.fromisoformat(window["last"]) <= ended, (ended, window)
    assert 0 < window["longest"] < wall
    rows = _sql(home, """
        SELECT l.job_id, l.status, l.seconds, l.end_to_end_seconds,
               sum(s.seconds) AS stages,
               sum(CASE WHEN NOT s.after_finished THEN s.seconds END) AS until_finished,
               min(s.started_at) = min(l.created_at) AS starts_at_creation,
               count(*) AS n
        FROM job_latency l JOIN stage_timings s USING (dt, job_id)
        GROUP BY l.job_id, l.status, l.seconds, l.end_to_end_seconds""")
    assert sorted(r["status"] for r in rows) == ["failed", "succeeded", "succeeded"]
    for row in rows:
        assert 0 < row["stages"] <= wall, (row, wall)
        assert abs(row["stages"] - row["end_to_end_seconds"]) < 1, row
        assert abs(row["until_finished"] - row["seconds"]) < 1, row
        assert row["starts_at_creation"], row
    gaps = _sql(home, """
        SELECT count(*) AS n FROM stage_timings a JOIN stage_timings b
          ON a.dt = b.dt AND a.job_id = b.job_id AND b.stage_number = (
            SELECT min(stage_number) FROM stage_timings c
            WHERE c.dt = a.dt AND c.job_id = a.job_id AND c.stage_number > a.stage_number)
        WHERE a.finished_at <> b.started_at""")
    assert gaps == [{"n": 0}]
    stages = {r["stage"] for r in _sql(home, "SELECT DISTINCT stage FROM stage_timings")}
    assert {"queued", "split", "finish"} <= stages
    assert ("fields" in stages) == (fields == "nda")
