"""Which SQL statements only read: the allow-list behind ``doclake sql`` and ``lake.catalog.query``.

DuckDB's ``allowed_directories`` grants reading AND writing, so a connection confined to the lake
(``lake.catalog.confine``) could still ``COPY ... TO`` a forged Parquet file into a partition,
``ATTACH`` a new database file or ``EXPORT DATABASE`` there. Every statement is therefore parsed
(``extract_statements``) and its type checked before any of them runs.

What passes: queries (``SELECT``, ``FROM ...``, ``WITH``, ``DESCRIBE``, ``SHOW``, ``SUMMARIZE``,
all of type SELECT), ``EXPLAIN [ANALYZE]`` of a statement that passes itself, ``PIVOT`` (a
MULTI statement: an in-memory type, then a query), and ``CREATE [OR REPLACE] [TEMP] VIEW`` or
``MACRO`` (kept in the session's in-memory catalog, never in a file). Everything else (COPY,
EXPORT, ATTACH, INSTALL, LOAD, SET, PRAGMA, CALL, CREATE TABLE/SECRET, INSERT, UPDATE
EXTENSIONS...) is refused: an allow-list, so a statement type DuckDB adds later is refused too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

__all__ = ["READS", "NotARead", "first_refused", "kind", "shown"]

READS = frozenset({"SELECT"})
_COMMENTS = re.compile(r"\A(?:\s+|--[^\n]*(?:\n|\Z)|/\*.*?\*/)*", re.DOTALL)
_EXPLAIN = re.compile(r"EXPLAIN\s+(?:ANALY[SZ]E\s+)?(?:\((?:[^()]|\([^()]*\))*\)\s*)?",
                      re.IGNORECASE)
_IN_MEMORY_CREATE = re.compile(
    r"CREATE\s+(?:OR\s+REPLACE\s+)?(?:TEMP(?:ORARY)?\s+)?(?:VIEW|MACRO|FUNCTION)\b", re.IGNORECASE)
_PIVOT = re.compile(r"(?:UN)?PIVOT\b", re.IGNORECASE)


class NotARead(ValueError):
    """A statement that could write a file, change a setting or load code: refused unrun."""


def kind(statement: Any) -> str:
    """The statement's type name, or ``UNKNOWN`` for a type this DuckDB's Python API has no name
    for (``UPDATE EXTENSIONS`` in DuckDB 2.0 raises ``ValueError: 29 is not a valid
    StatementType``): an allow-list refuses what it cannot name."""
    try:
        return statement.type.name
    except ValueError:
        return "UNKNOWN"


def _body(query: str) -> str:
    """The statement without its leading comments and spaces."""
    return query[_COMMENTS.match(query).end():]


def shown(statement: Any) -> str:
    """The statement on one line, at most 80 characters: for a refusal's message."""
    text = " ".join(_body(statement.query).split())
    return text if len(text) <= 80 else text[:77] + "..."


def _passes(con: Any, statement: Any, depth: int = 0) -> bool:
    name = kind(statement)
    body = _body(statement.query)
    if name in READS:
        return True
    if name == "CREATE":
        return _IN_MEMORY_CREATE.match(body) is not None
    if name == "MULTI":
        return _PIVOT.match(body) is not None
    if name == "EXPLAIN" and depth < 3:
        explained = _EXPLAIN.match(body)
        if explained is None:
            return False
        inner = con.extract_statements(body[explained.end():])
        return len(inner) == 1 and _passes(con, inner[0], depth + 1)
    return False


def first_refused(con: Any, statements: Iterable[Any]) -> Any | None:
    """The first statement that is not a read (see the module docstring), or None; ``statements``
    are DuckDB's ``extract_statements`` results, ``con`` parses an EXPLAIN's inner statement."""
    for statement in statements:
        if not _passes(con, statement):
            return statement
    return None
