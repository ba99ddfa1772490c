"""A quality team's four weeks, played on a lake: traffic and labels each week, a new client's
documents arriving in the fourth and failing. The Monday report shows a four-point trend, a
breakdown that points at the new folder, a traffic-weighted estimate computed by hand, a gate
that passes the good weeks and fails the regression, the eval run it quotes in eval_runs, and
one kept file per week."""

from __future__ import annotations

import csv
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from test_fields_cli import invoke, sql

from evals.lakeio import write_events
from evals.weekly import weekly_f1, weekly_report
from evals.weeks import Week
from lake import events as ev

MONDAYS = [datetime(2026, 4, 6, tzinfo=UTC) + timedelta(weeks=k) for k in range(4)]
WEEKS = ["2026-W15", "2026-W16", "2026-W17", "2026-W18"]
GOLD = {"party": ["Acme", "Beta"], "term": ["2 years"]}
CONFIDENCE = {"party": lambda value: 0.9 if value in GOLD["party"] else 0.2,  # ranks errors
              "term": lambda value: 0.5}  # the same for right and wrong: ranks nothing


def _document(n: int, monday: datetime, kind: str, folder: str, right: bool) -> tuple[list, dict]:
    """One document of the week's traffic (a pdf of 3 pages or an xlsx of 10 sheets) and its
    rules result: all three tokens right, or for an xlsx one party wrong, or all wrong."""
    doc, job = f"0196a0b0-0000-7000-8000-{n:012d}", f"0196a0b0-0000-7000-9000-{n:012d}"
    sha = f"{n:064x}"
    at = monday + timedelta(days=1, minutes=n)
    fmt, pages = ("pdf", 3) if kind == "pdf" else ("xlsx", 10)
    values = ({"party": ["Acme", "Beta"], "term": ["2 years"]} if kind == "pdf" else
              {"party": ["Acme", "Gamma"], "term": ["2 years"]}) if right else {
        "party": ["Zeta", "Eta"], "term": ["9 years"]}
    events = [ev.DocumentRegistered(document_id=doc, job_id=job, source_name=f"{n}.{fmt}",
                                    source_path=f"{folder}/{n}.{fmt}", sha256=sha, bytes=100,
                                    occurred_at=at),
              ev.FormatDetected(document_id=doc, job_id=job, detected_format=fmt, occurred_at=at),
              ev.JobCreated(document_id=doc, job_id=job, occurred_at=at),
              ev.JobSplit(document_id=doc, job_id=job, pages=pages, units=1, occurred_at=at),
              ev.JobSucceeded(document_id=doc, job_id=job, occurred_at=at + timedelta(seconds=20)),
              ev.ResultPublished(document_id=doc, job_id=job, status="succeeded",
                                 strategy="rules", model_version="v1", schema_name="nda",
                                 occurred_at=at + timedelta(seconds=30))]
    events += [ev.ResultFieldExtracted(document_id=doc, job_id=job, field=name, value=value,
                                       value_index=i, strategy="rules", model_version="v1",
                                       confidence=CONFIDENCE[name](value),
                                       occurred_at=at + timedelta(seconds=30))
               for name, items in values.items() for i, value in enumerate(items)]
    label = {"sha256": sha, "labeller": "ann", "provenance": "blind", "fields": GOLD,
             "labelled_at": (monday + timedelta(days=3)).isoformat()}
    return events, label


def _four_weeks(home: Path) -> None:
    """Each week 16 pdfs and 4 xlsx ingested; 4 of each labelled (the sample over-represents
    the xlsx). In the fourth week the 16 pdfs come from a new client's folder and all fail."""
    events, labels, n = [], [], 0
    for week, monday in enumerate(MONDAYS):
        for k in range(20):
            kind = "pdf" if k < 16 else "xlsx"
            regression = week == 3 and kind == "pdf"
            folder = "new-client" if regression else "contracts"
            made, label = _document(n, monday, kind, folder, right=not regression)
            events += made
            if k < 4 or k >= 16:
                labels.append(json.dumps(label))
            n += 1
    write_events(str(home / "lake"), events)
    (home / "labels.jsonl").write_text("\n".join(labels) + "\n")
    result = invoke("evals", "import-labels", str(home / "labels.jsonl"), "--file-format", "jsonl",
                    "--home", str(home))
    assert result.exit_code == 0, result.output


