"""What the commands print: plain rows when piped, every result of a script, the schema reference,
views for other clients, honest run summaries."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import duckdb
import pytest
from typer.testing import CliRunner

from infra.cli.main import app

runner = CliRunner()
FAST = {"DOCLAKE_EVENT_FLUSH_S": "0.02", "DOCLAKE_POLL_INTERVAL_S": "0.2",
        "DOCLAKE_CPU_WORKERS": "1"}


def invoke(*args: str, input: str | None = None):
    return runner.invoke(app, list(args), env=FAST, input=input, catch_exceptions=False)


@pytest.fixture
def home(tmp_path, pdf_factory):
    """A home after one run over two PDFs and one file that is not a PDF."""
    pdf_factory("a.pdf", 3, word="walrus")
    pdf_factory("b.pdf", 2, word="penguin")
    (tmp_path / "docs" / "bad.pdf").write_bytes(b"not a pdf at all")
    path = str(tmp_path / "home")
    result = invoke("run", str(tmp_path / "docs"), "--home", path)
    assert result.exit_code == 0, result.output
    return path


def test_piped_output_is_csv_and_ids_are_whole(home):
    result = invoke("sql", "SELECT job_id, document_id FROM jobs ORDER BY job_id", "--home", home)
    lines = result.output.splitlines()
    assert lines[0] == "job_id,document_id"
    assert all(len(cell) == 36 for line in lines[1:] for cell in line.split(","))


def test_a_forced_table_folds_ids_instead_of_cutting_them(home):
    ids = [r["job_id"] for r in json.loads(invoke("sql", "SELECT job_id FROM jobs", "--home", home,
                                                  "--format", "json").stdout)]
    table = invoke("sql", "SELECT job_id, document_id, status, pages, failure_reason, created_at, "
                   "finished_at FROM jobs", "--home", home, "--format", "table").output
    assert "…" not in table
    cells = "".join(ch for ch in table if ch.isalnum() or ch == "-")
    assert all(job_id.replace("-", "") in cells.replace("-", "") for job_id in ids)


def test_a_script_prints_every_result_and_the_last_statement_needs_no_semicolon(home):
    result = invoke("sql", "SELECT 1 AS one; CREATE TEMP VIEW v AS SELECT 2 AS two; "
                    "SELECT * FROM v", "--home", home, "--format", "csv")
    assert result.exit_code == 0
    assert result.output.split("\n\n") == ["one\n1", "two\n2\n"]


def test_an_error_in_a_script_stops_it_with_exit_2(home):
    result = invoke("sql", "SELECT 1 AS one; SELECT nope FROM jobs; SELECT 3 AS three", "--home",
                    home, "--format", "csv")
    assert result.exit_code == 2
    assert "nope" in result.output and "three" not in result.output


def test_interactive_skips_comments_and_answers_dot_commands(home):
    script = "-- comment;\n.tables\n.schema jobs\nSELECT count(*) AS n FROM documents;\n;\nSELECT 5 AS last\n"
    result = invoke("sql", "--home", home, "--format", "csv", input=script)
    assert result.exit_code == 0, result.output
    assert "error:" not in result.output
    assert "documents,\"one row per document" in result.output
    assert "failure_reason,VARCHAR,why the job failed" in result.output
    assert "n\n3\n" in result.output and "last\n5\n" in result.output


def test_schema_lists_every_contract_table_with_described_columns():
    rows = json.loads(invoke("schema", "--format", "json").stdout)
    tables = {r["table"] for r in rows}
    assert {"documents", "jobs", "units", "pages", "model_calls", "failures", "results",
            "events", "daily_costs"} <= tables
    undescribed = [(r["table"], r["column"]) for r in rows if not r["description"]]
    assert undescribed == []
    assert invoke("sql", "--tables", "--format", "json").output == invoke(
        "schema", "--format", "json").output


def test_lake_views_open_the_same_tables_in_another_duckdb(home, tmp_path):
    printed = invoke("lake", "views", "--home", home).output
    con = duckdb.connect()
    for statement in duckdb.connect().extract_statements(printed):
        con.execute(statement.query)
    assert con.execute("SELECT count(*) FROM jobs").fetchone() == (3,)
    database = tmp_path / "views.duckdb"
    assert invoke("lake", "views", "--home", home, "--out", str(database)).exit_code == 0
    assert duckdb.connect(str(database)).execute(
        "SELECT count(*) FROM documents").fetchall() == [(3,)]


def test_status_counts_documents_by_their_latest_job(home, tmp_path):
    again = invoke("run", str(tmp_path / "docs"), "--home", home, "--retry-failed")
    assert "failed 1" in again.output
    documents = json.loads(invoke("status", "--home", home, "--format", "json").stdout)
    assert documents["documents"] == {"queued": 0, "extracting": 0, "succeeded": 2, "failed": 1}
    jobs = json.loads(invoke("status", "--home", home, "--format", "json", "--jobs").stdout)
    assert jobs["jobs"]["failed"] == 2


def test_a_rerun_reads_nothing_and_leaves_failed_bytes_alone(home, tmp_path):
    again = invoke("run", str(tmp_path / "docs"), "--home", home)
    assert "unchanged 3" in again.output and "(0 read by this run)" in again.output
    assert "--retry-failed" in again.output
    count = json.loads(invoke("sql", "SELECT count(*) AS n FROM jobs", "--home", home,
                              "--format", "json").output)
    assert count == [{"n": 3}]


def test_search_takes_a_quoted_argument_as_a_phrase(home):
    words = json.loads(invoke("search", "page", "walrus", "--home", home, "--format",
                              "json").stdout)
    assert {h["document"] for h in words} == {"a.pdf"}
    phrase = invoke("search", "page walrus", "--home", home, "--format", "json")
    assert json.loads(phrase.stdout) == []
    exact = json.loads(invoke("search", "walrus a.pdf", "--home", home, "--format",
                              "json").stdout)
    assert len(exact) == 3


def test_worker_prints_documents_and_pages_as_one_object(home):
    result = invoke("worker", "--until-idle", "--home", home, "--format", "json")
    summary = json.loads(result.stdout)
    assert summary["documents"] == 0 and summary["pages_read"] == 0
    assert "recovered:" not in result.output and "{'released'" not in result.output


def test_an_empty_folder_warns_and_creates_nothing(tmp_path):
    (tmp_path / "empty").mkdir()
    result = invoke("run", str(tmp_path / "empty"), "--home", str(tmp_path / "h"))
    assert result.exit_code == 0
    assert "no files" in result.output
    assert not (tmp_path / "h").exists()


def test_short_help_and_version():
    assert "Usage" in invoke("-h").output
    assert "Usage" in invoke("sql", "-h").output
    assert invoke("--version").output.startswith("doclake ")


def test_an_interrupted_worker_exits_130_and_says_what_finished(tmp_path):
    env = {**os.environ, **FAST}
    process = subprocess.Popen([sys.executable, "-m", "infra.cli.main", "worker", "--home",
                                str(tmp_path / "h"), "--format", "json"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
    while not (tmp_path / "h" / "search.db").exists() and process.poll() is None:
        time.sleep(0.05)
    time.sleep(1.0)  # let it reach its loop; an earlier Ctrl-C is covered the same way
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    summary = json.loads(out)
    assert summary["interrupted"] is True and summary["documents"] == 0


def test_retry_failed_is_a_new_job_on_the_same_version_not_a_new_version(home, tmp_path):
    """Issue 19: --retry-failed on unchanged bytes used to bump documents.version (same sha256)
    and report "new versions 1". A retry is a new job on the same version."""
    before = json.loads(invoke("sql", "SELECT source_name, version, sha256 FROM documents "
                               "ORDER BY 1", "--home", home, "--format", "json").stdout)
    again = invoke("run", str(tmp_path / "docs"), "--home", home, "--retry-failed")
    assert again.exit_code == 0, again.output
    assert "new versions 0" in again.output and "retried 1" in again.output
    after = json.loads(invoke("sql", "SELECT source_name, version, sha256 FROM documents "
                              "ORDER BY 1", "--home", home, "--format", "json").stdout)
    assert after == before
    jobs = json.loads(invoke("sql", "SELECT count(*) AS n FROM jobs", "--home", home,
                             "--format", "json").output)
    assert jobs == [{"n": 4}]


def test_a_run_with_nothing_to_do_returns_without_waiting_a_poll_interval(home, tmp_path):
    """Issue 19: a second run over unchanged files took one poll interval (5.4 to 5.8 s at the
    default) before returning: the end of ingest did not wake the run's loop. With an interval
    of an hour, it must still return (the subprocess limit is far below the interval)."""
    env = {**os.environ, **FAST, "DOCLAKE_POLL_INTERVAL_S": "3600"}
    done = subprocess.run([sys.executable, "-m", "infra.cli.main", "run", str(tmp_path / "docs"),
                           "--home", home], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "unchanged 3" in done.stdout and "(0 read by this run)" in done.stdout


def test_the_interrupted_note_counts_documents_not_unpublished_results(tmp_path, pdf_factory):
    """Issue 19: an interrupted run said "24 documents not finished" for 32 documents when 154 of
    155 pages had been read: it counted results not yet published. Now the documents whose job
    has not ended are counted apart from those that only wait for their result."""
    from support.helpers import Harness

    from extract.state import JobStatus
    from infra.cli.render.run_report import interrupted_note
    from lake.events import utc_now

    harness = Harness(tmp_path)
    jobs = [harness.planner.ingest(pdf_factory(f"d{n}.pdf", 1, word=f"w{n}")).job_id
            for n in range(3)]
    harness.store.request_fields(jobs, "nda", "rules")
    for job_id in jobs[:2]:  # read and succeeded; their fields result is not published yet
        assert harness.store.transition_job(job_id, JobStatus.QUEUED, JobStatus.SUCCEEDED,
                                            at=utc_now())
        harness.store.mark_indexed(job_id, utc_now())
    note = interrupted_note(harness.store.list_jobs(jobs), harness.store.page_progress(jobs),
                            "run again")
    assert note.startswith("1 of 3 documents not finished")
    assert "2 finished, their results not yet published" in note
