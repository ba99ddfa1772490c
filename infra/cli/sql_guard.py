"""``doclake sql`` reads the lake and writes nothing: each statement's type is checked first.

The allow-list itself is ``lake.read_only`` (``lake.catalog.query`` applies it too); here a
refusal becomes the command's own error (exit 2, the statement named, a hint). A script holding
one refused statement runs none.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from infra.cli.errors import UserError
from lake.read_only import first_refused, kind, shown

__all__ = ["HINT", "WriteRefused", "check"]

HINT = ("doclake sql only reads the lake: queries (SELECT, WITH, DESCRIBE, SHOW, SUMMARIZE, "
        "EXPLAIN) and CREATE TEMP VIEW or MACRO; to save a result, redirect it: "
        "doclake sql \"SELECT ...\" --format csv > result.csv")


class WriteRefused(UserError):
    """A statement that could write a file, change a setting or load code: refused unrun."""


def check(con: Any, statements: Iterable[Any]) -> None:
    """Raise ``WriteRefused`` naming the first statement that is not a read (``lake.read_only``)."""
    refused = first_refused(con, statements)
    if refused is not None:
        raise WriteRefused(f"{kind(refused)} statement refused: {shown(refused)}", HINT)
