"""A dashboard an operator opens first (issue 26, finding 8): headline figures, the failed files
with path and reason, the slowest documents, readers, at least five charts after a text-only run,
UTC time axes with the date, labels whole, documents counted once, throughput over active time,
--since/--until and the time it was generated."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from support.dashboard_lake import write_busy_lake
from support.lakegen import succeeded_job, uuid7_at
from typer.testing import CliRunner

from dashboards import queries
from dashboards.report import render, seconds_text
from infra.cli.main import app
from lake.writer import ParquetEventWriter

runner = CliRunner()
FAST = {"DOCLAKE_EVENT_FLUSH_S": "0.02", "DOCLAKE_POLL_INTERVAL_S": "0.2", "DOCLAKE_CPU_WORKERS": "1"}


def invoke(*args: str):
    return runner.invoke(app, list(args), env=FAST, catch_exceptions=False)


def test_a_text_only_run_gives_an_operator_page(tmp_path, pdf_factory):
    pdf_factory("a.pdf", 3)
    pdf_factory("b.pdf", 2)
    sub = tmp_path / "docs" / "contracts"
    sub.mkdir()
    (sub / "broken.docx").write_bytes(b"PK\x03\x04 this zip is cut short")
    home = str(tmp_path / "home")
    assert invoke("run", str(tmp_path / "docs"), "--home", home, "--reader", "text").exit_code == 0
    assert invoke("run", str(tmp_path / "docs"), "--home", home, "--retry-failed").exit_code == 0
    out = tmp_path / "d.html"
    assert invoke("dashboard", "--home", home, "--out", str(out)).exit_code == 0
    page = out.read_text()

    cards = dict((label, figure) for figure, label in re.findall(
        r'<div class="figure">([^<]*)</div><div class="label">([^<]*)</div>', page))
    assert cards["documents"] == "3" and cards["failed"] == "1" and cards["succeeded"] == "66.7%"
    assert cards["pages read"] == "5" and cards["F1 (latest eval)"] == "n/a"
    assert cards["model spend"] == "$0.0000" and "simulated spend (not billed)" not in cards
    assert re.fullmatch(r"\d+\.\d s / \d+\.\d s", cards["end-to-end latency p50 / p95"])
    failed = re.search(r'data-query="failed_files">(.*?)</div>', page, re.S).group(1)
    assert "contracts/<wbr>broken.docx" in failed and ">corrupt<" in failed  # breaks after /
    # beside each failure, what to do about it (the summary's words for `corrupt`)
    assert "<th>reason</th><th>what to do</th>" in failed
    assert ('>corrupt</td><td class="hint">the file is damaged or truncated; re-export or '
            're-download it, then run it again</td>') in failed
    slowest = re.search(r'data-query="slowest_documents">(.*?)</div>', page, re.S).group(1)
    assert "a.pdf" in slowest and "b.pdf" in slowest
    charts = re.findall(r'<div class="chart" data-query="(\w+)"><svg', page)
    assert len(charts) >= 5, charts
    assert {"throughput", "queue_depth", "reader_share", "failures_by_stage"} <= set(charts)
    assert 'data-query="cost_by_model">No model was called' in page
    assert "time (UTC)" in page and re.search(r">\d{4}-\d\d-\d\d \d\d:\d\d:\d\d<", page)
    assert ">split: corrupt<" in page  # the whole label
    assert re.search(r"generated \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", page)
    # Each document once, however many jobs it had (broken.docx was tried twice).
    assert queries.run(f"{home}/lake", "throughput").num_rows == 3

    later = tmp_path / "later.html"
    tomorrow = (datetime.now(UTC) + timedelta(days=1)).date().isoformat()
    assert invoke("dashboard", "--home", home, "--out", str(later), "--since", tomorrow).exit_code == 0
    assert '<div class="figure">0</div><div class="label">documents</div>' in later.read_text()
    bad = invoke("dashboard", "--home", home, "--out", str(later), "--until", "soon")
    assert bad.exit_code == 2 and "YYYY-MM-DD" in bad.output


def test_throughput_counts_active_time_not_the_idle_hours_between_runs(tmp_path):
    lake = str(tmp_path / "lake")
    start = datetime(2026, 3, 1, 9, tzinfo=UTC)
    events = []
    for n, at in enumerate((start, start + timedelta(hours=10))):  # two runs, ten hours apart
        events += succeeded_job(uuid7_at(at, 2 * n), uuid7_at(at, 2 * n + 1), start=at, pages=2)
    ParquetEventWriter.for_uri(lake).write(events)
    rows = queries.run(lake, "throughput").to_pylist()
    busy_minutes = sum((r["happened_at"].replace(tzinfo=UTC) - a).total_seconds() / 60  # UTC
                       for r, a in zip(rows, (start, start + timedelta(hours=10)), strict=True))
    assert rows[0]["documents_per_minute"] == __import__("pytest").approx(2 / busy_minutes)


def _cards(page: str) -> dict[str, str]:
    return {label: figure for figure, label in re.findall(
        r'<div class="figure">([^<]*)</div><div class="label">([^<]*)</div>', page)}


def test_latency_spend_and_coverage_as_an_operator_reads_them(tmp_path):
    """p50 and p95 of the succeeded jobs' end-to-end time, billed spend apart from the simulated
    provider's, coverage over the documents the schema applies to; p95 wherever a tail is."""
    lake = str(tmp_path / "lake")
    written = write_busy_lake(lake)
    page = render(lake)
    cards = _cards(page)
    # the lake's jobs reach their final status after ``written.seconds`` (end to end, where a
    # result is published a second later, is tests/test_dashboard_figures.py's)
    assert cards["until final status p50 / p95"] == (
        f"{seconds_text(np.percentile(written.seconds, 50))} / "
        f"{seconds_text(np.percentile(written.seconds, 95))}")
    assert cards["model spend"] == f"${written.real_cost:,.4f}"
    assert cards["simulated spend (not billed)"] == f"${written.simulated_cost:,.4f}"
    assert "model cost" not in cards
    assert "p90" not in page.lower() and "p95" in page

    cost = {r["model"]: r for r in queries.run(lake, "cost_by_model").to_pylist()}
    assert cost["gemini-2.5-flash"]["simulated"] is False
    assert cost["simulated:gemini-2.5-flash-lite"]["simulated"] is True
    assert ">simulated (not billed)<" in page and ">billed<" in page  # the chart's legend

    coverage = {r["field"]: r for r in queries.run(lake, "field_coverage").to_pylist()}
    assert written.not_applicable > 0
    for field, found in written.found.items():
        assert coverage[field]["applicable_documents"] == written.applicable
        assert coverage[field]["coverage"] == pytest.approx(found / written.applicable)


