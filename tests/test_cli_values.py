"""Output never cuts a value and never prints a Python repr (issue 26, findings 2 and 3)."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from typer.testing import CliRunner

from infra.cli.main import app

runner = CliRunner()
FAST = {"DOCLAKE_EVENT_FLUSH_S": "0.02", "DOCLAKE_POLL_INTERVAL_S": "0.2",
        "DOCLAKE_CPU_WORKERS": "1"}
WIDE = ("SELECT job_id, document_id, source_path, status, created_at, finished_at FROM jobs "
        "ORDER BY job_id")


def invoke(*args: str, columns: int = 80):
    return runner.invoke(app, list(args), env={**FAST, "COLUMNS": str(columns)},
                         catch_exceptions=False)


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    from support.pdfgen import make_pdf

    folder = tmp_path_factory.mktemp("docs")
    make_pdf(folder / "a.pdf", ["This agreement is governed by the laws of Delaware.", "two"])
    make_pdf(folder / "b.pdf", ["governing law: the laws of the State of New York apply"])
    path = str(tmp_path_factory.mktemp("state") / "home")
    assert invoke("run", str(folder), "--home", path).exit_code == 0
    return path


def _squeezed(text: str) -> str:
    """The printed text with whitespace and box drawing removed: a folded value reads whole."""
    return re.sub(r"[\s│┃|─━┏┓┗┛┡┩└┘┌┐├┤┬┴┼╇╈╋]", "", text)


@pytest.mark.parametrize("width", [80, 120])
def test_a_table_too_wide_for_the_terminal_folds_into_records(home, width):
    rows = json.loads(invoke("sql", WIDE, "--home", home, "--format", "json").output)
    printed = invoke("sql", WIDE, "--home", home, "--format", "table", columns=width).output
    assert all(len(line) <= width for line in printed.splitlines())
    squeezed = _squeezed(printed)
    for row in rows:
        for column, value in row.items():
            assert column in printed
            assert _squeezed(str(value)) in squeezed, (column, value)


def test_search_at_80_columns_is_a_table_of_file_page_and_snippet_with_ids_in_json(home):
    hits = json.loads(invoke("search", "governing law", "--home", home, "--format", "json").output)
    assert hits and all(h["document_id"] and h["job_id"] for h in hits)
    printed = invoke("search", "governing law", "--home", home, "--format", "table").output
    assert "record 1" not in printed and "┃ document" in printed
    assert all(len(line) <= 80 for line in printed.splitlines())
    squeezed = _squeezed(printed)
    for hit in hits:
        assert _squeezed(hit["document"]) in squeezed and _squeezed(hit["snippet"]) in squeezed
        assert hit["job_id"] not in printed and hit["document_id"] not in printed
    rows = list(csv.DictReader(io.StringIO(invoke("search", "governing law", "--home", home,
                                                  "--format", "csv").output)))
    assert [r["job_id"] for r in rows] == [h["job_id"] for h in hits]


def test_a_narrow_table_stays_a_table(home):
    printed = invoke("sql", "SELECT status, count(*) AS n FROM jobs GROUP BY status", "--home",
                     home, "--format", "table").output
    assert "┃ status" in printed and "record 1" not in printed


VALUES = ("SELECT finished_at - created_at AS took, INTERVAL 1 DAY + INTERVAL 90 MINUTE AS span, "
          "'x'::BLOB AS raw, 12.50::DECIMAL(10,2) AS money, TIME '13:45:00' AS at "
          "FROM jobs ORDER BY job_id LIMIT 1")


def test_intervals_decimals_and_blobs_print_as_values_in_every_format(home):
    record = json.loads(invoke("sql", VALUES, "--home", home, "--format", "json").output)[0]
    assert re.fullmatch(r"PT\d+(\.\d+)?S", record["took"])
    assert record["span"] == "P1DT1H30M"
    assert record["raw"] == "eA=="
    assert record["money"] == 12.5 and isinstance(record["money"], float)
    assert record["at"] == "13:45:00"
    rows = list(csv.DictReader(io.StringIO(invoke("sql", VALUES, "--home", home,
                                                  "--format", "csv").output)))
    assert rows == [{k: str(v) for k, v in record.items()}]
    table = invoke("sql", VALUES, "--home", home, "--format", "table", columns=200).output
    for name, value in record.items():  # intervals read as a person says them in a table
        if name not in ("took", "span"):
            assert str(value) in table
    assert "1 d 1 h 30 min" in table and "P1DT" not in table and "PT" not in table
    for output in (table, json.dumps(record), str(rows)):
        assert "MonthDayNano" not in output and "b'" not in output and "Decimal" not in output


def test_a_table_rounds_floats_and_milliseconds_and_right_aligns_numbers(home):
    query = ("SELECT 'a' AS name, 46434.18759899998::DOUBLE AS duration_ms, "
             "0.1::DOUBLE + 0.2::DOUBLE AS share, "
             "12 AS n, INTERVAL 150313 MILLISECOND AS took UNION ALL "
             "SELECT 'bb', 5.5, 1.25, 1234, INTERVAL 313 MILLISECOND")
    table = invoke("sql", query, "--home", home, "--format", "table").output
    assert "46434.187" not in table and "46434 " in table and "0.30000000000000004" not in table
    assert "2 min 30.3 s" in table and "313 ms" in table
    lines = [line for line in table.splitlines() if line.startswith("│")]
    widths = {len(line) for line in lines}
    assert len(widths) == 1  # one table
    # Right-aligned: the shorter number ends where the longer one does.
    first, second = lines
    assert first.index("12 ") + 2 == second.index("1234 ") + 4
    assert first.index(" a ") < second.index(" bb ") + 1  # text stays left
    record = json.loads(invoke("sql", query, "--home", home, "--format", "json").output)[0]
    # JSON is for programs: the exact doubles the query produced.
    assert record["duration_ms"] == 46434.18759899998 and record["share"] == 0.1 + 0.2
    assert record["took"] == "PT2M30.313S"
