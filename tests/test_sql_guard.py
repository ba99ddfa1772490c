"""``doclake sql`` reads the lake and writes no file, whatever the statement.

The forged-row probe: a ``COPY`` that writes a Parquet file into a lake partition made
``documents`` show a document that was never ingested. Every statement kind that can write a
file, change a setting or load code is refused before anything of the script runs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from infra.cli.main import app
from tests.support.pdfgen import make_pdf

runner = CliRunner()
FAST = {"DOCLAKE_EVENT_FLUSH_S": "0.02", "DOCLAKE_POLL_INTERVAL_S": "0.2",
        "DOCLAKE_CPU_WORKERS": "1"}


def invoke(*args: str, input: str | None = None):
    return runner.invoke(app, list(args), env=FAST, input=input, catch_exceptions=False)


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("sqlguard")
    (root / "docs").mkdir()
    make_pdf(root / "docs" / "a.pdf", ["walrus page 1"])
    result = invoke("run", str(root / "docs"), "--home", str(root / "home"), "--fields", "none")
    assert result.exit_code == 0, result.output
    return root / "home"


def files_under(folder: Path) -> dict[str, int]:
    return {str(p): p.stat().st_size for p in folder.rglob("*") if p.is_file()}


def sql(home: Path, query: str, *, fmt: str = "json"):
    return invoke("sql", query, "--home", str(home), "--format", fmt)


def test_a_copy_into_a_lake_partition_cannot_forge_a_document(home):
    registered = next((home / "lake").rglob("event_type=document_registered/dt=*/*.parquet"))
    forged = registered.parent / "part-forged.parquet"
    before = files_under(home)
    result = sql(home, f"COPY (SELECT * REPLACE ('FORGED.pdf' AS source_name) FROM "
                       f"read_parquet('{registered}')) TO '{forged}'")
    assert result.exit_code == 2
    assert "COPY statement refused" in result.output and "hint:" in result.output
    assert not forged.exists()
    names = [r["source_name"] for r in json.loads(sql(home, "SELECT source_name FROM documents")
                                                  .output)]
    assert names == ["a.pdf"]
    assert files_under(home) == before


@pytest.mark.parametrize("make_statement", [
    lambda lake, out: f"COPY (SELECT 1 AS a) TO '{lake}/x.csv'",
    lambda lake, out: f"COPY (SELECT 1 AS a) TO '{out}/x.csv'",
    lambda lake, out: f"EXPORT DATABASE '{lake}/exported'",
    lambda lake, out: f"ATTACH '{lake}/w.duckdb' AS w",
    lambda lake, out: f"ATTACH '{lake}/w.duckdb' AS w; CREATE TABLE w.t AS SELECT 1 AS a",
    lambda lake, out: "CREATE TABLE t AS SELECT * FROM jobs",
    lambda lake, out: "CREATE PERSISTENT SECRET s (TYPE s3, KEY_ID 'a', SECRET 'b')",
    lambda lake, out: "INSTALL httpfs",
    lambda lake, out: "LOAD httpfs",
    lambda lake, out: "SET VARIABLE x = 1",
    lambda lake, out: "SET threads = 1",
    lambda lake, out: "PRAGMA enable_profiling",
    lambda lake, out: f"PRAGMA profiling_output = '{lake}/profile.json'",
    lambda lake, out: "CALL pragma_version()",
    lambda lake, out: f"EXPLAIN ANALYZE COPY (SELECT 1) TO '{lake}/e.csv'",
    lambda lake, out: f"-- a comment first\nCOPY (SELECT 1) TO '{lake}/c.csv'",
])
def test_statements_that_write_set_or_load_are_refused_unrun(home, tmp_path, make_statement):
    lake = home / "lake"
    before = files_under(home)
    # The refused statement follows a harmless one: neither runs.
    # Its answer is a word no path holds (a bare 42 was found in pytest's own pytest-42 folder).
    result = sql(home, "SELECT 'unrun-marker-7f3a' AS first; " + make_statement(lake, tmp_path),
                 fmt="csv")
    assert result.exit_code == 2, result.output
    assert "refused" in result.output and "unrun-marker-7f3a" not in result.output
    assert files_under(home) == before
    assert list(tmp_path.iterdir()) == []


def test_a_read_outside_the_lake_is_refused(home, tmp_path):
    outside = tmp_path / "outside.parquet"
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"secret": ["OUTSIDE-7731"]}), outside)
    result = sql(home, f"SELECT * FROM read_parquet('{outside}')")
    assert result.exit_code != 0 and "OUTSIDE-7731" not in result.output


def test_the_temporary_directory_is_not_a_way_out(home, tmp_path, monkeypatch):
    (tmp_path / ".tmp").mkdir()
    (tmp_path / ".tmp" / "inside.csv").write_text("secret\nTMP-SECRET-5\n")
    monkeypatch.chdir(tmp_path)
    result = sql(home, "SELECT * FROM read_csv('.tmp/inside.csv')")
    assert result.exit_code != 0 and "TMP-SECRET-5" not in result.output


@pytest.mark.parametrize("query", [
    "SELECT count(*) AS n FROM documents",
    "-- counts\nFROM jobs SELECT status",
    "WITH j AS (SELECT * FROM jobs) SELECT count(*) AS n FROM j",
    "DESCRIBE jobs",
    "SHOW TABLES",
    "SUMMARIZE SELECT pages FROM jobs",
    "EXPLAIN SELECT * FROM jobs",
    "EXPLAIN ANALYZE SELECT * FROM jobs",
    "PIVOT (SELECT status, pages FROM jobs) ON status USING sum(pages)",
    "CREATE OR REPLACE TEMP VIEW v AS SELECT 2 AS two; SELECT * FROM v",
    "CREATE MACRO twice(x) AS x * 2; SELECT twice(21) AS n",
])
def test_reads_still_run(home, query):
    result = sql(home, query)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)


def test_the_prompt_says_a_refusal_and_goes_on(home, tmp_path):
    script = f"COPY (SELECT 1) TO '{tmp_path}/p.csv';\nSELECT 5 AS last;\n"
    result = invoke("sql", "--home", str(home), "--format", "csv", input=script)
    assert result.exit_code == 0, result.output
    assert "COPY statement refused" in result.output and "last\n5" in result.output
    assert not (tmp_path / "p.csv").exists()
