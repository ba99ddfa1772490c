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
from lake.catalog import query
from lake.read_only import NotARead
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


# The guard's own refusal, word for word as a user reads it (held here, not imported).
HINT_LINE = ("hint: doclake sql only reads the lake: queries (SELECT, WITH, DESCRIBE, SHOW, "
             "SUMMARIZE, EXPLAIN) and CREATE TEMP VIEW or MACRO; to save a result, redirect it: "
             "doclake sql \"SELECT ...\" --format csv > result.csv")


def assert_refused(output: str, kind: str) -> None:
    """The refusal is the guard's (exit 2 is checked by the caller): its error line names the
    statement's type, its hint is the whole hint, and no traceback or other error came first."""
    lines = " ".join(output.split("\n")).split("error: ")
    assert len(lines) == 2 and lines[0].strip() == "", output
    error = " ".join(lines[1].split())
    assert error.startswith(f"{kind} statement refused: "), output
    assert " ".join(HINT_LINE.split()) in error, output
    assert "Traceback" not in output


def test_a_copy_into_a_lake_partition_cannot_forge_a_document(home):
    registered = next((home / "lake").rglob("event_type=document_registered/dt=*/*.parquet"))
    forged = registered.parent / "part-forged.parquet"
    before = files_under(home)
    result = sql(home, f"COPY (SELECT * REPLACE ('FORGED.pdf' AS source_name) FROM "
                       f"read_parquet('{registered}')) TO '{forged}'")
    assert result.exit_code == 2
    assert_refused(result.output, "COPY")
    assert not forged.exists()
    names = [r["source_name"] for r in json.loads(sql(home, "SELECT source_name FROM documents")
                                                  .output)]
    assert names == ["a.pdf"]
    assert files_under(home) == before


@pytest.mark.parametrize(("kind", "make_statement"), [
    ("COPY", lambda lake, out: f"COPY (SELECT 1 AS a) TO '{lake}/x.csv'"),
    ("COPY", lambda lake, out: f"COPY (SELECT 1 AS a) TO '{out}/x.csv'"),
    ("EXPORT", lambda lake, out: f"EXPORT DATABASE '{lake}/exported'"),
    ("ATTACH", lambda lake, out: f"ATTACH '{lake}/w.duckdb' AS w"),
    ("ATTACH", lambda lake, out: (f"ATTACH '{lake}/w.duckdb' AS w; "
                                   "CREATE TABLE w.t AS SELECT 1 AS a")),
    ("CREATE", lambda lake, out: "CREATE TABLE t AS SELECT * FROM jobs"),
    ("CREATE", lambda lake, out: "CREATE PERSISTENT SECRET s (TYPE s3, KEY_ID 'a', SECRET 'b')"),
    ("LOAD", lambda lake, out: "INSTALL httpfs"),
    ("LOAD", lambda lake, out: "LOAD httpfs"),
    ("SET", lambda lake, out: "SET VARIABLE x = 1"),
    ("SET", lambda lake, out: "SET threads = 1"),
    ("PRAGMA", lambda lake, out: "PRAGMA enable_profiling"),
    ("SET", lambda lake, out: f"PRAGMA profiling_output = '{lake}/profile.json'"),
    ("CALL", lambda lake, out: "CALL pragma_version()"),
    ("EXPLAIN", lambda lake, out: f"EXPLAIN ANALYZE COPY (SELECT 1) TO '{lake}/e.csv'"),
    ("COPY", lambda lake, out: f"-- a comment first\nCOPY (SELECT 1) TO '{lake}/c.csv'"),
])
def test_statements_that_write_set_or_load_are_refused_unrun(home, tmp_path, kind,
                                                             make_statement):
    check_refused_unrun(home, tmp_path, make_statement(home / "lake", tmp_path), kind)


