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


def test_search_at_80_columns_keeps_every_id_whole(home):
    hits = json.loads(invoke("search", "governing law", "--home", home, "--format", "json").output)
    assert hits
    printed = invoke("search", "governing law", "--home", home, "--format", "table").output
    for hit in hits:
        assert hit["job_id"] in printed and hit["document_id"] in printed


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
    for value in record.values():
        assert str(value) in table
    for output in (table, json.dumps(record), str(rows)):
        assert "MonthDayNano" not in output and "b'" not in output and "Decimal" not in output
