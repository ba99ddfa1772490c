"""``doclake run --fields ...`` as a user types it: the built-in schema with the offline rules,
a user's own schema from a module on the path, and the mistakes refused before any work."""

from __future__ import annotations

import json

import pytest
from support.pdfgen import make_pdf
from typer.testing import CliRunner

from extract.fields.strategies import STRATEGIES
from infra.cli.main import app

runner = CliRunner()
FAST = {"DOCLAKE_EVENT_FLUSH_S": "0.02", "DOCLAKE_POLL_INTERVAL_S": "0.2",
        "DOCLAKE_CPU_WORKERS": "1"}
NDA = ["NON-DISCLOSURE AGREEMENT made as of March 3, 2015",  # one short line a page
       "This Agreement is governed by the laws of the State of New York.",
       "This Agreement shall remain in effect for two (2) years."]


def invoke(*args: str):
    return runner.invoke(app, list(args), env=FAST, catch_exceptions=False)


def sql(home: str, query: str) -> list[dict]:
    return json.loads(invoke("sql", query, "--home", home, "--format", "json").output)


def test_run_with_the_nda_schema_and_rules_publishes_every_result_before_it_returns(tmp_path):
    docs, home = tmp_path / "docs", str(tmp_path / "home")
    docs.mkdir()
    make_pdf(docs / "a.pdf", NDA)
    make_pdf(docs / "b.pdf", [*NDA, "Signed."])
    (docs / "bad.pdf").write_bytes(b"not a pdf")
    result = invoke("run", str(docs), "--home", home, "--fields", "nda")
    assert result.exit_code == 0, result.output

    results = sql(home, "SELECT d.source_name, r.status, r.jurisdiction, r.term, r.effective_date, "
                  "r.strategy, r.failure_reason FROM results r JOIN documents d USING (document_id) "
                  "ORDER BY 1")
    assert results == [
        {"source_name": "a.pdf", "status": "succeeded", "jurisdiction": "New York",
         "term": "2 years", "effective_date": "2015-03-03", "strategy": "rules",
         "failure_reason": None},
        {"source_name": "b.pdf", "status": "succeeded", "jurisdiction": "New York",
         "term": "2 years", "effective_date": "2015-03-03", "strategy": "rules",
         "failure_reason": None},
        {"source_name": "bad.pdf", "status": "failed", "jurisdiction": None, "term": None,
         "effective_date": None, "strategy": "rules", "failure_reason": "job_failed"}]
    rows = sql(home, "SELECT field, value, value_index, page_number, char_offset, model_version "
               "FROM result_fields JOIN documents USING (document_id) "
               "WHERE source_name = 'a.pdf' ORDER BY field")
    assert [(r["field"], r["value"], r["page_number"]) for r in rows] == [
        ("effective_date", "2015-03-03", 1), ("jurisdiction", "New York", 2), ("term", "2 years", 3)]
    assert rows[1]["char_offset"] == NDA[1].index("New York")
    assert all(r["model_version"].startswith("rules-") for r in rows)
    for document_id in (r["document_id"] for r in sql(home, "SELECT document_id FROM documents")):
        published = json.loads((tmp_path / "home" / "objects" / "results" /
                                f"{document_id}.json").read_text())
        assert list(published)[:6] == ["document_id", "status", "extracted_fields",
                                       "model_version", "token_usage", "processing_ms"]

    again = invoke("run", str(docs), "--home", home, "--fields", "nda")  # nothing new to do
    assert "unchanged 3" in again.output
    assert sql(home, "SELECT count(*) AS n FROM ev_result_published") == [{"n": 3}]


@pytest.fixture
def user_schema(tmp_path, monkeypatch):
    """``mymodule:MySchema`` importable from a folder on sys.path, and a ``fake`` strategy."""
    folder = tmp_path / "user"
    folder.mkdir()
    (folder / "mymodule.py").write_text(
        "from pydantic import BaseModel\n\n"
        "class MySchema(BaseModel):\n"
        "    title: str | None = None\n"
        "    tags: list[str] = []\n\n"
        "NotASchema = 3\n")
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.setitem(STRATEGIES, "fake", "support.fields_fakes:build")


def test_run_with_a_users_schema_fills_result_fields(tmp_path, user_schema):
    docs, home = tmp_path / "docs", str(tmp_path / "home")
    docs.mkdir()
    make_pdf(docs / "memo.pdf", ["Quarterly memo"])
    result = invoke("run", str(docs), "--home", home, "--fields", "mymodule:MySchema",
                    "--strategy", "fake")
    assert result.exit_code == 0, result.output
    rows = sql(home, "SELECT field, value, value_index, schema_name FROM result_fields "
               "ORDER BY field, value_index")
    assert [(r["field"], r["value"], r["value_index"]) for r in rows] == [
        ("tags", "Quarterly", 0), ("tags", "memo", 1), ("title", "Quarterly", 0)]
    assert {r["schema_name"] for r in rows} == {"mymodule:MySchema"}
    (result_row,) = sql(home, "SELECT status, jurisdiction, party, input_tokens FROM results")
    assert result_row == {"status": "succeeded", "jurisdiction": None, "party": [],
                          "input_tokens": 120}


@pytest.mark.parametrize("args, message", [
    (["--fields", "mymodule:Missing"], "has no 'Missing'"),
    (["--fields", "mymodule:NotASchema"], "not a pydantic model"),
    (["--fields", "nomodule:X"], "cannot import module"),
    (["--fields", "mymodule:MySchema"], "extracts only the NDA schema"),
    (["--fields", "nda", "--strategy", "telepathy"], "is not a strategy"),
    (["--fields", "nda", "--strategy", "ghost"], "strategy_unavailable"),
])
def test_fields_mistakes_are_refused_before_anything_is_ingested(
        tmp_path, user_schema, monkeypatch, args, message):
    monkeypatch.setitem(STRATEGIES, "ghost", "extract.fields.ghost_strategy:build")
    make_pdf(tmp_path / "a.pdf", ["text"])
    home = tmp_path / "home"
    result = invoke("run", str(tmp_path / "a.pdf"), "--home", str(home), *args)
    assert result.exit_code == 2
    assert message in " ".join(result.output.split())
    assert not home.exists()
