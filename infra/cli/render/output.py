"""Printing results: a table for people, CSV and JSON for programs.

- The format defaults to a table on a terminal and to CSV when stdout is a pipe or a file, so
  ``doclake sql ... | sort`` gets rows, not box drawing.
- A table never shortens a value: a column too narrow folds its text onto more lines, because ids
  cut to ``01a22b…`` all look alike; a table too wide for the terminal even so (each column
  needs at least its longest word) is printed one record per block, like ``psql``'s ``\\x``.
- Every value is rendered to a string by one function (``_text``, over ``plain``): intervals as
  ISO 8601 durations (``PT2M30.313917S``) in CSV and JSON, decimals as numbers, BLOBs as base64,
  timestamps in ISO 8601; never a Python repr. CSV and JSON keep a float exact (the shortest
  text that reads back as the same double); a table shows it without binary noise
  (``0.30000000000000004`` is ``0.3``: twelve significant digits, ``clean_float``).
- A table is for reading (``table_cell``): numbers are right-aligned, an interval reads
  ``2 min 30.3 s``, and a column of milliseconds (``..._ms``) shows whole ones.
- JSON is one array of row objects (or one object, for commands that report one thing).
- Whole numbers print as integers (``3``, never ``3.0``) in every format.
"""

from __future__ import annotations

import base64
import csv
import json
import math
import re
import sys
from collections.abc import Iterable, Sequence
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Annotated, Any

import typer

from infra.cli.errors import UserError

__all__ = ["FORMATS", "FormatOption", "resolve_format", "iso_duration", "clean_float", "human_duration",
           "plain", "terminal_safe", "table_cell", "print_records", "print_table", "fits",
           "print_record_blocks", "print_object"]

FORMATS = ("table", "csv", "json")

FormatOption = Annotated[str | None, typer.Option(
    "--format", help="table|csv|json (default: table on a terminal, csv when piped)",
    show_default=False)]


def resolve_format(value: str | None, allowed: Sequence[str] = FORMATS) -> str:
    """The format asked for, or the default for where stdout goes."""
    if value is None:
        return "table" if sys.stdout.isatty() else "csv"
    if value not in allowed:
        raise UserError(f"--format {value!r} is not a format", f"use one of: {', '.join(allowed)}")
    return value


def iso_duration(months: int = 0, days: int = 0, nanoseconds: int = 0) -> str:
    """An ISO 8601 duration: ``P1Y2M3DT4H5M6.5S``; ``PT0S`` for nothing; a leading ``-`` when
    the whole interval is negative (DuckDB's ``INTERVAL`` keeps months, days and time apart)."""
    if months <= 0 and days <= 0 and nanoseconds <= 0 and (months or days or nanoseconds):
        return "-" + iso_duration(-months, -days, -nanoseconds)
    years, months = divmod(months, 12)
    date_part = "".join(f"{n}{unit}" for n, unit in ((years, "Y"), (months, "M"), (days, "D")) if n)
    hours, rest = divmod(nanoseconds, 3_600_000_000_000)
    minutes, rest = divmod(rest, 60_000_000_000)
    seconds = f"{Decimal(rest) / Decimal(1_000_000_000):f}".rstrip("0").rstrip(".") if rest else ""
    time_part = "".join(f"{n}{unit}" for n, unit in ((hours, "H"), (minutes, "M")) if n)
    time_part += f"{seconds}S" if seconds else ""
    if not date_part and not time_part:
        return "PT0S"
    return f"P{date_part}" + (f"T{time_part}" if time_part else "")


def _is_month_day_nano(value: Any) -> bool:
    """pyarrow's ``MonthDayNano`` (an Arrow ``month_day_nano_interval``), without importing it."""
    return isinstance(value, tuple) and hasattr(value, "months") and hasattr(value, "nanoseconds")


def clean_float(value: float) -> float:
    """A float without the noise of binary arithmetic: twelve significant digits
    (``46434.18759899998`` is ``46434.187599``, ``0.1 + 0.2`` is ``0.3``), for a person
    reading a table; CSV and JSON keep the exact value."""
    return float(f"{value:.12g}") if math.isfinite(value) else value


