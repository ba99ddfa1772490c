"""Views saved with `doclake lake views` follow the lake as it grows (issue 26, finding 1).

The scenario of the issue: views saved after a text-only run (no model call, no failure yet)
must show the model calls and failures a later vision run and a broken file add to the same
home, exactly as `doclake sql` does.
"""

from __future__ import annotations

import json

import duckdb
from typer.testing import CliRunner

from infra.cli.main import app

runner = CliRunner()
FAST = {"DOCLAKE_EVENT_FLUSH_S": "0.02", "DOCLAKE_POLL_INTERVAL_S": "0.2",
        "DOCLAKE_CPU_WORKERS": "1", "DOCLAKE_SIMULATED_LATENCY_SCALE": "0.05"}
QUESTIONS = {
    "model_calls": "SELECT count(*) AS n FROM model_calls",
    "failures": "SELECT count(*) AS n FROM failures",
    "jobs": "SELECT count(*) AS n FROM jobs",
    "pages": "SELECT count(*) AS n FROM pages",
}


def invoke(*args: str):
    return runner.invoke(app, list(args), env=FAST, catch_exceptions=False)


def _doclake_sql(home: str) -> dict[str, int]:
    return {name: json.loads(invoke("sql", sql, "--home", home, "--format", "json").output)[0]["n"]
            for name, sql in QUESTIONS.items()}


def _answers(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    return {name: con.execute(sql).fetchone()[0] for name, sql in QUESTIONS.items()}


def test_views_saved_after_a_text_run_show_what_later_runs_add(tmp_path, pdf_factory):
    home = str(tmp_path / "home")
    first = tmp_path / "first"
    first.mkdir()
    (first / "a.pdf").write_bytes(pdf_factory("a.pdf", 2, word="walrus").read_bytes())
    assert invoke("run", str(first), "--home", home, "--reader", "text").exit_code == 0

    database = tmp_path / "lake.duckdb"
    assert invoke("lake", "views", "--home", home, "--out", str(database)).exit_code == 0
    printed = invoke("lake", "views", "--home", home).output
    saved = _answers(duckdb.connect(str(database), read_only=True))
    assert saved["model_calls"] == 0 and saved["failures"] == 0 and saved["jobs"] == 1

    second = tmp_path / "second"
    second.mkdir()
    (second / "b.pdf").write_bytes(pdf_factory("b.pdf", 2, word="penguin").read_bytes())
    (second / "broken.pdf").write_bytes(b"%PDF-1.7 this is not a pdf at all")
    invoke("run", str(second), "--home", home, "--reader", "simulated")

    truth = _doclake_sql(home)
    assert truth["model_calls"] > 0 and truth["failures"] > 0 and truth["jobs"] == 3
    assert _answers(duckdb.connect(str(database), read_only=True)) == truth
    script = duckdb.connect()
    for statement in script.extract_statements(printed):
        script.execute(statement.query)
    assert _answers(script) == truth
