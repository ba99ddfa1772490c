"""Spreadsheets (xlsx, xlsm, xlsb, xls, ods) to text with python-calamine, one sheet a part.

The output of a sheet is plain and stable, so that search, fields and a diff against calamine
all see the same thing: a header line naming the sheet (and whether it is hidden), then one line
per row with cells separated by tabs. Rows keep their position from A1 (an empty row is an empty
line), trailing empty cells are dropped, whole numbers print as integers (8337, not 8337.0),
dates and times as ISO 8601, booleans as TRUE/FALSE. A tab or line break inside a cell becomes a
space: it would otherwise read as a new cell or row.

These functions run in a worker process (``ctx.cpu``) under a memory limit: calamine loads a
whole sheet, and a hostile workbook can claim a lot. Calamine picks its parser from the file's
extension, so the file is linked under the name of the format sniffed from its bytes.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from extract.errors import CorruptDocument, EncryptedDocument, LimitExceeded
from extract.formats.limits import memory_limit
from extract.formats.scratch import scratch_prefix
from extract.formats.sniff import Format

__all__ = ["READER", "SheetLimits", "SheetInfo", "SheetText", "WorkbookPlan", "format_cell", "iso_duration",
           "sheet_header", "render_rows", "plan_workbook", "read_sheet"]

READER = "calamine"


@dataclass(frozen=True)
class SheetLimits:
    max_cells: int = 5_000_000
    max_chars: int = 50_000_000
    max_memory_bytes: int | None = 2 * 1024**3


@dataclass(frozen=True)
class SheetInfo:
    position: int  # 1-based, the sheet's page_number
    name: str
    visibility: str  # visible, hidden, very hidden
    kind: str  # worksheet, chart sheet, dialog sheet, macro sheet


@dataclass(frozen=True)
class SheetText:
    position: int
    text: str
    rows: int
    cells: int  # non-empty cells
    duration_ms: float


@dataclass(frozen=True)
class WorkbookPlan:
    """The sheets of a workbook, and the text of those read while it was open."""

    sheets: list[SheetInfo]
    texts: list[SheetText] = field(default_factory=list)


def _generic_cell(value: Any) -> str:
    """Any cell, by ``isinstance``: the types calamine gives are dispatched faster by ``_TEXT``;
    this handles the rest (subclasses, and whatever a future calamine returns)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _float_text(value)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return iso_duration(value)
    return _str_text(str(value))


_TWO_53 = float(2**53)


def _float_text(value: float) -> str:
    # A NaN or an infinity fails the range test; integers past 2**53 are not exact: repr.
    if -_TWO_53 < value < _TWO_53 and value.is_integer():
        return str(int(value))
    return repr(value)


def _str_text(text: str) -> str:
    if "\t" in text or "\n" in text or "\r" in text:
        return text.replace("\r\n", " ").replace("\t", " ").replace("\n", " ").replace("\r", " ")
    return text


class _ByType(dict):
    """Cell formatters by exact type (one dict lookup, no ``isinstance`` chain per cell)."""

    def __missing__(self, kind: type) -> Any:
        return _generic_cell


_TEXT = _ByType({
    float: _float_text, str: _str_text, int: int.__str__, type(None): lambda _: "",
    bool: lambda value: "TRUE" if value else "FALSE",
    dt.datetime: dt.datetime.isoformat, dt.date: dt.date.isoformat, dt.time: dt.time.isoformat,
    dt.timedelta: lambda value: iso_duration(value),
})


def format_cell(value: Any) -> str:
    """One cell as text: integers without ``.0``, ISO 8601 dates, no tabs or line breaks."""
    return _TEXT[type(value)](value)