def test_seconds_read_as_a_person_reads_them():
    assert seconds_text(8.44) == "8.4 s" and seconds_text(150.3) == "2 min 30 s"
    assert seconds_text(None) == "n/a" and seconds_text(float("nan")) == "n/a"


def test_weekly_f1_is_each_weeks_latest_run_with_its_interval(tmp_path):
    lake = str(tmp_path / "lake")
    written = write_busy_lake(lake)
    rows = queries.run(lake, "weekly_f1").to_pylist()
    monday = [(at - timedelta(days=at.weekday())).date() for at, *_ in written.weekly_f1]
    assert [r["week"] for r in rows] == monday
    assert [(r["f1"], r["f1_low"], r["f1_high"]) for r in rows] == \
        [tuple(figures) for _, *figures in written.weekly_f1]
    page = render(lake)
    assert 'data-query="weekly_f1"><svg' in page and ">rules \u00b7 rules-v1<" in page
    assert [f">{day.isoformat()}<" in page for day in monday] == [True] * len(monday)


def test_no_evals_says_so_instead_of_an_empty_chart(tmp_path):
    lake = str(tmp_path / "lake")
    at = datetime(2026, 3, 1, 9, tzinfo=UTC)
    ParquetEventWriter.for_uri(lake).write(succeeded_job(uuid7_at(at, 0), uuid7_at(at, 1),
                                                         start=at, pages=2))
    assert 'data-query="weekly_f1">No evals yet' in render(lake)
