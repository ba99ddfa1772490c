"""Column docs that cannot contradict the data: each enumerated column's documented values
(``infra.cli.render.column_values``, read from the code's enums) against ``SELECT DISTINCT``
over a lake that exercises them all, and each column described by its own table."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from support.lakegen import uuid7_at
from typer.testing import CliRunner

from infra.cli.main import app
from infra.cli.render.column_values import OPEN_NOTE, column_values
from lake import events as ev
from lake.writer import ParquetEventWriter

ROOT = Path(__file__).resolve().parents[1]
FAST = {"DOCLAKE_EVENT_FLUSH_S": "0.02", "DOCLAKE_POLL_INTERVAL_S": "0.2",
        "DOCLAKE_CPU_WORKERS": "1", "DOCLAKE_SIMULATED_LATENCY_SCALE": "0.05"}
PARTLY_EXERCISED = {("documents", "detected_format"), ("job_latency", "page_bucket")}
"""Columns whose every value is not in the test lake (a file of each of 21 formats; no document
of over 20 pages): the lake's values must still all be documented."""
DAY = datetime(2026, 5, 4, 10, tzinfo=UTC)


def _rare_events() -> list[ev.Event]:
    """What the pipeline writes only in rare conditions, as it writes it (the words are the
    pipeline's, written here by hand, not read from the enums under test)."""
    out: list[ev.Event] = []

    def ids(n: int) -> dict[str, str]:
        return {"document_id": uuid7_at(DAY, 100 + 2 * n), "job_id": uuid7_at(DAY, 101 + 2 * n)}

    def at(seconds: float) -> datetime:
        return DAY + timedelta(seconds=seconds)

    queued, extracting, office = ids(0), ids(1), ids(2)
    out += [ev.DocumentRegistered(**queued, source_name="waiting.pdf", sha256="ab" * 32, bytes=9,
                                  occurred_at=at(0)),
            ev.DocumentRegistered(**extracting, source_name="reading.pdf", sha256="cd" * 32,
                                  bytes=9, occurred_at=at(0)),
            ev.JobCreated(**queued, occurred_at=at(0)),
            ev.JobCreated(**extracting, occurred_at=at(0)),
            ev.JobExtracting(**extracting, occurred_at=at(1)),
            ev.UnitPlanned(**extracting, unit_id="u1", kind="pdf_pages", occurred_at=at(1)),
            ev.UnitPlanned(**extracting, unit_id="u2", kind="pdf_pages", occurred_at=at(1)),
            ev.UnitPlanned(**extracting, unit_id="u3", kind="pdf_pages", occurred_at=at(1)),
            ev.UnitStarted(**extracting, unit_id="u2", attempt=1, occurred_at=at(2)),
            ev.UnitStarted(**extracting, unit_id="u3", attempt=1, occurred_at=at(2)),
            ev.UnitFailed(**extracting, unit_id="u3", error_type="timeout", message="slow",
                          occurred_at=at(3)),
            ev.PageRead(**extracting, unit_id="u2", page_number=1, reader="ocr", chars=5),
            ev.PageRead(**extracting, unit_id="u2", page_number=2, reader="blank", chars=0),
            # a unit done, read by OCR: stage_timings' lane 'ocr'
            ev.UnitPlanned(**extracting, unit_id="u4", kind="pdf_pages", occurred_at=at(1)),
            ev.UnitStarted(**extracting, unit_id="u4", attempt=1, occurred_at=at(2)),
            ev.PageRead(**extracting, unit_id="u4", page_number=7, reader="ocr", chars=5),
            ev.UnitDone(**extracting, unit_id="u4", pages=1, pages_skipped=0, duration_ms=900,
                        occurred_at=at(4))]
    out += [ev.JobCreated(**office, occurred_at=at(0)),
            ev.FormatDetected(**office, detected_format="docx", occurred_at=at(1)),
            ev.JobSplit(**office, pages=1, units=1, conversion_ms=2000, occurred_at=at(5))]
    for n, stage in enumerate(("ingest", "dispatch", "read", "index", "fields", "convert",
                               "poller")):
        out.append(ev.FailureRecorded(**queued, stage=stage, error_type="timeout", message="x",
                                      final=False, attempt=n, occurred_at=at(n)))
    for n, outcome in enumerate(("error", "timeout", "blocked", "empty")):
        out.append(ev.ModelCalled(**extracting, call_id=f"rare-{n}", purpose="read_page",
                                  provider="gemini", model="gemini-2.5-flash", outcome=outcome,
                                  occurred_at=at(n)))
    for n, strategy in enumerate(("single-pass", "agentic")):
        doc = ids(3 + n)
        out += [ev.ResultPublished(**doc, status="failed", strategy=strategy,
                                   failure_reason="invalid_output", occurred_at=at(9)),
                ev.ResultFieldExtracted(**doc, field="term", value="2 years", strategy=strategy,
                                        occurred_at=at(9))]
    labelled = ids(5)
    for n, value_format in enumerate(("text", "kleister")):
        out += [ev.LabelRecorded(**labelled, label_id=f"label-{n}", labeller="ann",
                                 value_format=value_format, occurred_at=at(n)),
                ev.LabelValueRecorded(**labelled, label_id=f"label-{n}", field="term",
                                      value="2 years", occurred_at=at(n))]
    for level in ("group", "document", "weighted"):
        out.append(ev.EvalScoreComputed(eval_run_id="run", level=level, field="overall",
                                        precision=1, recall=1, f1=1, hits=1, predicted=1,
                                        expected=1, occurred_at=at(1), **(
                                            labelled if level == "document" else {})))
    for week_by in ("label", "document"):  # two weekly reports, one group each
        out += [ev.EvalRunCompleted(eval_run_id=f"week-{week_by}", week_by=week_by,
                                    week_start=datetime(2026, 4, 27, tzinfo=UTC),
                                    occurred_at=at(2)),
                ev.EvalScoreComputed(eval_run_id=f"week-{week_by}", level="group",
                                     field="overall", precision=1, recall=1, f1=1, hits=1,
                                     predicted=1, expected=1, occurred_at=at(2))]
    for n, outcome in enumerate(("hit", "wrong", "missed", "spurious")):
        out.append(ev.EvalOutcomeRecorded(**labelled, eval_run_id="run", label_id="label-0",
                                          field="term", outcome=outcome, outcome_index=n,
                                          occurred_at=at(1)))
    return out


