"""Printing results: a table for people, CSV and JSON for programs.

- The format defaults to a table on a terminal and to CSV when stdout is a pipe or a file, so
  ``doclake sql ... | sort`` gets rows, not box drawing.
- A table never shortens a value: a column too narrow folds its text onto more lines, because ids
  cut to ``01a22b…`` all look alike.
- JSON is one array of row objects (or one object, for commands that report one thing).
- Whole numbers print as integers (``3``, never ``3.0``) in every format.
"""

from __future__ import annotations

import csv
import json
import math
import re
import sys
from collections.abc import Iterable, Sequence
from datetime import date, datetime
from decimal import Decimal
from typing import Annotated, Any

import typer

from infra.cli.errors import UserError

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


def plain(value: Any) -> Any:
    """A JSON-friendly value; integral floats and decimals become ints."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, datetime | date):
        return value.isoformat()
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


def print_records(columns: Sequence[str], rows: Iterable[Sequence[Any]], output_format: str,
                  *, title: str | None = None) -> None:
    """Rows (sequences in ``columns`` order) in the chosen format, on stdout."""
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
        print_table(columns, ([_text(v) for v in row] for row in rows), title=title)
    sys.stdout.flush()


def print_table(columns: Sequence[str], rows: Iterable[Sequence[str]], *,
                title: str | None = None) -> None:
    """A box table on stdout whose cells fold instead of being cut with an ellipsis."""
    from rich.console import Console
    from rich.table import Table

    rows = [list(row) for row in rows]
    view = Table(title=terminal_safe(title) if title else None)
    columns = [terminal_safe(name) for name in columns]
    rows = [[terminal_safe(cell) for cell in row] for row in rows]
    for index, name in enumerate(columns):
        # Ids keep their full width where the screen allows; other columns fold first.
        widest = max((len(row[index]) for row in rows), default=0) if _is_id(name) else None
        view.add_column(name, overflow="fold", min_width=min(widest, 40) if widest else None)
    for row in rows:
        view.add_row(*row)
    Console(highlight=False).print(view)


def _is_id(column: str) -> bool:
    return column == "id" or column.endswith("_id")


def print_rows(table, output_format: str, *, title: str | None = None) -> None:
    """An Arrow table (a query result) in the chosen format."""
    print_records(table.column_names, (tuple(r.values()) for r in table.to_pylist()),
                  output_format, title=title)


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
