"""The sheet formatter's fast path (a column at a time, one ``%`` a line) prints exactly what
formatting each cell with ``format_cell`` and joining the row prints, over edge values and mixed
columns; the corpus test checks real workbooks against calamine cell by cell."""

from __future__ import annotations

import datetime as dt
import random

import pytest

from extract.errors import LimitExceeded
from extract.formats.spreadsheet import SheetLimits, format_cell, render_rows

EDGES = [None, True, False, 0, 7, -3, 2**70, 0.0, -0.0, 1.0, 8337.0, -8337.0, 1.5, 0.1,
         float("nan"), float("inf"), float("-inf"), 2.0**53, 2.0**53 - 1, -(2.0**53) + 1,
         -(2.0**53), 1e16, 1e300, "", "plain", "a\tb", "x\r\ny\nz\r", dt.date(2020, 1, 2),
         dt.datetime(2020, 1, 2, 3, 4, 5, 6), dt.time(1, 2, 3),
         dt.timedelta(days=10, hours=15, minutes=10, seconds=10), dt.timedelta(0)]
COLUMNS = [lambda r: r.choice(EDGES), lambda r: float(r.randint(-1000, 1000)),
           lambda r: r.random(), lambda r: r.choice([1.0, "", 2.0]), lambda r: "",
           lambda r: r.choice(["a", "b\tc", ""]), lambda r: dt.date(2021, 3, r.randint(1, 28)),
           lambda r: r.choice([2.0**53, 1.0]), lambda r: r.choice([float("nan"), 1.0]),
           lambda r: r.randint(0, 5), lambda r: None, lambda r: r.choice([True, False]),
           lambda r: dt.datetime(2021, 3, r.randint(1, 28), 12)]


def reference(header: str, rows: list[list]) -> tuple[str, int]:
    lines = [header]
    cells = 0
    for row in rows:
        texts = [format_cell(v) for v in row]
        while texts and texts[-1] == "":
            texts.pop()
        cells += sum(1 for t in texts if t)
        lines.append("\t".join(texts))
    while len(lines) > 1 and lines[-1] == "":
        lines.pop()
    return "\n".join(lines) + "\n", cells


def test_format_cell_edges():
    assert [format_cell(v) for v in (8337.0, -0.0, 2.0**53, 1e16, True, None, "a\tb")] == [
        "8337", "0", "9007199254740992.0", "1e+16", "TRUE", "", "a b"]
    assert format_cell(dt.date(2020, 1, 2)) == "2020-01-02"
    assert format_cell(dt.datetime(2020, 1, 2, 3, 4)) == "2020-01-02T03:04:00"


def test_whole_grids_print_as_cell_by_cell_formatting():
    rng = random.Random(9)
    for _ in range(2000):
        width, height = rng.randint(0, 6), rng.randint(1, 25)
        kinds = [rng.choice(COLUMNS) for _ in range(width)]
        grid = [[kind(rng) for kind in kinds] for _ in range(height)]
        if rng.random() < 0.3:
            grid[0] = [rng.choice(["name", "", None]) for _ in range(width)]  # a header row
        if rng.random() < 0.2:
            grid += [[""] * width for _ in range(rng.randint(1, 3))]
        text, cells = reference("# Sheet: s", grid)
        for rows in (grid, iter(grid)):  # the grid path and the row path
            got = render_rows("# Sheet: s", rows, SheetLimits())
            assert (got.text, got.cells, got.rows) == (text, cells, len(grid)), grid
        if len(text) > 3:
            with pytest.raises(LimitExceeded):
                render_rows("# Sheet: s", grid, SheetLimits(max_chars=len(text) - 1))
