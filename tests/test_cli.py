"""The ``doclake`` command as a user types it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from infra.cli.main import app
from infra.cli.render.output import plain
from tests.support.homes import empty_home

runner = CliRunner()
FAST = {"DOCLAKE_EVENT_FLUSH_S": "0.02", "DOCLAKE_POLL_INTERVAL_S": "0.2",
        "DOCLAKE_CPU_WORKERS": "1"}


def invoke(*args: str):
    return runner.invoke(app, list(args), env=FAST, catch_exceptions=False)


def test_run_then_sql_search_status_and_rerun(tmp_path, pdf_factory):
    home = str(tmp_path / "home")
    pdf_factory("a.pdf", 7, word="walrus")
    folder = str(tmp_path / "docs")
    (tmp_path / "docs" / "bad.pdf").write_bytes(b"not a pdf at all")
    result = invoke("run", folder, "--home", home)
    assert result.exit_code == 0, result.output
    assert "succeeded 1  failed 1  pages 7 (7 read by this run)" in result.output
    assert "unsupported_format" in result.output

    result = invoke("sql", "SELECT status, count(*) AS n, sum(pages) AS pages FROM jobs "
                    "GROUP BY 1 ORDER BY 1", "--home", home, "--format", "json")
    assert json.loads(result.stdout) == [{"status": "failed", "n": 1, "pages": None},
                                         {"status": "succeeded", "n": 1, "pages": 7}]
    result = invoke("sql", "SELECT 7.0 AS whole, 2.5 AS half", "--home", home, "--format", "csv")
    assert result.output.splitlines() == ["whole,half", "7,2.5"]

    result = invoke("search", "walrus", "page", "6", "--home", home, "--format", "json")
    assert [(h["document"], h["page"]) for h in json.loads(result.stdout)] == [("a.pdf", 6)]
    status = json.loads(invoke("status", "--home", home, "--format", "json").stdout)
    assert status["documents"]["succeeded"] == 1
    assert status["failure_reasons"] == {"unsupported_format": 1}
    read = next(q for q in status["queues"] if q["queue"] == "read")
    assert read == {"queue": "read", "visible": 0, "in_flight": 0, "dead_letter": 0}

    again = invoke("run", folder, "--home", home)
    assert "unchanged 2" in again.output and "pages 7 (0 read by this run)" in again.output


def test_a_copy_planned_in_a_later_batch_of_the_run_is_a_duplicate(tmp_path, pdf_factory):
    """The run plans 1, 2, 4... files a batch: ``z-copy.pdf`` (sorted last, third batch) has
    ``a.pdf``'s bytes. The summary says duplicate, not resumed, and counts one document."""
    import shutil

    home = str(tmp_path / "home")
    for name in ("a", "b", "c"):
        pdf_factory(f"{name}.pdf", 1, word=name)
    shutil.copy(tmp_path / "docs" / "a.pdf", tmp_path / "docs" / "z-copy.pdf")
    result = invoke("run", str(tmp_path / "docs"), "--home", home, "--fields", "none")
    assert result.exit_code == 0, result.output
    assert "documents 4  (new 3, new versions 0, duplicates 1, unchanged 0)" in result.output
    assert "resumed" not in result.output
    assert "succeeded 3  failed 0  pages 3" in result.output


def test_a_missing_path_is_a_usage_error_and_nothing_is_ingested(tmp_path, pdf_factory):
    home = tmp_path / "home"
    good = pdf_factory("a.pdf", 1)
    result = invoke("run", str(good), str(tmp_path / "missing.pdf"), "--home", str(home))
    assert result.exit_code == 2
    assert "no such file" in result.output
    assert not home.exists()


def test_bad_sql_exits_non_zero_with_the_error(tmp_path):
    result = invoke("sql", "SELECT nope FROM jobs", "--home", str(empty_home(tmp_path)))
    assert result.exit_code == 2
    assert "nope" in result.output


@pytest.mark.parametrize(("query", "named"), [
    ("SELECT * FROM job", ["did you mean jobs?"]),
    ("SELECT * FROM documnets", ["did you mean documents"]),
    ("SELECT statsu FROM jobs", ["did you mean status", "jobs.status"]),
    ("SELECT d.sorce_name FROM documents d", ["did you mean source_name", "documents.source_name"]),
    ("SELECT failure_reson FROM jobs JOIN documents USING (document_id)",
     ["did you mean failure_reason", "jobs.failure_reason"]),
])
def test_a_misspelt_name_is_one_line_and_a_hint_naming_the_analyst_schema(tmp_path, query, named):
    result = invoke("sql", query, "--home", str(empty_home(tmp_path)))
    assert result.exit_code == 2, result.output
    error, hint = result.output.strip().splitlines()  # one line each: no caret block
    assert error.startswith("error: ") and hint.startswith("hint: ")
    assert all(part in hint for part in named), hint
    assert "pg_" not in hint and "duckdb_" not in hint


