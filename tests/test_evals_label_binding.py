"""Labels bind to the bytes labelled: a sheet's sha256 decides the version, a sha256 that is not
a version of the row's document is refused with its line, a label of an older version is stale
(reported, kept out of the score), and every label says how it was made (provenance)."""

from __future__ import annotations

import csv
import json
import lzma
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from conftest import SHARED
from test_fields_cli import invoke, sql

from evals.label_import import import_labels
from evals.lakeio import read_labels, write_events
from evals.score_run import score_lake
from lake import events as ev

T0 = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)
DOC, OTHER = "0196a0b0-0000-7000-8000-000000000001", "0196a0b0-0000-7000-8000-000000000002"
V1, V2, ELSE = "a1" * 32, "b2" * 32, "c3" * 32


def _two_versions(lake: str) -> None:
    """DOC has versions V1 then V2 (each with a result); OTHER has one version, ELSE."""
    events = []
    for doc, sha, job, version, minutes in ((DOC, V1, "0196a0b0-0000-7000-9000-000000000001", 1, 0),
                                            (DOC, V2, "0196a0b0-0000-7000-9000-000000000002", 2, 30),
                                            (OTHER, ELSE, "0196a0b0-0000-7000-9000-000000000003", 1,
                                             0)):
        at = T0 + timedelta(minutes=minutes)
        events += [ev.DocumentRegistered(document_id=doc, job_id=job, source_name="n.pdf",
                                         sha256=sha, bytes=1, version=version, occurred_at=at),
                   ev.JobCreated(document_id=doc, job_id=job, occurred_at=at),
                   ev.JobSucceeded(document_id=doc, job_id=job, occurred_at=at),
                   ev.ResultPublished(document_id=doc, job_id=job, status="succeeded",
                                      strategy="rules", model_version="v", schema_name="nda",
                                      occurred_at=at),
                   ev.ResultFieldExtracted(document_id=doc, job_id=job, field="term",
                                           value="2 years" if sha != V2 else "4 years",
                                           strategy="rules", model_version="v", occurred_at=at)]
    write_events(lake, events)


def test_the_sheets_sha256_decides_the_version_and_a_wrong_one_is_refused(tmp_path: Path):
    lake = str(tmp_path / "lake")
    _two_versions(lake)
    sheet = tmp_path / "sheet.csv"
    sheet.write_text("document_id,sha256,field,value,provenance\n"
                     f"{DOC},{V1},term,2 years,blind\n"          # the old version: stale
                     f"{OTHER},{V1},term,2 years,blind\n"        # DOC's bytes under OTHER's id
                     f"{OTHER},{ELSE},term,2 years,pre-filled\n")
    report = import_labels(lake, sheet, "csv", labeller="ann", now=T0 + timedelta(hours=1))
    assert report.imported == 2
    assert report.refused == [("sheet.csv:3", V1, f"sha256 {V1[:12]}... is not a version of "
                               f"document {OTHER}")]
    assert report.stale == [("sheet.csv:2", DOC)]
    labels = {x.document_id: x for x in read_labels(lake)}
    assert labels[DOC].sha256 == V1  # bound to the bytes labelled, not to the latest version
    assert (labels[DOC].provenance, labels[OTHER].provenance) == ("blind", "pre-filled")
    run = score_lake(lake, since=None, until=None, resamples=0)
    assert [x.document_id for x in run.stale] == [DOC]
    assert {s.label.document_id for s in run.scored} == {OTHER}


def test_a_label_of_the_old_version_does_not_supersede_one_of_the_new(tmp_path: Path):
    lake = str(tmp_path / "lake")
    _two_versions(lake)
    new = tmp_path / "new.csv"
    new.write_text(f"sha256,field,value,labelled_at\n{V2},term,4 years,2026-05-04T12:00:00Z\n")
    import_labels(lake, new, "csv", labeller="ann", now=T0 + timedelta(hours=3))
    late = tmp_path / "late.csv"  # an old sheet coming back later still
    late.write_text(f"sha256,field,value,labelled_at\n{V1},term,2 years,2026-05-04T13:00:00Z\n")
    import_labels(lake, late, "csv", labeller="bob", now=T0 + timedelta(hours=4))
    run = score_lake(lake, since=None, until=None, resamples=0)
    (scored,) = [s for s in run.scored if s.label.document_id == DOC]
    assert scored.label.sha256 == V2 and scored.overall.f1 == 1.0
    assert [x.sha256 for x in run.stale] == [V1]


def test_a_bad_provenance_is_refused_with_its_line(tmp_path: Path):
    from evals.labels import LabelError, parse_csv

    sheet = tmp_path / "s.csv"
    sheet.write_text(f"sha256,field,value,provenance\n{V1},term,,blind\n{V1},party,,guessed\n")
    with pytest.raises(LabelError, match="s.csv:3: provenance 'guessed'"):
        parse_csv(sheet)


# --- the review's case, through the CLI on Kleister NDAs ------------------------------------------

SPLIT = SHARED / "data" / "kleister-nda" / "train"