def iso_duration(value: dt.timedelta) -> str:
    """A duration in ISO 8601 (``P10DT15H10M10S``); calamine gives these for duration cells."""
    sign = "-" if value < dt.timedelta(0) else ""
    value = abs(value)
    hours, rest = divmod(value.seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    fraction = f".{value.microseconds:06d}".rstrip("0") if value.microseconds else ""
    time = "".join(f"{n}{u}" for n, u in ((hours, "H"), (minutes, "M")) if n)
    if seconds or fraction or not (value.days or time):
        time += f"{seconds}{fraction}S"
    return f"{sign}P{f'{value.days}D' if value.days else ''}{'T' + time if time else ''}"


def sheet_header(name: str, visibility: str = "visible", kind: str = "worksheet") -> str:
    notes = [n for n in (visibility if visibility != "visible" else "",
                         kind if kind != "worksheet" else "") if n]
    return f"# Sheet: {name}" + (f" ({', '.join(notes)})" if notes else "")


def render_rows(header: str, rows: Iterable[Sequence[Any]], limits: SheetLimits) -> SheetText:
    """The sheet's text; raises ``LimitExceeded`` past the cell or character limit.

    A whole grid (calamine's: a list of rows of one width) is formatted a column at a time
    (``_grid_lines``); anything else (CSV's capped stream, ragged rows) a row at a time. Both give
    the same text."""
    import time

    started = time.perf_counter()
    if isinstance(rows, list) and rows and len(set(map(len, rows))) == 1:
        lines, cells = _grid_lines(rows)
        chars = len(header) + 1 + sum(map(len, lines)) + len(lines)
        if chars > limits.max_chars:
            raise LimitExceeded(f"the sheet's text passed {limits.max_chars} characters",
                                error_type="sheet_too_long")
        rows_seen = len(rows)
        lines.insert(0, header)
    else:
        lines, cells, rows_seen = _row_lines(header, rows, limits)
    while len(lines) > 1 and lines[-1] == "":
        lines.pop()
    return SheetText(0, "\n".join(lines) + "\n", rows_seen, cells,
                     (time.perf_counter() - started) * 1000)


def _row_lines(header: str, rows: Iterable[Sequence[Any]],
               limits: SheetLimits) -> tuple[list[str], int, int]:
    lines = [header]
    chars = len(header) + 1
    cells = rows_seen = 0
    text = _TEXT  # a local: looked up once, not once a cell
    for row in rows:
        rows_seen += 1
        texts = [text[type(v)](v) for v in row]
        cells += len(texts) - texts.count("")
        # No cell's text holds a tab, so stripping tabs drops exactly the trailing empty cells.
        line = "\t".join(texts).rstrip("\t")
        chars += len(line) + 1
        if chars > limits.max_chars:
            raise LimitExceeded(f"the sheet's text passed {limits.max_chars} characters",
                                error_type="sheet_too_long")
        lines.append(line)
    return lines, cells, rows_seen


def _grid_lines(rows: list[Sequence[Any]]) -> tuple[list[str], int]:
    """The lines of a rectangular grid and its non-empty cells.

    Columns, not cells, are classified: a column holds one type far more often than a row does,
    and repeats its values often. Each column's texts are made by C loops (``map``) with no Python
    call per cell where its type allows, each value formatted once when it repeats; the lines
    are then joined row by row."""
    if not rows[0]:
        return [""] * len(rows), 0
    columns = []
    empty = 0
    for column in zip(*rows, strict=True):
        texts, blanks = _column_texts(column)
        columns.append(texts)
        empty += blanks
    lines = list(map("\t".join, zip(*columns, strict=True)))
    if empty:  # no cell's text holds a tab: stripping tabs drops the trailing empty cells
        lines = [line.rstrip("\t") for line in lines]
    return lines, len(rows) * len(columns) - empty


# Types whose equal values print alike (0.0 and -0.0 both print 0), so a column of one of them
# may format each distinct value once. Not a mixed column: 1 == 1.0 == True.
_REPEATABLE = frozenset({float, int, bool, dt.date, dt.datetime, dt.time, dt.timedelta})


def _column_texts(column: tuple[Any, ...]) -> tuple[Sequence[str], int]:
    """One column's cell texts, and how many are empty."""
    kinds = set(map(type, column))
    if len(kinds) == 1:
        kind = kinds.pop()
        if kind is str:
            joined = "".join(column)
            if "\t" in joined or "\n" in joined or "\r" in joined:
                column = tuple(map(_str_text, column))
            return column, column.count("")
        if kind is type(None):
            return [""] * len(column), len(column)
        fmt = _TEXT[kind]
        # A sample first: a column of mostly unique values (an id) skips hashing all of it.
        if kind in _REPEATABLE and len(set(column[:256])) * 20 <= min(len(column), 256) * 19:
            distinct = set(column)
            if len(distinct) * 4 <= len(column):
                return list(map({v: fmt(v) for v in distinct}.__getitem__, column)), 0
        # is_integer is False for a NaN or an infinity, so min and max see neither.
        if kind is float and all(map(float.is_integer, column)) and \
                min(column) > -_TWO_53 and max(column) < _TWO_53:
            return list(map("%d".__mod__, column)), 0  # str(int(value)), in C
        texts = list(map(fmt, column))
        return texts, (texts.count("") if kind not in _REPEATABLE else 0)
    text = _TEXT
    texts = [(str(int(v)) if -_TWO_53 < v < _TWO_53 and v.is_integer() else repr(v))
             if type(v) is float else text[type(v)](v) for v in column]
    return texts, texts.count("")


_EXTENSIONS = {Format.XLSX: ".xlsx", Format.XLSM: ".xlsm", Format.XLSB: ".xlsb",
               Format.XLS: ".xls", Format.ODS: ".ods"}
_VISIBILITY = {"Visible": "visible", "Hidden": "hidden", "VeryHidden": "very hidden"}
_KINDS = {"WorkSheet": "worksheet", "ChartSheet": "chart sheet", "DialogSheet": "dialog sheet",
          "MacroSheet": "macro sheet", "Vba": "vba"}


# calamine's own refusal of a grid too large to build (an ODS whose repeated rows and columns
# span billions of cells, say): "Cell limit exceeded (17179869184 cells requested, max
# 100000000)". The workbook is not damaged: it is over a size limit, and says so.
_CALAMINE_CELL_LIMIT = re.compile(r"Cell limit exceeded \((\d+) cells requested, max (\d+)\)")


def _cell_limit(error: Exception, limits: SheetLimits) -> LimitExceeded | None:
    """calamine's cell-limit refusal as ``too_many_cells``; None for any other error."""
    match = _CALAMINE_CELL_LIMIT.search(str(error))
    if match is None:
        return None
    requested, cap = int(match.group(1)), int(match.group(2))
    if limits.max_cells <= cap:  # ours is the binding limit: raising it is what would help
        said = f"over the limit of {limits.max_cells}"
    else:
        said = f"over calamine's own cap of {cap} (DOCLAKE_MAX_SHEET_CELLS cannot lift it)"
    return LimitExceeded(f"the workbook spans {requested} cells, {said}",
                         error_type="too_many_cells")


def _open(path: Path, fmt: Format, folder: str, limits: SheetLimits):
    import python_calamine as calamine

    linked = Path(folder) / f"book{_EXTENSIONS[fmt]}"
    os.symlink(os.path.abspath(path), linked)
    try:
        return calamine.CalamineWorkbook.from_path(str(linked))
    except calamine.PasswordError:
        raise EncryptedDocument("the workbook is password-protected") from None
    except (calamine.CalamineError, OSError, ValueError) as error:
        raise _cell_limit(error, limits) or CorruptDocument(
            f"calamine cannot open the {fmt.value} workbook: {error}") from None


def _sheets(workbook) -> list[SheetInfo]:
    def plain(enum: object) -> str:  # pyo3 enums have no .name: 'SheetVisibleEnum.Hidden'
        return str(enum).rsplit(".", 1)[-1]

    return [SheetInfo(position, meta.name,
                      _VISIBILITY.get(plain(meta.visible), plain(meta.visible).lower()),
                      _KINDS.get(plain(meta.typ), plain(meta.typ).lower()))
            for position, meta in enumerate(workbook.sheets_metadata, start=1)]


def _check_extents(path: Path, fmt: Format, sheets: Sequence[SheetInfo],
                   limits: SheetLimits) -> None:
    """Refuse a sheet whose grid is over the cell limit before calamine builds it (xlsx and
    xlsm: ``extract.formats.sheet_extents``)."""
    if fmt not in (Format.XLSX, Format.XLSM):
        return
    from extract.formats.sheet_extents import ooxml_extents

    for name, (height, width) in ooxml_extents(path, [s.name for s in sheets]).items():
        if height * width > limits.max_cells:
            raise LimitExceeded(
                f"sheet {name!r} spans {height} x {width} cells, over the limit of "
                f"{limits.max_cells}", error_type="too_many_cells")


def _read(workbook, sheet: SheetInfo, limits: SheetLimits, *,
          header: str | None = None) -> SheetText:
    import python_calamine as calamine

    header = header or sheet_header(sheet.name, sheet.visibility, sheet.kind)
    if sheet.kind != "worksheet":
        # A chart sheet may hold a few cells (its title, its data in .xls) or none that calamine
        # can read; it never fails the workbook.
        try:
            return _read(workbook, SheetInfo(sheet.position, sheet.name, sheet.visibility,
                                             "worksheet"), limits, header=header)
        except CorruptDocument:
            return SheetText(sheet.position, header + "\n", 0, 0, 0.0)
    try:
        loaded = workbook.get_sheet_by_name(sheet.name)
        end = loaded.end
        # Rows and columns count from A1, so the grid is as large as the last cell's position.
        height, width = (end[0] + 1, end[1] + 1) if end and loaded.height else (0, 0)
        if height * width > limits.max_cells:
            raise LimitExceeded(
                f"sheet {sheet.name!r} spans {height} x {width} cells, over the limit of "
                f"{limits.max_cells}", error_type="too_many_cells")
        rows = loaded.to_python(skip_empty_area=False) if height else []
        text = render_rows(header, rows, limits)
    except (calamine.CalamineError, OSError, ValueError) as error:
        raise _cell_limit(error, limits) or CorruptDocument(
            f"calamine cannot read sheet {sheet.name!r}: {error}") from None
    return SheetText(sheet.position, text.text, text.rows, text.cells, text.duration_ms)


def plan_workbook(path: Path, fmt: Format, limits: SheetLimits,
                  read_all: bool = False) -> WorkbookPlan:
    """Open the workbook once: list its sheets, and read sheet 1, or every sheet when
    ``read_all`` (an old .xls, parsed whole anyway) or when there is only one."""
    with memory_limit(limits.max_memory_bytes, "reading the workbook"), \
            tempfile.TemporaryDirectory(prefix=scratch_prefix("sheet")) as folder:
        workbook = _open(path, fmt, folder, limits)
        sheets = _sheets(workbook)
        wanted = sheets if (read_all or len(sheets) == 1) else sheets[:1]
        _check_extents(path, fmt, wanted, limits)
        return WorkbookPlan(sheets, [_read(workbook, sheet, limits) for sheet in wanted])


def read_sheet(path: Path, fmt: Format, position: int, limits: SheetLimits) -> SheetText:
    """One sheet's text, by position (1-based)."""
    with memory_limit(limits.max_memory_bytes, "reading the sheet"), \
            tempfile.TemporaryDirectory(prefix=scratch_prefix("sheet")) as folder:
        workbook = _open(path, fmt, folder, limits)
        sheets = _sheets(workbook)
        if not 1 <= position <= len(sheets):
            raise CorruptDocument(f"the workbook has {len(sheets)} sheets, no sheet {position}")
        _check_extents(path, fmt, [sheets[position - 1]], limits)
        return _read(workbook, sheets[position - 1], limits)
