"""Every label accounted for, in a home as a team has it: NDAs beside files that fail (a broken
PDF, a broken Word file) and a sheet the NDA schema does not apply to. The sampler draws no
failed document; a label of one is listed as not scored with its reason; a not-applicable
document labelled empty is a correct negative, not a failed extraction; the weighted estimate
counts every document processed that week, the failed ones in a stratum of their own."""

from __future__ import annotations

import csv
import json
from datetime import UTC, datetime
from pathlib import Path

from support.pdfgen import make_pdf
from test_fields_cli import NDA, invoke, sql

from evals.sample import draw


def _home(tmp_path: Path) -> str:
    docs, home = tmp_path / "docs", str(tmp_path / "home")
    docs.mkdir()
    make_pdf(docs / "a.pdf", NDA)
    make_pdf(docs / "b.pdf", [*NDA, "Signed."])
    make_pdf(docs / "c.pdf", [*NDA, "Signed twice."])
    (docs / "broken.pdf").write_bytes(b"%PDF-1.7 not really")
    (docs / "broken.docx").write_bytes(b"PK\x03\x04 not a zip archive at all")
    (docs / "prices.csv").write_text("item,price\nbolt,3\nnut,1\n")
    result = invoke("run", str(docs), "--home", home, "--fields", "nda")
    assert result.exit_code == 0, result.output
    statuses = {r["source_name"]: r["status"] for r in sql(
        home, "SELECT d.source_name, r.status FROM results r JOIN documents d USING "
        "(document_id)")}
    assert statuses == {"a.pdf": "succeeded", "b.pdf": "succeeded", "c.pdf": "succeeded",
                        "broken.pdf": "failed", "broken.docx": "failed",
                        "prices.csv": "not_applicable"}, statuses
    return home


def _drawn(path: Path) -> set[str]:
    with path.open(newline="", encoding="utf-8") as handle:
        return {row["source_name"] for row in csv.DictReader(handle)}


def test_failed_documents_are_never_drawn_and_their_labels_are_listed_with_why(tmp_path):
    home = _home(tmp_path)
    sheet = tmp_path / "sheet.csv"
    drawn = invoke("evals", "sample", "--home", home, "--out", str(sheet), "--n", "20")
    assert drawn.exit_code == 0, drawn.output
    assert _drawn(sheet) == {"a.pdf", "b.pdf", "c.pdf", "prices.csv"}
    assert "applies, pdf: 3 of 3" in drawn.output and "not applicable, csv: 1 of 1" in drawn.output
    everything = tmp_path / "all.csv"
    invoke("evals", "sample", "--home", home, "--out", str(everything), "--n", "20",
           "--include-unscorable")
    assert _drawn(everything) == {"a.pdf", "b.pdf", "c.pdf", "prices.csv", "broken.pdf",
                                  "broken.docx"}

    # the team labels every file anyway: the NDAs' answers, nothing in the rest
    labels = tmp_path / "labels.csv"
    rows = [("source_name", "field", "value")]
    for name in ("a.pdf", "b.pdf", "c.pdf"):
        rows += [(name, "jurisdiction", "New York"), (name, "term", "2 years"),
                 (name, "effective_date", "2015-03-03"), (name, "party", "")]
    rows += [(name, field, "") for name in ("broken.pdf", "broken.docx", "prices.csv")
             for field in ("jurisdiction", "term", "effective_date", "party")]
    with labels.open("w", newline="") as handle:
        csv.writer(handle).writerows(rows)
    imported = invoke("evals", "import-labels", str(labels), "--home", home,
                      "--labelled-at", datetime.now(UTC).isoformat())
    assert imported.exit_code == 0, imported.output

    scored = invoke("evals", "score", "--home", home, "--format", "json", "--dry-run")
    run = json.loads(scored.stdout)
    ids = {r["document_id"]: r["source_name"] for r in sql(
        home, "SELECT document_id, source_name FROM documents")}
    not_scored = {(ids[u["document_id"]], u["reason"]) for u in run["not_scored"]}
    assert not_scored == {("broken.pdf", "failed"), ("broken.docx", "failed"),
                          ("prices.csv", "correct_negative")}
    (cover,) = run["coverage"].values()
    assert (cover["labelled_documents_with_result"], cover["scored"],
            cover["not_scored_failed"], cover["correct_negatives"],
            cover["scored_failed_extractions"]) == (6, 4, 2, 1, 0)
    (group,) = run["groups"]
    assert (group["documents"], group["documents_with_values"]) == (4, 3)
    assert "3 documents with values to score (of 4 scored)" in " ".join(run["warnings"])

    table = invoke("evals", "score", "--home", home, "--dry-run")
    assert "not scored: " in table.output and "(failed: job_failed, rules)" in table.output

    week = datetime.now(UTC).date().isoformat()
    out = tmp_path / "weekly"
    report = invoke("evals", "report", "--home", home, "--week", week, "--out", str(out),
                    "--resamples", "50")
    assert report.exit_code == 0, report.output
    markdown = next(tmp_path.glob("weekly-*.md")).read_text()
    listed = markdown.split("## Labels not scored")[1]
    for document_id, name in ids.items():
        reason = {"broken.pdf": "failed", "broken.docx": "failed",
                  "prices.csv": "correct_negative"}.get(name)
        assert (f"| {document_id} | {reason} |" in listed) == (reason is not None), name
    # all six documents processed this week are traffic: three NDAs, a sheet the schema does
    # not apply to and the two failures, which no label can estimate
    strata = [line for line in markdown.split("## Strata and weights")[1].split("\n## ")[0].splitlines()
              if line.startswith("| rules")]
    cells = {tuple(c.strip() for c in line.strip("|").split("|"))[2:6] for line in strata}
    assert cells == {("applies", "pdf", "3", "3"), ("not applicable", "csv", "1", "1"),
                     ("failed", "pdf", "1", "0"), ("failed", "zip", "1", "0")}, cells


def test_the_sample_goes_to_the_documents_the_figure_is_about():
    """20 pdf NDAs, 5 docx NDAs, 10 csv and 3 xlsx the schema does not apply to; n = 10: one per
    stratum (4), and the other 6 to the NDAs in proportion, 6*20/23 = 5.2 and 6*5/23 = 1.3
    (after the first of each: 19 and 4 left: 6*19/23 = 4.96 -> 4, 6*4/23 = 1.04 -> 1, the
    last to the larger remainder, pdf): pdf 6, docx 2, csv 1, xlsx 1."""
    rows = [{"document_id": f"p{i:02d}", "status": "succeeded", "detected_format": "pdf"}
            for i in range(20)]
    rows += [{"document_id": f"d{i}", "status": "succeeded", "detected_format": "docx"}
             for i in range(5)]
    rows += [{"document_id": f"c{i}", "status": "not_applicable", "detected_format": "csv"}
             for i in range(10)]
    rows += [{"document_id": f"x{i}", "status": "not_applicable", "detected_format": "xlsx"}
             for i in range(3)]
    picked, design = draw(rows, 10, seed=3)
    counts = {}
    for row in picked:
        counts[row["detected_format"]] = counts.get(row["detected_format"], 0) + 1
    assert counts == {"pdf": 6, "docx": 2, "csv": 1, "xlsx": 1}
    assert dict(((a, f), (n, k)) for (a, f), n, k in design.strata) == {
        ("applies", "pdf"): (20, 6), ("applies", "docx"): (5, 2),
        ("not applicable", "csv"): (10, 1), ("not applicable", "xlsx"): (3, 1)}
    assert draw(rows, 10, seed=3)[0] == picked  # reproducible