def human_duration(months: int = 0, days: int = 0, nanoseconds: int = 0) -> str:
    """An interval as a person reads it: ``2 min 30.3 s``, ``1 d 1 h 30 min``, ``313 ms``;
    seconds to a tenth, under a second in whole milliseconds."""
    if months <= 0 and days <= 0 and nanoseconds <= 0 and (months or days or nanoseconds):
        return "-" + human_duration(-months, -days, -nanoseconds)
    years, months = divmod(months, 12)
    hours, rest = divmod(nanoseconds, 3_600_000_000_000)
    minutes, rest = divmod(rest, 60_000_000_000)
    parts = [f"{n} {unit}" for n, unit in ((years, "y"), (months, "mo"), (days, "d"),
                                             (hours, "h"), (minutes, "min")) if n]
    if rest and not parts and rest < 1_000_000_000:
        return f"{round(rest / 1_000_000)} ms"
    if rest:
        seconds = f"{rest / 1_000_000_000:.1f}".removesuffix(".0")
        if seconds != "0":
            parts.append(f"{seconds} s")
    return " ".join(parts) or "0 s"


def _interval_parts(value: Any) -> tuple[int, int, int] | None:
    """(months, days, nanoseconds) of an interval value, None for anything else."""
    if isinstance(value, timedelta):
        return 0, value.days, (value.seconds * 1_000_000 + value.microseconds) * 1000
    if _is_month_day_nano(value):
        return value.months, value.days, value.nanoseconds
    return None


