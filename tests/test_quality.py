"""The lake's data-quality suites pass on a healthy lake and name each kind of bad row."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from support.lakegen import failed_job, succeeded_job

from evals.quality import CheckResult, QualityReport, check_lake, to_events
from lake import events as ev
from lake.catalog import query
from lake.compaction import compact
from lake.writer import ParquetEventWriter

NOW = ev.utc_now()


def at(seconds: float) -> datetime:
    """Shortly before the check runs, so the "not in the future" expectation has real data."""
    return NOW - timedelta(hours=1) + timedelta(seconds=seconds)


def job(doc: str, job_id: str, *, pages: int, pages_read: int | None = None, fail: bool = False,
        t: float = 0.0) -> list[ev.Event]:
    """One PDF job, end to end: registered, split into five-page units, read, finished."""
    if fail:
        return failed_job(doc, job_id, start=at(t), pages=pages, error_type="Blocked",
                          message="safety block")
    return succeeded_job(doc, job_id, start=at(t), pages=pages, pages_read=pages_read,
                         reader="gemini", chars=1500, size=2048)


def model_call(call_id: str, job_id: str, *, cost: float = 0.0004, when=None) -> ev.ModelCalled:
    return ev.ModelCalled(call_id=call_id, job_id=job_id, document_id=f"d-{job_id}",
                          purpose="read", provider="gemini", model="gemini-flash", outcome="ok",
                          http_status=200, input_tokens=1200, output_tokens=300,
                          latency_ms=2900.0, cost_usd=cost, occurred_at=when or at(4))


def healthy_events() -> list[ev.Event]:
    return [
        *job("d-ok", "j-ok", pages=7),
        *job("d-bad", "j-bad", pages=3, fail=True, t=10),
        model_call("c1", "j-ok"),
        model_call("c2", "j-ok", when=NOW + timedelta(minutes=1)),  # within the clock skew
        ev.ResultPublished(document_id="d-ok", job_id="j-ok", status="succeeded",
                           strategy="single-pass", party=["Acme", "Beta"], input_tokens=5000,
                           output_tokens=200, processing_ms=8000.0, occurred_at=at(8)),
    ]


def write(uri: str, events: list[ev.Event]) -> str:
    ParquetEventWriter.for_uri(uri).write(events)
    return uri


def failing(report: QualityReport) -> dict[tuple[str, str], CheckResult]:
    return {(r.table, r.expectation): r for r in report.failures}


@pytest.fixture
def healthy_lake(tmp_path) -> str:
    return write(str(tmp_path / "lake"), healthy_events())


def test_a_healthy_lake_passes_every_expectation(healthy_lake):
    report = check_lake(healthy_lake)
    assert report.failures == []
    assert report.success
    assert {r.table for r in report.results} == {
        "documents", "jobs", "failed_jobs", "units", "pages", "succeeded_job_pages", "events",
        "events_after_their_job", "raw_duplicates", "model_calls", "results", "failures",
        "job_latency", "daily_costs",
    }


def test_an_empty_lake_passes_quietly(tmp_path, capfd):
    report = check_lake(str(tmp_path / "empty"))
    assert report.success and len(report.results) >= 20
    captured = capfd.readouterr()
    assert "Calculating Metrics" not in captured.err + captured.out


def test_events_written_twice_break_no_uniqueness_but_their_rate_is_reported(healthy_lake):
    write(healthy_lake, healthy_events())
    raw = query(healthy_lake, "SELECT count(*) AS n FROM raw_page_read").column("n")[0].as_py()
    assert raw == 14  # the duplicates really are in the lake...
    report = check_lake(healthy_lake)
    # ...the views hide them, but a 50% rate of redelivered copies is a retry storm to look at
    # (one row per event type present, each at 50%)
    assert [(r.table, r.unexpected_count) for r in report.failures] == [("raw_duplicates", 15)]
    compact(healthy_lake)  # compaction drops the copies
    assert check_lake(healthy_lake).success


BAD_ROWS = {
    ("model_calls", "expect_column_values_to_be_between(column=cost_usd)"): 1,
    # the negative call also makes its day's cost negative, per model and in the total
    ("daily_costs", "expect_column_values_to_be_between(column=cost_usd)"): 2,
    ("daily_costs", "expect_column_values_to_be_between(column=cost_per_1000_pages)"): 1,
    ("succeeded_job_pages",
     "expect_column_pair_values_to_be_equal(column_A=pages, column_B=page_rows)"): 1,
    ("jobs", "expect_column_values_to_be_in_set(column=status)"): 1,
    ("jobs",
     "expect_column_pair_values_a_to_be_greater_than_b(column_A=finished_at, column_B=created_at)"
     ): 1,
    # the job that finished before it was created: a negative latency, an event older than it
    ("job_latency", "expect_column_values_to_be_between(column=seconds)"): 1,
    ("events_after_their_job",
     "expect_column_values_to_be_between(column=ms_after_job_created)"): 1,
    ("pages", "expect_compound_columns_to_be_unique(column_list=[job_id, page_number])"): 2,
    ("events", "expect_column_values_to_be_between(column=seconds_ahead)"): 1,
}


def test_each_kind_of_bad_row_fails_its_own_expectation_and_no_other(healthy_lake):
    write(healthy_lake, [
        model_call("c-neg", "j-ok", cost=-0.01),
        *job("d-short", "j-short", pages=3, pages_read=2, t=20),  # succeeded, page 3 missing
        ev.JobCreated(document_id="d-odd", job_id="j-odd", status="paused", occurred_at=at(30)),
        ev.JobCreated(document_id="d-back", job_id="j-back", occurred_at=at(50)),
        ev.JobFailed(document_id="d-back", job_id="j-back", failure_reason="bad input",
                     occurred_at=at(40)),  # finished before it was created
        ev.PageRead(event_id="crafted-duplicate", document_id="d-ok", job_id="j-ok", unit_id="u0",
                    page_number=1, reader="text", chars=10, occurred_at=at(9)),
        model_call("c-future", "j-ok", when=NOW + timedelta(days=1)),
    ])
    report = check_lake(healthy_lake, now=NOW)
    failures = failing(report)
    assert {key: r.unexpected_count for key, r in failures.items()} == BAD_ROWS
    assert not report.success


def test_failure_details_name_the_offending_rows(tmp_path):
    uri = write(str(tmp_path / "lake"), [
        *job("d-short", "j-short", pages=3, pages_read=2),
        ev.JobCreated(document_id="d-odd", job_id="j-odd", status="paused", occurred_at=at(30)),
    ])
    failures = failing(check_lake(uri))
    pages = failures[("succeeded_job_pages",
                      "expect_column_pair_values_to_be_equal(column_A=pages, column_B=page_rows)")]
    assert json.loads(pages.details)["rows"] == [{"job_id": "j-short", "pages": 3, "page_rows": 2}]
    status = json.loads(failures[("jobs", "expect_column_values_to_be_in_set(column=status)")]
                        .details)
    assert status["rows"] == [{"job_id": "j-odd", "status": "paused"}]
    assert "succeeded" in status["expected"]["value_set"]


def test_report_becomes_expectation_checked_events_in_the_lake(tmp_path):
    report = QualityReport([
        CheckResult("jobs", "expect_column_values_to_be_unique(column=job_id)", True, 0),
        CheckResult("pages", "expect_compound_columns_to_be_unique(column_list=[job_id, "
                    "page_number])", False, 2, '{"rows": []}'),
    ])
    events = to_events(report, run_id="run-1")
    uri = write(str(tmp_path / "lake"), events)
    rows = query(uri, "SELECT run_id, table_name, success, unexpected_count, details "
                      "FROM ev_expectation_checked ORDER BY table_name").to_pylist()
    assert rows == [
        {"run_id": "run-1", "table_name": "jobs", "success": True, "unexpected_count": 0,
         "details": None},
        {"run_id": "run-1", "table_name": "pages", "success": False, "unexpected_count": 2,
         "details": '{"rows": []}'},
    ]
    assert len({e.run_id for e in to_events(report)}) == 1  # a fresh run id, shared


def test_checking_a_lake_that_holds_past_checks_still_passes(healthy_lake):
    write(healthy_lake, to_events(check_lake(healthy_lake)))
    assert check_lake(healthy_lake).success


def test_importing_the_module_does_not_import_great_expectations():
    code = "import sys, evals.quality; print('great_expectations' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_faults_the_views_cannot_hide_are_caught(healthy_lake):
    write(healthy_lake, [
        *[e.model_copy(update={"failure_reason": "  "}) if e.event_type == "job_failed" else e
          for e in failed_job("d-why", "j-why", start=at(60))],  # failed, saying nothing
        ev.FailureRecorded(document_id="d-ok", job_id="j-ok", unit_id="u0", stage="read",
                           error_type="Timeout", message="", final=False, attempt=9,
                           occurred_at=at(5)),
        ev.ModelCalled(call_id="c-free", job_id="j-ok", document_id="d-ok", purpose="read",
                       provider="gemini", model="gemini-flash", outcome="ok",
                       occurred_at=at(5)),  # a successful call that used no tokens
    ])
    failures = failing(check_lake(healthy_lake, now=NOW))
    assert {key: r.unexpected_count for key, r in failures.items()} == {
        ("failed_jobs", "expect_column_values_to_not_be_null(column=failure_reason)"): 1,
        ("failures", "expect_column_values_to_not_be_null(column=message)"): 1,
        ("model_calls", "expect_column_values_to_be_between(column=ok_call_input_tokens)"): 1,
    }


def test_the_suites_are_stored_with_the_project_in_gx_format():
    from evals.quality import SUITES_DIR, stored_suites
    from lake.replay import JOB_STATUSES, UNIT_STATUSES

    suites = stored_suites()
    assert {p.name for p in SUITES_DIR.glob("*.json")} == {s["name"] + ".json"
                                                           for s in suites.values()}
    for suite in suites.values():
        assert suite["expectations"] and all(e["type"].startswith("expect_")
                                             for e in suite["expectations"])
    sets = {(name, e["kwargs"]["column"]): set(e["kwargs"]["value_set"])
            for name, suite in suites.items() for e in suite["expectations"]
            if e["type"] == "expect_column_values_to_be_in_set"}
    assert sets[("jobs", "status")] == JOB_STATUSES
    assert sets[("units", "status")] == UNIT_STATUSES


def test_a_checkpoint_run_writes_data_docs_into_the_given_folder(healthy_lake, tmp_path):
    docs = tmp_path / "lake" / "_quality"
    report = check_lake(healthy_lake, docs_dir=docs)
    assert report.success and report.docs is not None and report.docs.is_file()
    assert report.docs.is_relative_to(docs)
    html = report.docs.read_text()
    assert "lake.daily_costs" in html and "lake.failed_jobs" in html
    assert (docs / "gx" / "checkpoints").is_dir()
    check_lake(healthy_lake, docs_dir=docs)  # a second run joins the first in the same site
    runs = list((docs / "gx" / "uncommitted" / "validations").rglob("*.json"))
    assert len(runs) >= 2 * len(report.results and {r.table for r in report.results})


def test_lake_check_docs_prints_where_the_data_docs_are(tmp_path):
    from typer.testing import CliRunner

    from infra.cli.main import app

    home = tmp_path / "home"
    write(str(home / "lake"), healthy_events())
    result = CliRunner().invoke(app, ["lake", "check", "--docs", "--home", str(home),
                                      "--format", "table"])
    assert result.exit_code == 0, result.output
    (line,) = [x for x in result.output.splitlines() if x.startswith("data docs: ")]
    index = Path(line.removeprefix("data docs: "))
    assert index.is_file() and index.is_relative_to(home / "lake" / "_quality")
    assert "<html" in index.read_text().lower()


def test_estimated_tokens_belong_to_calls_that_got_no_answer(healthy_lake):
    """Issue 19, item 9: a timed-out call carries its input tokens estimated from the request
    (``tokens_estimated``); an estimate on an answered call, or an estimate of nothing, is a
    fault of the ledger."""
    call = {"job_id": "j-ok", "document_id": "d-ok", "purpose": "read", "provider": "gemini",
            "model": "gemini-flash", "occurred_at": at(5), "tokens_estimated": True}
    write(healthy_lake, [
        ev.ModelCalled(call_id="c-fine", outcome="timeout", input_tokens=261, cost_usd=1e-4,
                       **call),
        ev.ModelCalled(call_id="c-answered", outcome="ok", input_tokens=261, **call),
        ev.ModelCalled(call_id="c-nothing", outcome="timeout", **call),
    ])
    failures = failing(check_lake(healthy_lake, now=NOW))
    assert {key: r.unexpected_count for key, r in failures.items()} == {
        ("model_calls", "expect_column_values_to_be_in_set(column=estimated_call_outcome)"): 1,
        ("model_calls",
         "expect_column_values_to_be_between(column=estimated_call_input_tokens)"): 1,
    }