def _split_rows() -> list[tuple[str, str]]:
    with lzma.open(SPLIT / "in.tsv.xz", "rt", encoding="utf-8") as rows:
        names = [row.split("\t", 1)[0] for row in rows if row.strip()]
    gold = (SPLIT / "expected.tsv").read_text(encoding="utf-8").splitlines()
    return list(zip(names, gold, strict=True))


def _ok(*args: str) -> str:
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.skipif(not (SPLIT / "expected.tsv").exists(), reason=f"no Kleister split at {SPLIT}")
def test_reingest_while_labelling_leaves_the_label_stale_and_f1_unchanged(tmp_path: Path):
    """Two documents labelled and scored; a blind sheet drawn for a third; the third is
    re-ingested with other bytes while the labeller works; the sheet is imported: its label is
    stale, reported at import and by score, and the F1 is what it was."""
    rows = _split_rows()[:4]
    docs, gold, home = tmp_path / "docs", tmp_path / "gold", str(tmp_path / "home")
    docs.mkdir()
    gold.mkdir()
    for name, _ in rows[:3]:
        shutil.copy(SPLIT / "documents" / name, docs / name)
    (gold / "in.tsv").write_text("".join(f"{name}\tparty\ttext\n" for name, _ in rows[:2]))
    (gold / "expected.tsv").write_text("".join(f"{line}\n" for _, line in rows[:2]))
    _ok("run", str(docs), "--home", home, "--fields", "nda")
    _ok("evals", "import-labels", str(gold / "expected.tsv"), "--file-format", "kleister", "--home",
        home)
    before = json.loads(_ok("evals", "score", "--home", home, "--format", "json", "--dry-run"))
    assert (before["scored_documents"], before["stale_labels"]) == (2, 0)

    sheet = tmp_path / "sheet.csv"
    _ok("evals", "sample", "--out", str(sheet), "--home", home)  # blind by default
    with sheet.open(newline="") as handle:
        drawn = list(csv.DictReader(handle))
    third = rows[2][0]
    assert {r["source_name"] for r in drawn} == {third}
    assert {r["provenance"] for r in drawn} == {"blind"} and not any(r["value"] for r in drawn)
    (document_id,) = {r["document_id"] for r in drawn}
    # the labeller reads version 1 and agrees with what was extracted from it
    seen = sql(home, "SELECT field, value FROM result_fields WHERE document_id = "
               f"'{document_id}' ORDER BY field, value_index")
    assert seen
    with sheet.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(drawn[0]))
        writer.writeheader()
        for value in seen:
            writer.writerow({**drawn[0], "field": value["field"], "value": value["value"]})

    shutil.copy(SPLIT / "documents" / rows[3][0], docs / third)  # re-ingested, other bytes
    _ok("run", str(docs), "--home", home, "--fields", "nda")
    now = sql(home, f"SELECT field, value FROM results AS r JOIN result_fields AS f USING "
              f"(job_id) WHERE r.document_id = '{document_id}' ORDER BY field, value_index")
    assert now != seen  # bound to the new version, the label would be scored wrong

    imported = invoke("evals", "import-labels", str(sheet), "--home", home, "--format",
                      "json")
    assert imported.exit_code == 0, imported.output
    report = json.loads(imported.stdout)
    assert (report["imported"], report["stale"], report["provenance"]) == (1, 1, {"blind": 1})
    assert report["stale_examples"][0]["document_id"] == document_id

    after = json.loads(_ok("evals", "score", "--home", home, "--format", "json", "--dry-run"))
    assert (after["scored_documents"], after["stale_labels"]) == (2, 1)
    assert after["stale"][0]["document_id"] == document_id
    assert after["overall"]["f1"] == before["overall"]["f1"]
    assert sql(home, "SELECT provenance FROM labels ORDER BY provenance") == [
        {"provenance": "blind"}, {"provenance": "imported"}, {"provenance": "imported"}]


def test_score_without_labels_says_how_to_import_them(tmp_path: Path):
    home = tmp_path / "home"
    _two_versions(str(home / "lake"))
    plain = invoke("evals", "score", "--home", str(home))
    assert plain.exit_code == 2
    assert "no labels" in plain.output and "doclake evals import-labels" in plain.output
    gated = invoke("evals", "score", "--home", str(home), "--fail-under", "80")
    assert gated.exit_code == 1 and "FAIL: no labels" in gated.output
    assert sql(str(home), "SELECT count(*) AS n FROM eval_runs") == [{"n": 0}]


def test_a_document_whose_label_is_stale_is_drawn_again(tmp_path: Path):
    from evals.sample import sample_candidates

    lake = str(tmp_path / "lake")
    _two_versions(lake)
    sheet = tmp_path / "s.csv"
    sheet.write_text(f"sha256,field,value\n{V1},term,2 years\n{ELSE},term,2 years\n")
    import_labels(lake, sheet, "csv", labeller="ann", now=T0 + timedelta(hours=1))
    assert [c["document_id"] for c in sample_candidates(lake)] == [DOC]
    (drawn,) = sample_candidates(lake)
    assert drawn["sha256"] == V2  # the version whose result the sheet shows