def plain(value: Any) -> Any:
    """A JSON-friendly value; integral floats and decimals become ints, intervals become ISO 8601
    durations, bytes base64 text. Other floats stay exact: CSV and JSON are read by programs,
    which must get back the double the lake holds (a table shows ``clean_float``'s instead)."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, timedelta):
        return iso_duration(0, value.days, (value.seconds * 1_000_000 + value.microseconds) * 1000)
    if _is_month_day_nano(value):
        return iso_duration(value.months, value.days, value.nanoseconds)
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


# Characters that change what a terminal shows rather than show themselves: C0 and C1 controls
# (ESC starts colour, screen clearing and OSC window titles or links; a newline splits a row),
# DEL, and the bidirectional overrides and isolates that reorder what follows them.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _visible(match: re.Match[str]) -> str:
    char = match.group()
    named = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
    return named.get(char) or (f"\\x{ord(char):02x}" if ord(char) < 0x100
                               else f"\\u{ord(char):04x}")


def terminal_safe(value: Any, *, markup: bool = True) -> str:
    """A value as text that shows itself and nothing else on a terminal.

    Every value that came from a document, a file name or a query goes through this before a
    table or a report prints it: control characters and bidi overrides become visible escapes
    (``\\x1b``, ``\\n``, ``\\u202e``), and rich markup (``[/bold]`` would crash the table,
    ``[link=...]`` would make a clickable link) is escaped, unless ``markup=False`` (for text
    printed with markup off)."""
    from rich.markup import escape

    text = _UNSAFE.sub(_visible, value if isinstance(value, str) else _text(value))
    return escape(text) if markup else text


def _text(value: Any) -> str:
    value = plain(value)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | dict):
        return json.dumps(value)
    return str(value)


_NUMBER = re.compile(r"-?[\d,]*\d(\.\d+)?")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float | Decimal) and not isinstance(value, bool)


def table_cell(value: Any, column: str) -> str:
    """A value as a table shows it: an interval as ``2 min 30.3 s``, a duration in
    milliseconds (a column named ``..._ms``) in whole ones, the rest as ``_text``."""
    parts = _interval_parts(value)
    if parts is not None:
        return human_duration(*parts)
    if column.endswith("_ms") and _is_number(value) and math.isfinite(value):
        return str(round(value))
    if isinstance(value, float) and math.isfinite(value) and not value.is_integer():
        return _text(clean_float(value))
    return _text(value)


def print_records(columns: Sequence[str], rows: Iterable[Sequence[Any]], output_format: str,
                  *, title: str | None = None) -> None:
    """Rows (sequences in ``columns`` order) in the chosen format, on stdout; in a table, a
    column of numbers is right-aligned."""
    rows = list(rows)
    if output_format == "json":
        json.dump([{c: plain(v) for c, v in zip(columns, row, strict=True)} for row in rows],
                  sys.stdout)
        sys.stdout.write("\n")
    elif output_format == "csv":
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(columns)
        for row in rows:
            writer.writerow([_text(v) for v in row])
    else:
        numeric = [any(_is_number(row[i]) for row in rows)
                   and all(row[i] is None or _is_number(row[i]) for row in rows)
                   for i in range(len(columns))]
        print_table(columns, ([table_cell(v, c) for v, c in zip(row, columns, strict=True)]
                              for row in rows), title=title, numeric=numeric)
    sys.stdout.flush()


def print_table(columns: Sequence[str], rows: Iterable[Sequence[str]], *,
                title: str | None = None, numeric: Sequence[bool] | None = None) -> None:
    """A box table on stdout whose cells fold instead of being cut with an ellipsis; one block
    per record when the terminal is too narrow for every column (``fits``). ``numeric``: the
    columns to right-align."""
    from rich.console import Console

    rows = [list(row) for row in rows]
    if numeric is None:  # text cells from a report (status, config): numbers look like numbers
        numeric = [any(row[i] for row in rows)
                   and all(not row[i] or _NUMBER.fullmatch(row[i]) for row in rows)
                   for i in range(len(columns))]
    # Every cell shows itself and nothing else (control characters, rich markup: terminal_safe).
    title = terminal_safe(title) if title else None
    columns = [terminal_safe(name) for name in columns]
    rows = [[terminal_safe(cell) for cell in row] for row in rows]
    console = Console(highlight=False)
    if fits(columns, rows, console.width):
        console.print(_box_table(columns, rows, title, numeric))
    else:
        print_record_blocks(console, columns, rows, title=title)


def fits(columns: Sequence[str], rows: Sequence[Sequence[str]], width: int) -> bool:
    """Whether a box table of these cells fits ``width`` without cutting a word: each column
    needs its header and its longest word (rich wraps at spaces and would otherwise squeeze or
    drop columns), plus three characters of border and padding."""
    needed = 1
    for index, name in enumerate(columns):
        longest = max((len(word) for row in rows for word in str(row[index]).split()), default=0)
        needed += max(len(name), longest) + 3
    return needed <= width


def print_record_blocks(console, columns: Sequence[str], rows: Sequence[Sequence[str]], *,
                        title: str | None = None) -> None:
    """One block per row, a column per line (``psql``'s expanded display); a value longer than
    the line folds onto the next lines, whole."""
    from rich.rule import Rule
    from rich.table import Table

    if title:
        console.print(title)
    for number, row in enumerate(rows, 1):
        console.print(Rule(f"record {number}", align="left", characters="-"))
        block = Table.grid(padding=(0, 1))
        block.add_column(no_wrap=True)
        block.add_column(overflow="fold")
        for name, cell in zip(columns, row, strict=True):
            block.add_row(name, cell)
        console.print(block)
    if not rows:
        console.print("(no rows)")


def _box_table(columns: Sequence[str], rows: list[list[str]], title: str | None,
               numeric: Sequence[bool] | None = None):
    from rich.table import Table

    view = Table(title=title)
    for index, name in enumerate(columns):
        # Ids keep their full width where the screen allows; other columns fold first.
        widest = max((len(row[index]) for row in rows), default=0) if _is_id(name) else None
        view.add_column(name, overflow="fold", min_width=min(widest, 40) if widest else None,
                        justify="right" if numeric and numeric[index] else "left")
    for row in rows:
        view.add_row(*row)
    return view


def _is_id(column: str) -> bool:
    return column == "id" or column.endswith("_id")


def print_object(value: dict[str, Any], output_format: str) -> None:
    """One record: a JSON object, a one-row CSV, or a two-column table."""
    if output_format == "json":
        json.dump(plain(value), sys.stdout)
        sys.stdout.write("\n")
        sys.stdout.flush()
    elif output_format == "csv":
        print_records(list(value), [list(value.values())], "csv")
    else:
        print_table(("figure", "value"), ((k, _format_figure(v)) for k, v in value.items()))


def _format_figure(value: Any) -> str:
    value = plain(value)
    if isinstance(value, float):
        return f"{value:,.2f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return _text(value)