def test_the_weighted_estimate_by_hand(tmp_path: Path):
    """Week 1: a pdf label scores 3 of 3 tokens (hits 3, predicted + expected 6), an xlsx
    label 2 of 3 (hits 2, 6). Unweighted over 4 + 4 labels: 2*20/48. Weighted, a pdf stands
    for 16/4 = 4 documents of traffic and an xlsx for 4/4 = 1: 2*(4*12 + 8) / (4*24 + 24)."""
    home = tmp_path / "home"
    _four_weeks(home)
    report = weekly_report(str(home / "lake"), Week.parse(WEEKS[0]), weeks=1, resamples=200)
    (group,) = report.run.groups
    assert group.overall.score.f1 == pytest.approx(40 / 48)
    weighted = report.weighted[("v1", "rules")]
    assert weighted.f1 == pytest.approx(112 / 120)
    assert (weighted.traffic, weighted.labelled, weighted.covered_share) == (20, 8, 1.0)
    low, high = weighted.f1_ci
    assert low < 112 / 120 < high


def test_a_quality_teams_four_weeks(tmp_path: Path):
    home = tmp_path / "home"
    _four_weeks(home)
    out = tmp_path / "reports" / "weekly"
    good = invoke("evals", "report", "--home", str(home), "--out", str(out), "--week", WEEKS[2],
                  "--weeks", "4", "--fail-under", "50")
    assert good.exit_code == 0, good.output
    bad = invoke("evals", "report", "--home", str(home), "--out", str(out), "--week", WEEKS[3],
                 "--weeks", "4", "--fail-under", "50")
    assert bad.exit_code == 1, bad.output
    assert "FAIL: rules v1" in bad.output

    # one kept report per week
    assert sorted(p.name for p in out.parent.iterdir()) == [
        f"weekly-{w}.{x}" for w in WEEKS[2:] for x in ("html", "md")]
    markdown = (out.parent / f"weekly-{WEEKS[3]}.md").read_text()
    assert "label date" in markdown and "labels by provenance: blind 8 " in markdown
    trend = [line for line in markdown.splitlines() if line.startswith("| 2026-W")]
    assert [line.split(" | ")[0] for line in trend] == [f"| {w}" for w in WEEKS]
    # the breakdown points at the new client's folder
    assert "| folder | new-client | v1 | rules | 4 | 0.00 |" in markdown
    assert "| format | xlsx | v1 | rules | 4 | 66.67 |" in markdown
    assert "## Gate" in markdown and "FAIL: rules v1" in markdown
    # confidence per field: the week's party values (Acme right at 0.9 in the 4 xlsx; Gamma,
    # and the new client's Zeta and Eta, wrong at 0.2) rank perfectly; every term is at 0.5
    assert "| v1 | rules | party | 4 | 12 | 0.175 | 1.000 |" in markdown  # ECE (4*.1+12*.2)/16
    assert "| v1 | rules | term | 4 | 4 | 0.000 | 0.500 |" in markdown  # bin 0.4-0.6: 4 of 8 at 0.5
    assert "| v1 | rules | party | 0.8-1.0 | 4 | 0.900 | 1.000 |" in markdown
    assert "| v1 | rules | party | 0.2-0.4 | 12 | 0.200 | 0.000 |" in markdown
    # strict beside lenient: party 4 hits of 16 and 16 (F1 25.00), none of the misses spelling
    assert "| v1 | rules | party | 25.00 | 25.00 | 0 | 12 | case, punctuation" in markdown
    html = (out.parent / f"weekly-{WEEKS[3]}.html").read_text()
    assert "<svg" in html and html.index("<svg") > html.index("Trend")
    assert "<h3>Reliability</h3>" in html and "<h2>Confidence by field</h2>" in html

    # the eval run the report quotes is in eval_runs, with its week
    quoted = markdown.split("eval run ", 1)[1].split(" ", 1)[0]
    runs = sql(str(home), "SELECT eval_run_id, week_by, strftime(week_start, '%Y-%m-%d') AS week "
               "FROM eval_runs ORDER BY week_start")
    assert {"eval_run_id": quoted, "week_by": "label", "week": "2026-04-27"} in runs
    assert len(runs) == 2
    weekly = sql(str(home), "SELECT strftime(week_start, '%Y-%m-%d') AS week, f1, f1_low, "
                 "f1_high, weighted_f1, documents FROM weekly_f1 ORDER BY week_start")
    assert [w["week"] for w in weekly] == ["2026-04-20", "2026-04-27"]
    assert weekly[0]["f1"] == pytest.approx(40 / 48)
    assert weekly[0]["weighted_f1"] == pytest.approx(112 / 120)
    assert weekly[1]["f1_low"] < 0.5 <= weekly[0]["f1_low"]
    assert weekly[1]["f1"] == pytest.approx(2 * 8 / 48)  # only the xlsx right: 8 hits of 24+24

    points = weekly_f1(str(home / "lake"), datetime(2026, 5, 4, 7, tzinfo=UTC), weeks=4,
                       resamples=200)
    assert [p["week"] for p in points] == WEEKS
    assert all(p["f1_low"] <= p["f1"] <= p["f1_high"] for p in points)

    # the review sheet: party by confidence (the least confident first), term at random
    sheet = tmp_path / "review.csv"
    review = invoke("evals", "sample", "--home", str(home), "--strategy", "review",
                    "--out", str(sheet), "--n", "3")
    assert review.exit_code == 0, review.output
    assert "party: lowest confidence first (AUROC 1.000" in review.output
    assert "term: random (AUROC 0.500" in review.output
    with sheet.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    chosen = {(r["document_id"], r["field"]) for r in rows}
    party = [r for r in rows if r["field"] == "party"]
    assert len({d for d, f in chosen if f == "party"}) == 3
    assert len({d for d, f in chosen if f == "term"}) == 3
    # unlabelled documents with a party at 0.2 (the new client's) come before any at 0.9 only
    assert {r["value"] for r in party} == {"Zeta", "Eta"}
    assert all(r["selected_by"].startswith("lowest confidence") for r in party)