def test_a_model_reader_without_a_key_stops_before_anything_is_ingested(tmp_path, pdf_factory):
    pdf_factory("a.pdf", 1)
    home = tmp_path / "home"
    result = runner.invoke(app, ["run", str(tmp_path / "docs"), "--home", str(home), "--reader",
                                 "gemini"], env={**FAST, "DOCLAKE_GEMINI_API_KEY": ""})
    assert result.exit_code == 2, result.output
    assert "no API key" in result.output and "DOCLAKE_GEMINI_API_KEY" in result.output
    assert not (home / "jobs.db").exists()


def test_a_query_that_begins_with_a_comment_runs(tmp_path, pdf_factory):
    """The dashboard's named queries begin with "-- ..." comments and run as they are."""
    home = str(tmp_path / "home")
    pdf_factory("a.pdf", 1)
    assert invoke("run", str(tmp_path / "docs"), "--home", home, "--fields", "none").exit_code == 0
    query = (Path(__file__).parents[1] / "dashboards" / "queries" / "throughput.sql").read_text()
    assert query.startswith("--")
    result = invoke("sql", query, "--home", home, "--format", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)[-1]["documents_finished"] == 1
    typo = invoke("sql", "SELECT 1", "--fromat", "json", "--home", home)
    assert typo.exit_code != 0  # an unknown option after the query is still refused


def test_lake_commands_on_a_finished_run(tmp_path, pdf_factory):
    home = str(tmp_path / "home")
    pdf_factory("a.pdf", 6)
    assert invoke("run", str(tmp_path / "docs"), "--home", home).exit_code == 0
    replay = invoke("lake", "replay", "--check", "--home", home)
    assert replay.exit_code == 0 and "no difference" in replay.output
    compact = invoke("lake", "compact", "--home", home, "--format", "json")
    assert json.loads(compact.stdout)["duplicates_dropped"] == 0
    check = invoke("lake", "check", "--home", home, "--format", "table")
    assert check.exit_code == 0, check.output
    assert ", 0 failed" in check.output


def test_replay_check_fails_when_the_store_disagrees(tmp_path, pdf_factory):
    import sqlite3

    home = tmp_path / "home"
    pdf_factory("a.pdf", 2)
    assert invoke("run", str(tmp_path / "docs"), "--home", str(home)).exit_code == 0
    with sqlite3.connect(home / "jobs.db") as db:
        db.execute("UPDATE jobs SET status = 'failed', failure_reason = 'tampered'")
    replay = invoke("lake", "replay", "--check", "--home", str(home))
    assert replay.exit_code == 1
    assert "tampered" in replay.output


def test_plain_prints_whole_numbers_as_integers():
    from decimal import Decimal

    assert plain(3.0) == 3 and isinstance(plain(3.0), int)
    assert plain(Decimal("12")) == 12 and plain(Decimal("1.5")) == 1.5
    assert plain([1.0, 2.5]) == [1, 2.5]


def test_lake_check_fails_on_a_bad_row_and_records_its_results(tmp_path):
    from lake.catalog import query
    from lake.events import ModelCalled
    from lake.writer import ParquetEventWriter

    lake = tmp_path / "home" / "lake"
    ParquetEventWriter.for_uri(str(lake)).write([
        ModelCalled(call_id="c1", job_id="j", purpose="read", provider="gemini", model="m",
                    outcome="ok", input_tokens=10, output_tokens=-5, cost_usd=-0.01)])
    check = invoke("lake", "check", "--home", str(tmp_path / "home"), "--format", "json")
    assert check.exit_code == 1
    # negative tokens and cost: in model_calls, and (issue 7) in that day's daily_costs too
    assert sum(not r["ok"] for r in json.loads(check.stdout)) == 4
    recorded = query(str(lake), "SELECT count(*) AS n, count(*) FILTER (WHERE NOT success) AS bad "
                                "FROM quality_checks").to_pylist()
    assert recorded[0]["bad"] == 4 and recorded[0]["n"] > 10


def test_interactive_sql_reports_a_bad_statement_and_goes_on(tmp_path):
    result = runner.invoke(app, ["sql", "--home", str(empty_home(tmp_path)), "--format", "csv"],
                           input="SELECT 1 AS one;\nSELECT nope;\nSELECT 2.0\n AS two;\n", env=FAST)
    assert result.exit_code == 0
    assert result.output.count("error") == 1
    assert "one\n1\n" in result.output and "two\n2\n" in result.output
