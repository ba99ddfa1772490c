"""Labels and scores through the lake: versions that supersede, every import format, the run
written where SQL finds it, and the view shapes that keep dt pruning."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import sqlglot
from sqlglot import expressions as exp

from evals.label_import import import_labels
from evals.labels import LabelError
from evals.lakeio import read_labels, write_events
from evals.score_run import run_scoring
from lake import events as ev
from lake.athena import athena_views
from lake.catalog import query
from lake.views import EVAL_TABLES

NOW = datetime(2026, 5, 4, 12, 0, tzinfo=UTC)
DOC, SHA = "0196a0b0-0000-7000-8000-000000000001", "ab" * 32


@pytest.fixture
def lake(tmp_path: Path) -> str:
    root = str(tmp_path / "lake")
    job = "0196a0b0-0000-7000-8000-000000000002"
    write_events(root, [
        ev.DocumentRegistered(document_id=DOC, job_id=job, source_name="nda.pdf", sha256=SHA,
                              bytes=10, occurred_at=NOW - timedelta(hours=2)),
        ev.ResultPublished(document_id=DOC, job_id=job, status="succeeded", strategy="rules",
                           model_version="v1", schema_name="nda",
                           occurred_at=NOW - timedelta(hours=1)),
        *(ev.ResultFieldExtracted(document_id=DOC, job_id=job, field="party", value=v,
                                  value_index=i, strategy="rules", model_version="v1",
                                  page_number=2, occurred_at=NOW - timedelta(hours=1))
          for i, v in enumerate(["Acme Inc.", "Beta"]))])
    return root


def _csv(path: Path, rows: list[str]) -> Path:
    path.write_text("\n".join(["sha256,field,value,labelled_at", *rows]) + "\n")
    return path


def test_a_later_label_supersedes_and_the_earlier_stays(lake, tmp_path):
    first = _csv(tmp_path / "a.csv", [f"{SHA},party,Acme Inc.,2026-05-04T11:00:00Z",
                                      f"{SHA},party,Beta,2026-05-04T11:00:00Z"])
    report = import_labels(lake, first, "csv", labeller="ann", now=NOW)
    assert (report.imported, report.values) == (1, 2)
    second = tmp_path / "b.jsonl"
    second.write_text(json.dumps({"document_id": DOC, "labelled_at": "2026-05-04T11:30:00Z",
                                  "labeller": "bob", "fields": {"party": ["Acme Inc."],
                                                                 "term": None}}) + "\n")
    import_labels(lake, second, "jsonl", labeller="ann", now=NOW)
    (current,) = read_labels(lake)
    assert (current.labeller, dict(current.values)) == ("bob", {"party": ("Acme Inc.",),
                                                                "term": ()})
    rows = query(lake, "SELECT labeller, superseded FROM labels ORDER BY labelled_at").to_pylist()
    assert rows == [{"labeller": "ann", "superseded": True}, {"labeller": "bob",
                                                              "superseded": False}]
    run = run_scoring(lake, since=None, until=None, now=NOW, resamples=0)
    (group,) = run.groups
    # against bob's label: party 1 hit of 2 predicted, 1 expected; term 0/0/0
    assert (group.overall.score.hits, group.overall.score.predicted,
            group.overall.score.expected) == (1, 2, 1)


def test_importing_the_same_labels_twice_adds_no_version(lake, tmp_path):
    labels = tmp_path / "l.jsonl"
    labels.write_text(json.dumps({"sha256": SHA, "fields": {"party": ["Acme Inc."]}}) + "\n")
    import_labels(lake, labels, "jsonl", labeller="ann", now=NOW)
    again = import_labels(lake, labels, "jsonl", labeller="ann", now=NOW + timedelta(hours=1))
    assert (again.imported, again.unchanged) == (0, 1)
    assert query(lake, "SELECT count(*) AS n FROM labels").to_pylist() == [{"n": 1}]


def test_kleister_labels_match_by_source_name_when_the_file_is_not_there(lake, tmp_path):
    folder = tmp_path / "split"
    folder.mkdir()
    (folder / "in.tsv").write_text("nda.pdf\tparty term\ttext\nmissing.pdf\tparty\ttext\n")
    (folder / "expected.tsv").write_text("party=Acme_Inc. party=Gamma\nparty=X\n")
    report = import_labels(lake, folder / "expected.tsv", "kleister", labeller="k", now=NOW)
    assert (report.imported, [u[1] for u in report.unmatched]) == (1, ["missing.pdf"])
    (current,) = read_labels(lake)
    # every field the split names is covered, as the benchmark scores every predicted token
    assert dict(current.values) == {"party": ("Acme_Inc.", "Gamma"), "term": ()}
    assert current.value_format == "kleister"


def test_a_bad_label_file_names_its_line(tmp_path, lake):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"document_id": "x", "fields": {}}\nnot json\n')
    with pytest.raises(LabelError, match="bad.jsonl:2"):
        import_labels(lake, bad, "jsonl", labeller="ann", now=NOW)


def test_a_scoring_run_is_found_with_sql(lake, tmp_path):
    import_labels(lake, _csv(tmp_path / "a.csv", [f"{SHA},party,Acme Inc.,",
                                                   f"{SHA},term,2 years,"]),
                  "csv", labeller="ann", now=NOW)
    run = run_scoring(lake, since=NOW - timedelta(days=7), until=None, now=NOW, resamples=0)
    runs = query(lake, "SELECT eval_run_id, documents, f1 FROM eval_runs").to_pylist()
    assert runs == [{"eval_run_id": run.eval_run_id, "documents": 1,
                     "f1": pytest.approx(run.overall.score.f1)}]
    failures = query(lake, "SELECT field, outcome, expected, got, page_number FROM eval_outcomes "
                     "WHERE outcome <> 'hit' ORDER BY field").to_pylist()
    assert failures == [
        {"field": "party", "outcome": "spurious", "expected": None, "got": "Beta",
         "page_number": 2},
        {"field": "term", "outcome": "missed", "expected": "2 years", "got": None,
         "page_number": None}]
    scores = query(lake, "SELECT level, field, f1 FROM eval_scores WHERE field = 'overall' "
                   "ORDER BY level").to_pylist()
    assert [s["level"] for s in scores] == ["document", "group"]


@pytest.mark.parametrize("name", EVAL_TABLES)
def test_eval_views_keep_dt_where_a_filter_can_reach_the_partitions(name):
    tree = sqlglot.parse_one(athena_views()[name], read="trino")
    for window in tree.find_all(exp.Window):
        assert "dt" in [e.name for e in window.args.get("partition_by") or []], window.sql()
    for join in tree.find_all(exp.Join):
        pairs = [(eq.this.name, eq.expression.name) for eq in join.args["on"].find_all(exp.EQ)]
        assert ("dt", "dt") in pairs, join.sql("trino")


def test_the_weekly_report_scores_the_last_complete_week(lake, tmp_path):
    from evals.weekly import write_weekly_report

    import_labels(lake, _csv(tmp_path / "a.csv", [f"{SHA},party,Acme Inc.,2026-05-01T00:00:00Z"]),
                  "csv", labeller="ann", now=NOW)
    written = write_weekly_report(lake, str(tmp_path / "weekly"), NOW)  # a Monday: last week
    markdown = Path(written["md"]).read_text()
    assert markdown.startswith("# Field accuracy, week 2026-W18 (2026-04-27 to 2026-05-03)")
    # the label of 1 May (party: 1 hit of 2 predicted, 1 expected): F1 2/3, no interval with
    # one document; the week's traffic (the document was ingested on 4 May) is next week's,
    # so the weighted estimate and its coverage are blank: no traffic
    assert "| v1 | rules | 1 | 1 | 66.67 |  |  |  |  |  |" in markdown
    assert "| party | v1 | rules | 66.67 | 0 | 1 |" in markdown
    assert "<table>" in Path(written["html"]).read_text()
