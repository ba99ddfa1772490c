"""``doclake sql`` reads the lake and writes nothing: each statement's type is checked first.

DuckDB's ``allowed_directories`` grants reading AND writing, so a connection confined to the lake
(``lake.catalog.confine``) could still ``COPY ... TO`` a forged Parquet file into a partition,
``ATTACH`` a new database file or ``EXPORT DATABASE`` there. Every statement of a script is
therefore parsed (``extract_statements``) and its type checked before any of them runs; a script
holding one refused statement runs none.

What passes: queries (``SELECT``, ``FROM ...``, ``WITH``, ``DESCRIBE``, ``SHOW``, ``SUMMARIZE``,
all of type SELECT), ``EXPLAIN [ANALYZE]`` of a statement that passes itself, ``PIVOT`` (a
MULTI statement: an in-memory type, then a query), and ``CREATE [OR REPLACE] [TEMP] VIEW`` or
``MACRO`` (kept in the session's in-memory catalog, never in a file). Everything else (COPY,
EXPORT, ATTACH, INSTALL, LOAD, SET, PRAGMA, CALL, CREATE TABLE/SECRET, INSERT...) is refused.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from infra.cli.errors import UserError

READS = frozenset({"SELECT"})
_COMMENTS = re.compile(r"\A(?:\s+|--[^\n]*(?:\n|\Z)|/\*.*?\*/)*", re.DOTALL)
_EXPLAIN = re.compile(r"EXPLAIN\s+(?:ANALY[SZ]E\s+)?(?:\((?:[^()]|\([^()]*\))*\)\s*)?",
                      re.IGNORECASE)
_IN_MEMORY_CREATE = re.compile(
    r"CREATE\s+(?:OR\s+REPLACE\s+)?(?:TEMP(?:ORARY)?\s+)?(?:VIEW|MACRO|FUNCTION)\b", re.IGNORECASE)
_PIVOT = re.compile(r"(?:UN)?PIVOT\b", re.IGNORECASE)
HINT = ("doclake sql only reads the lake: queries (SELECT, WITH, DESCRIBE, SHOW, SUMMARIZE, "
        "EXPLAIN) and CREATE TEMP VIEW or MACRO; to save a result, redirect it: "
        "doclake sql \"SELECT ...\" --format csv > result.csv")


class WriteRefused(UserError):
    """A statement that could write a file, change a setting or load code: refused unrun."""


def _body(query: str) -> str:
    """The statement without its leading comments and spaces."""
    return query[_COMMENTS.match(query).end():]


def _passes(con: Any, statement: Any, depth: int = 0) -> bool:
    kind = statement.type.name
    body = _body(statement.query)
    if kind in READS:
        return True
    if kind == "CREATE":
        return _IN_MEMORY_CREATE.match(body) is not None
    if kind == "MULTI":
        return _PIVOT.match(body) is not None
    if kind == "EXPLAIN" and depth < 3:
        explained = _EXPLAIN.match(body)
        if explained is None:
            return False
        inner = con.extract_statements(body[explained.end():])
        return len(inner) == 1 and _passes(con, inner[0], depth + 1)
    return False


def check(con: Any, statements: Iterable[Any]) -> None:
    """Raise ``WriteRefused`` naming the first statement that is not a read (see the module
    docstring); ``statements`` are DuckDB's ``extract_statements`` results, ``con`` parses an
    EXPLAIN's inner statement."""
    for statement in statements:
        if not _passes(con, statement):
            shown = " ".join(_body(statement.query).split())
            shown = shown if len(shown) <= 80 else shown[:77] + "..."
            raise WriteRefused(f"{statement.type.name} statement refused: {shown}", HINT)
