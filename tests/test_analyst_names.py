"""Names an analyst can guess (issue 8): ``source_path`` keeps a/NDA.pdf and b/NDA.pdf apart,
one word per idea across tables (``failure_reason``), ``source_name`` beside the job."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from infra.cli.main import app
from ingest.planner import expand_sources

runner = CliRunner()
FAST = {"DOCLAKE_EVENT_FLUSH_S": "0.02", "DOCLAKE_POLL_INTERVAL_S": "0.2",
        "DOCLAKE_CPU_WORKERS": "1"}


def invoke(*args: str):
    return runner.invoke(app, list(args), env=FAST, catch_exceptions=False)


def sql(home: str, query: str) -> list[dict]:
    result = invoke("sql", query, "--home", home, "--format", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_expand_sources_gives_paths_relative_to_the_folder_or_the_name(tmp_path, pdf_factory):
    (tmp_path / "docs" / "a").mkdir()
    (tmp_path / "docs" / "b").mkdir()
    first = pdf_factory("a/NDA.pdf", 1)
    pdf_factory("b/NDA.pdf", 1)
    assert [name for _, name in expand_sources([tmp_path / "docs"])] == ["a/NDA.pdf", "b/NDA.pdf"]
    assert expand_sources([first]) == [(first, "NDA.pdf")]


def test_same_name_in_two_folders_is_two_documents_with_distinct_source_paths(tmp_path,
                                                                               pdf_factory):
    home = str(tmp_path / "home")
    (tmp_path / "docs" / "a").mkdir()
    (tmp_path / "docs" / "b").mkdir()
    pdf_factory("a/NDA.pdf", 1, word="alpha")
    pdf_factory("b/NDA.pdf", 2, word="beta")
    result = invoke("run", str(tmp_path / "docs"), "--home", home)
    assert result.exit_code == 0, result.output
    rows = sql(home, "SELECT source_name, source_path, version FROM documents ORDER BY 2")
    assert rows == [{"source_name": "NDA.pdf", "source_path": "a/NDA.pdf", "version": 1},
                    {"source_name": "NDA.pdf", "source_path": "b/NDA.pdf", "version": 1}]

    # A file given by itself is known by its name; the job store keeps the path too.
    single = pdf_factory("single.pdf", 1)
    assert invoke("run", str(single), "--home", home).exit_code == 0
    rows = sql(home, "SELECT source_path FROM documents WHERE source_name = 'single.pdf'")
    assert rows == [{"source_path": "single.pdf"}]
    from infra.local.jobstore import SqliteJobStore

    store = SqliteJobStore(tmp_path / "home" / "jobs.db")
    try:
        assert sorted(j.source_path for j in store.list_jobs()) == [
            "a/NDA.pdf", "b/NDA.pdf", "single.pdf"]
    finally:
        store.close()


def test_failures_have_failure_reason_and_jobs_have_source_name(tmp_path, pdf_factory):
    home = str(tmp_path / "home")
    (tmp_path / "docs" / "sub").mkdir()
    pdf_factory("sub/good.pdf", 2)
    (tmp_path / "docs" / "bad.pdf").write_bytes(b"not a pdf at all")
    assert invoke("run", str(tmp_path / "docs"), "--home", home).exit_code == 0

    # issue 26: failure_reason only (error_type was the same column under a second name)
    failures = sql(home, "SELECT failure_reason FROM failures")
    assert failures == [{"failure_reason": "unsupported_format"}]
    # The same word for the same idea: a failed job's reason matches its failures'.
    assert sql(home, "SELECT j.failure_reason FROM jobs j JOIN failures f USING (dt, job_id)") \
        == [{"failure_reason": "unsupported_format"}]

    jobs = sql(home, "SELECT j.source_name, j.source_path, j.status, d.source_name AS registered "
               "FROM jobs j JOIN documents d USING (dt, document_id) ORDER BY 1")
    assert jobs == [
        {"source_name": "bad.pdf", "source_path": "bad.pdf", "status": "failed",
         "registered": "bad.pdf"},
        {"source_name": "good.pdf", "source_path": "sub/good.pdf", "status": "succeeded",
         "registered": "good.pdf"},
    ]


def test_the_schema_reference_lists_and_describes_the_new_columns():
    from infra.cli.render.schema_doc import table

    def described(name: str) -> dict[str, str]:
        found = table(name)
        assert found is not None
        return {c.name: c.description for c in found.columns}

    failures, jobs, documents = described("failures"), described("jobs"), described("documents")
    assert "error_type" in failures["failure_reason"] and "error_type" not in failures
    assert jobs["source_name"] and jobs["source_path"]
    assert "relative" in documents["source_path"]
    result = invoke("schema", "failures")
    assert result.exit_code == 0 and "failure_reason" in result.output


def test_show_tables_lists_only_what_analysts_query(tmp_path, pdf_factory):
    from lake.views import CONTRACT_TABLES, DERIVED_VIEWS

    home = str(tmp_path / "home")
    pdf_factory("a.pdf", 1)
    assert invoke("run", str(tmp_path / "docs"), "--home", home).exit_code == 0
    shown = {r["name"] for r in sql(home, "SHOW TABLES")}
    assert shown == {"events", *DERIVED_VIEWS} and set(CONTRACT_TABLES) <= shown
    assert not any(n.startswith(("raw_", "ev_")) for n in shown)
    # The layers are still there, out of the way, for whoever needs them.
    assert sql(home, "SELECT count(*) AS n FROM internal.raw_page_read") == [{"n": 1}]
    assert sql(home, "SELECT count(*) AS n FROM internal.ev_page_read") == [{"n": 1}]

    # A client's own DuckDB file (doclake lake views --out) has the same layout and works.
    import duckdb

    out = tmp_path / "lake.duckdb"
    result = invoke("lake", "views", "--home", home, "--out", str(out))
    assert result.exit_code == 0, result.output
    con = duckdb.connect(str(out), read_only=True)
    try:
        names = {r[0] for r in con.sql("SHOW TABLES").fetchall()}
        assert names == {"events", *DERIVED_VIEWS}
        assert con.sql("SELECT source_path FROM documents").fetchall() == [("a.pdf",)]
    finally:
        con.close()


def test_the_whole_schema_on_a_terminal_is_one_titled_table_per_analyst_table():
    """``doclake schema`` at 80 columns: a title and a column/type/description table per analyst
    table, not some 200 record blocks; CSV stays one flat listing for a program."""
    from infra.cli.render.schema_doc import tables

    shown = CliRunner().invoke(app, ["schema", "--format", "table"], env={"COLUMNS": "80"})
    assert shown.exit_code == 0, shown.output
    assert "record 1" not in shown.output
    for doc in tables():
        assert f"{doc.name}: " in shown.output, doc.name
    flat = CliRunner().invoke(app, ["schema", "--format", "csv"]).output.splitlines()
    assert flat[0] == "table,column,type,description"
    assert len(flat) - 1 == sum(len(doc.columns) for doc in tables())