def _invoke(*args: str):
    result = CliRunner().invoke(app, list(args), env=FAST, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> str:
    """Two real runs (text layer, OCR, a spreadsheet, a CSV, a text file, a broken PDF, an NDA
    and a document that is not one; then the simulated model) and the rare events."""
    from support.pdfgen import make_pdf

    folder = tmp_path_factory.mktemp("column-values")
    docs = folder / "docs"
    docs.mkdir()
    shutil.copy(sorted((ROOT / "examples").glob("*.pdf"))[0], docs / "nda.pdf")
    make_pdf(docs / "weather.pdf", ["weather report for tuesday", ""])
    (docs / "broken.pdf").write_bytes(b"%PDF-1.7 not a pdf at all")
    (docs / "table.csv").write_text("name,amount\nacme,3\n", encoding="utf-8")
    (docs / "notes.txt").write_text("a plain note about nothing\n", encoding="utf-8")
    import openpyxl

    book = openpyxl.Workbook()
    book.active.append(["name", "amount"])
    book.active.append(["acme", 3])
    book.save(docs / "book.xlsx")
    home = str(folder / "home")
    _invoke("run", str(docs), "--home", home)
    model_docs = folder / "model"
    model_docs.mkdir()
    make_pdf(model_docs / "scan.pdf", ["seen by a model"])
    _invoke("run", str(model_docs), "--home", home, "--reader", "simulated", "--fields", "none")
    ParquetEventWriter.for_uri(str(Path(home) / "lake")).write(_rare_events())
    return home


def _distinct(home: str, table: str, column: str) -> set[str]:
    rows = json.loads(_invoke("sql", f"SELECT DISTINCT {column} AS v FROM {table} "
                              f"WHERE {column} IS NOT NULL", "--home", home,
                              "--format", "json").output)
    return {r["v"] for r in rows}


def _models(home: str) -> set[str]:
    rows = json.loads(_invoke("sql", "SELECT DISTINCT provider, model FROM model_calls",
                              "--home", home, "--format", "json").output)
    return {r["model"] for r in rows} | {f"{r['provider']}:{r['model']}" for r in rows}


def mismatches(documented: dict[tuple[str, str], tuple[str, ...]],
               found: dict[tuple[str, str], set[str]]) -> list[str]:
    """What the docs and the lake disagree on: a value in the lake the docs do not list, or a
    documented value no row holds (for the columns the lake exercises fully)."""
    out = []
    for key, values in documented.items():
        extra = found[key] - set(values)
        if extra:
            out.append(f"{key}: the lake holds {sorted(extra)}, not documented")
        missing = set(values) - found[key]
        if missing and key not in PARTLY_EXERCISED:
            out.append(f"{key}: documented {sorted(missing)}, in no row")
    return out


@pytest.fixture(scope="module")
def found(home) -> dict[tuple[str, str], set[str]]:
    models = _models(home)
    values = {}
    for (table, column) in column_values():
        seen = _distinct(home, table, column)
        if (table, column) in OPEN_NOTE:  # a model's own name reads pages too
            seen -= models
        values[(table, column)] = seen
    return values


def test_every_documented_value_set_is_exactly_what_the_lake_holds(found):
    assert mismatches(column_values(), found) == []


def test_a_failed_jobs_page_bucket_is_unknown_and_documented(found, home):
    """A job that failed before it counted its pages (a corrupt file) is in the bucket
    ``unknown``, which the schema reference and the analysts' page both list."""
    failed = json.loads(_invoke("sql", "SELECT DISTINCT page_bucket FROM job_latency WHERE "
                                "status = 'failed' AND pages IS NULL", "--home", home,
                                "--format", "json").output)
    assert [row["page_bucket"] for row in failed] == ["unknown"]
    assert "unknown" in found[("job_latency", "page_bucket")]
    schema = _invoke("schema", "job_latency", "--format", "json").output
    said = next(c for c in json.loads(schema) if c["column"] == "page_bucket")
    assert "one of: 1-20, 21-50, 51-100, 101-300, over 300, unknown" in json.dumps(said)


def test_a_value_removed_from_an_enum_is_caught(found, monkeypatch):
    """Drop a word from the enums the docs are read from (the model call's outcomes, the
    stages): the documentation loses it, the lake still holds it, the comparison says so."""
    from enum import StrEnum

    import extract.models.base
    import lake.views
    from infra.cli.render import column_values as module

    fewer = StrEnum("Outcome", {m.name: m.value for m in extract.models.base.Outcome
                                if m.value != "timeout"})
    monkeypatch.setattr(extract.models.base, "Outcome", fewer)
    monkeypatch.setattr(lake.views, "STAGE_NAMES",
                        tuple(v for v in lake.views.STAGE_NAMES if v != "convert"))
    documented = module.column_values.__wrapped__()
    assert mismatches(documented, found) == [
        "('model_calls', 'outcome'): the lake holds ['timeout'], not documented",
        "('stage_timings', 'stage'): the lake holds ['convert'], not documented"]


def test_the_schema_reference_lists_each_columns_values_under_its_own_table():
    from infra.cli.render.schema_doc import tables

    docs = {(t.name, c.name): c for t in tables() for c in t.columns}
    for key, values in column_values().items():
        assert docs[key].values == values, key
        assert "one of: " + ", ".join(values) in docs[key].description, key
    # Described by its own table, not by the first field of that name anywhere.
    assert "timeout" not in docs[("eval_outcomes", "outcome")].description
    assert "job's status" not in docs[("results", "status")].description
    assert "failed" not in docs[("stage_timings", "stage")].description.split("one of:")[0]
    assert all(c.description for c in docs.values()), [k for k, c in docs.items()
                                                       if not c.description]


def test_the_analysts_page_lists_every_reader_and_stage():
    text = (ROOT / "docs" / "analysts.md").read_text(encoding="utf-8")
    for key in (("pages", "reader"), ("stage_timings", "stage"), ("jobs", "status"),
                ("results", "status"), ("model_calls", "outcome"), ("job_latency", "page_bucket")):
        for value in column_values()[key]:
            assert f"`{value}`" in text, (key, value)
