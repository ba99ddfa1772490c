"""`doclake show FILE-OR-ID`: one document by its file, its path, its name or an id; its text
with --text; and `source_path` in the result JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from infra.cli.main import app

FAST = {"DOCLAKE_EVENT_FLUSH_S": "0.02", "DOCLAKE_POLL_INTERVAL_S": "0.2",
        "DOCLAKE_CPU_WORKERS": "1", "COLUMNS": "80"}


def invoke(*args: str):
    return CliRunner().invoke(app, list(args), env=FAST, catch_exceptions=False)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    from support.pdfgen import make_pdf

    docs = tmp_path_factory.mktemp("show") / "docs"
    (docs / "a").mkdir(parents=True)
    (docs / "b").mkdir()
    make_pdf(docs / "a" / "NDA.pdf", ["alpha first page", "alpha second page"])
    make_pdf(docs / "b" / "NDA.pdf", ["beta only page"])
    (docs / "broken.pdf").write_bytes(b"%PDF-1.7 not a pdf")
    home = str(docs.parent / "home")
    assert invoke("run", str(docs), "--home", home).exit_code == 0
    return docs, home


def _show(home: str, wanted: str) -> dict:
    result = invoke("show", wanted, "--home", home, "--format", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_a_document_is_found_by_path_file_and_ids_alike(run):
    docs, home = run
    by_path = _show(home, "a/NDA.pdf")
    assert (by_path["file"], by_path["status"], by_path["pages"]) == ("a/NDA.pdf", "succeeded", 2)
    assert _show(home, str(docs / "a" / "NDA.pdf")) == by_path  # the bytes on disk
    assert _show(home, by_path["document_id"]) == by_path
    assert _show(home, by_path["job_id"]) == by_path
    assert _show(home, "b/NDA.pdf")["document_id"] != by_path["document_id"]


def test_where_the_text_and_result_are_and_the_text_itself(run):
    _, home = run
    shown = _show(home, "a/NDA.pdf")
    pages = sorted(Path(shown["text"]).glob("*.md"))
    assert len(pages) == shown["text_files"] == 2
    result = json.loads(Path(shown["result"]).read_text(encoding="utf-8"))
    assert result["source_path"] == "a/NDA.pdf" and result["document_id"] == shown["document_id"]
    text = invoke("show", "a/NDA.pdf", "--home", home, "--text").output
    assert text.index("alpha first page") < text.index("alpha second page")
    assert "beta" not in text
    table = invoke("show", "a/NDA.pdf", "--home", home, "--format", "table").output
    assert all(len(line) <= 80 for line in table.splitlines())
    assert "succeeded" in table and "a/NDA.pdf" in table and "record 1" not in table


def test_a_name_two_files_share_is_refused_naming_both_and_a_failure_says_why(run):
    _, home = run
    result = invoke("show", "NDA.pdf", "--home", home)
    assert result.exit_code == 2
    assert "2 documents match" in result.output
    assert "a/NDA.pdf" in result.output and "b/NDA.pdf" in result.output
    broken = _show(home, "broken.pdf")
    assert broken["status"] == "failed" and broken["failure_reason"]
    assert broken["text_files"] == 0
    # Why, in words: the parser's message from the lake and what to do about the reason (the
    # words a user reads, held here: the generic "see the messages" hint must not do).
    assert broken["failure_message"] and len(broken["failure_message"]) > 10
    assert (broken["failure_reason"], broken["hint"]) == (
        "corrupt", "the file is damaged or truncated; re-export or re-download it, then run it "
                   "again")
    assert "failure_message" not in _show(home, "a/NDA.pdf")
    missing = invoke("show", "nothing.pdf", "--home", home)
    assert missing.exit_code == 2 and "no document 'nothing.pdf'" in missing.output
