"""The issue's scenario through the real CLI, on ten Kleister NDAs: labels are bound to the
document version they were written for.

Run 10 documents, import their labels, give one file another NDA's bytes under the same name,
run again: `evals score` scores 9 documents and reports 1 stale label (and lists it with
--format json), and `export-finetune` leaves the stale label out: no example pairs the new text
with the old answer, and none teaches a version that is no longer the document.
The documents are in the shipped rules model's training set, so the score also warns that the
figure is in-sample (finding 8)."""

from __future__ import annotations

import json
import lzma
import shutil

import pytest
from conftest import SHARED
from test_fields_cli import FAST
from typer.testing import CliRunner

from infra.cli.main import app

SPLIT = SHARED / "data" / "kleister-nda" / "train"
pytestmark = pytest.mark.skipif(not (SPLIT / "expected.tsv").exists(),
                                reason=f"Kleister NDA train split not found at {SPLIT}")
runner = CliRunner()


def doclake(*args: str, code: int = 0) -> str:
    result = runner.invoke(app, list(args), env=FAST, catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result.stdout


def _split_rows() -> list[tuple[str, str]]:
    with lzma.open(SPLIT / "in.tsv.xz", "rt", encoding="utf-8") as rows:
        names = [row.split("\t", 1)[0] for row in rows if row.strip()]
    gold = (SPLIT / "expected.tsv").read_text(encoding="utf-8").splitlines()
    return list(zip(names, gold, strict=True))


def test_a_label_meets_only_the_version_it_was_written_for(tmp_path):
    rows = _split_rows()[:11]
    docs, labels, home = tmp_path / "docs", tmp_path / "labels", str(tmp_path / "home")
    docs.mkdir()
    labels.mkdir()
    for name, _ in rows[:10]:
        shutil.copy(SPLIT / "documents" / name, docs / name)
    (labels / "in.tsv").write_text("".join(f"{name}\tparty\ttext\n" for name, _ in rows[:10]))
    (labels / "expected.tsv").write_text("".join(f"{gold}\n" for _, gold in rows[:10]))

    doclake("run", str(docs), "--home", home, "--fields", "nda")
    doclake("evals", "import-labels", str(labels / "expected.tsv"), "--file-format", "kleister",
            "--home", home, "--labeller", "kleister")
    before = json.loads(doclake("evals", "score", "--home", home, "--format", "json",
                                "--dry-run"))
    assert (before["scored_documents"], before["stale_labels"]) == (10, 0)

    changed = rows[0][0]
    shutil.copy(SPLIT / "documents" / rows[10][0], docs / changed)  # another NDA, same name
    doclake("run", str(docs), "--home", home, "--fields", "nda")

    scored = json.loads(doclake("evals", "score", "--home", home, "--format", "json"))
    assert scored["scored_documents"] == 9
    assert scored["stale_labels"] == 1
    (stale,) = scored["stale"]
    versions = json.loads(doclake("sql", "SELECT document_id, source_name, sha256, version FROM "
                                  "ev_document_registered ORDER BY version", "--home", home,
                                  "--format", "json"))
    ours = [v for v in versions if v["source_name"] == changed]
    assert [v["version"] for v in ours] == [1, 2]
    assert stale["document_id"] == ours[0]["document_id"]
    assert stale["labelled_for_sha256"] == ours[0]["sha256"] != ours[1]["sha256"]
    # finding 8: the rules model was fitted on these very documents
    assert any("training set" in w and "in-sample" in w for w in scored["warnings"])

    out = tmp_path / "set.jsonl"
    doclake("evals", "export-finetune", "--out", str(out), "--file-format", "openai",
            "--validation-percent", "0", "--test-percent", "0", "--home", home)
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    from infra.evals_wiring import page_reader
    from infra.local.objectstore import FolderObjectStore

    jobs = json.loads(doclake("sql", f"SELECT job_id FROM ev_document_registered WHERE "
                              f"document_id = '{stale['document_id']}' ORDER BY version",
                              "--home", home, "--format", "json"))
    read = page_reader(FolderObjectStore(tmp_path / "home" / "objects"))
    old_pages = read(stale["document_id"], jobs[0]["job_id"])
    new_pages = read(stale["document_id"], jobs[1]["job_id"])
    assert old_pages and new_pages
    new_snippet, old_snippet = new_pages[0][1].strip()[:300], old_pages[0][1].strip()[:300]
    assert new_snippet != old_snippet
    users = [line["messages"][1]["content"] for line in lines]
    assert not any(new_snippet in text for text in users)  # the new text is never paired
    assert not any(old_snippet in text for text in users)  # stale: kept out of the export
    counts = json.loads((tmp_path / "set.manifest.json").read_text())["counts"]
    left_out = counts["skipped_no_evidence"] + counts["skipped_value_without_span"]
    assert len(lines) == counts["train"] == 9 - left_out
    assert left_out <= 2  # a value no page states: no quote, no spelling to teach
