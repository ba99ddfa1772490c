"""Printing query results: a table for people, CSV and JSON for programs.

Whole numbers print as integers (``3``, never ``3.0``) in every format.
"""

from __future__ import annotations

import csv
import json
import math
import sys
from datetime import date, datetime
from decimal import Decimal
from typing import Any

import pyarrow as pa
from rich.console import Console
from rich.table import Table


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


def _text(value: Any) -> str:
    value = plain(value)
    if value is None:
        return ""
    if isinstance(value, list | dict):
        return json.dumps(value)
    return str(value)


def print_rows(table: pa.Table, output_format: str) -> None:
    rows = table.to_pylist()
    if output_format == "json":
        json.dump([{k: plain(v) for k, v in row.items()} for row in rows], sys.stdout)
        sys.stdout.write("\n")
    elif output_format == "csv":
        writer = csv.writer(sys.stdout)
        writer.writerow(table.column_names)
        for row in rows:
            writer.writerow([_text(v) for v in row.values()])
    else:
        view = Table(*table.column_names)
        for row in rows:
            view.add_row(*(_text(v) for v in row.values()))
        Console().print(view)