# Every statement type DuckDB's parser knows that is not a read, one example each, with the type
# name the refusal must print ("UNKNOWN": a type DuckDB's Python API has no name for).
EVERY_OTHER_TYPE = [
    ("INSERT", "INSERT INTO jobs VALUES (1)"),
    ("UPDATE", "UPDATE jobs SET pages = 0"),
    ("DELETE", "DELETE FROM jobs"),
    ("PREPARE", "PREPARE p AS SELECT 1"),
    ("EXECUTE", "EXECUTE p"),
    ("ALTER", "ALTER TABLE jobs ADD COLUMN y INT"),
    ("ALTER", "COMMENT ON TABLE jobs IS 'x'"),
    ("TRANSACTION", "BEGIN"),
    ("COPY", "COPY jobs FROM '{lake}/in.csv'"),
    ("DROP", "DROP VIEW jobs"),
    ("DROP", "DEALLOCATE p"),
    ("EXPORT", "EXPORT DATABASE '{lake}/e'"),
    ("PRAGMA", "IMPORT DATABASE '{lake}/e'"),
    ("PRAGMA", "COPY FROM DATABASE memory TO other"),
    ("VACUUM", "VACUUM"),
    ("VACUUM", "ANALYZE"),
    ("CALL", "CHECKPOINT"),
    ("SET", "RESET threads"),
    ("SET", "USE memory"),
    ("LOAD", "LOAD parquet"),
    ("ATTACH", "ATTACH ':memory:' AS m"),
    ("DETACH", "DETACH m"),
    ("MERGE_INTO", "MERGE INTO jobs USING jobs j2 ON (jobs.job_id = j2.job_id) "
                   "WHEN MATCHED THEN DELETE"),
    ("CREATE", "CREATE SEQUENCE s"),
    ("CREATE", "CREATE SCHEMA s"),
    ("CREATE", "CREATE TYPE t AS INTEGER"),
    ("UNKNOWN", "UPDATE EXTENSIONS"),
    ("UNKNOWN", "UPDATE EXTENSIONS (parquet)"),
]


@pytest.mark.parametrize(("kind", "statement"), EVERY_OTHER_TYPE)
def test_every_other_statement_type_is_refused_by_the_guard(home, tmp_path, kind, statement):
    check_refused_unrun(home, tmp_path, statement.format(lake=home / "lake"), kind)


def check_refused_unrun(home: Path, tmp_path: Path, statement: str, kind: str) -> None:
    before = files_under(home)
    # The refused statement follows a harmless one: neither runs.
    # Its answer is a word no path holds (a bare 42 was found in pytest's own pytest-42 folder).
    result = sql(home, "SELECT 'unrun-marker-7f3a' AS first; " + statement, fmt="csv")
    assert result.exit_code == 2, result.output
    assert_refused(result.output, kind)
    assert "unrun-marker-7f3a" not in result.output
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
    lines = result.output.splitlines()
    assert lines[0].startswith("error: COPY statement refused: COPY (SELECT 1) TO"), lines
    assert lines[-2:] == ["last", "5"], lines
    assert not (tmp_path / "p.csv").exists()


@pytest.mark.parametrize("statement", [
    "COPY (SELECT 1 AS a) TO '{lake}/x.csv'",
    "COPY (SELECT 1 AS a) TO '{lake}/events/event_type=document_registered/forged.parquet'",
    "ATTACH '{lake}/w.duckdb' AS w",
    "EXPORT DATABASE '{lake}/exported'",
    "UPDATE EXTENSIONS",
])
def test_the_library_query_writes_nothing_either(home, statement):
    """``lake.catalog.query`` (the dashboard's and notebooks' way in) applies the same
    allow-list: the confined connection could write inside the lake folder itself."""
    before = files_under(home)
    with pytest.raises(NotARead, match="statement refused"):
        query(str(home / "lake"), statement.format(lake=home / "lake"))
    assert files_under(home) == before
    assert query(str(home / "lake"), "SELECT count(*) AS n FROM documents").to_pylist() == [
        {"n": 1}]