def test_the_week_by_document_date_is_not_moved_by_a_labelling_lag(tmp_path: Path):
    """Week 1's documents labelled ten days later count in week 2 by label date and in week 1
    by document date."""
    home = tmp_path / "home"
    events, labels = [], []
    for n in range(3):
        made, label = _document(n, MONDAYS[0], "pdf", "contracts", right=True)
        events += made
        labels.append(json.dumps({**label, "labelled_at": (MONDAYS[1] + timedelta(days=3))
                                  .isoformat()}))
    write_events(str(home / "lake"), events)
    (home / "l.jsonl").write_text("\n".join(labels) + "\n")
    assert invoke("evals", "import-labels", str(home / "l.jsonl"), "--file-format", "jsonl",
                  "--home", str(home)).exit_code == 0
    lake = str(home / "lake")
    by_label = {w: weekly_report(lake, Week.parse(w), weeks=1, resamples=0).run.labels
                for w in WEEKS[:2]}
    by_document = {w: weekly_report(lake, Week.parse(w), weeks=1, week_by="document",
                                    resamples=0).run.labels for w in WEEKS[:2]}
    assert by_label == {WEEKS[0]: 0, WEEKS[1]: 3}
    assert by_document == {WEEKS[0]: 3, WEEKS[1]: 0}
    quiet = invoke("evals", "report", "--home", str(home), "--out", str(tmp_path / "r"),
                   "--week", WEEKS[0], "--fail-under", "10")
    assert quiet.exit_code == 1 and "nothing was scored" in quiet.output
