"""A refused SQL statement as one line and a hint that names the analyst schema.

DuckDB's own messages run over several lines and suggest its catalog's names (``SELECT * FROM
job`` suggests ``pg_tables``). An analyst needs the first line and the nearest *analyst* table or
column: the names ``doclake schema`` documents, not DuckDB's internals or the lake's raw views.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable

__all__ = ["MISSING_TABLE", "MISSING_COLUMN", "TABLES_IN_QUERY", "first_line", "hint"]

MISSING_TABLE = re.compile(r"Table with name (\S+) does not exist")
MISSING_COLUMN = re.compile(r'(?:Referenced column "([^"]+)" not found'
                            r'|does not have a column named "([^"]+)")')
TABLES_IN_QUERY = re.compile(r"\b(?:from|join)\s+([A-Za-z_][A-Za-z0-9_]*)", re.IGNORECASE)


def first_line(error: Exception) -> str:
    """DuckDB's message without its ``LINE 1: ...`` caret block or its own suggestion."""
    lines = [line for line in str(error).splitlines() if line.strip()]
    kept = [line for line in lines
            if not line.startswith(("LINE ", "Did you mean", "Candidate bindings"))
            and set(line.strip()) != {"^"}]
    return " ".join(kept[:1]) or (lines[0] if lines else type(error).__name__)


def hint(error: Exception, query: str, tables: Iterable[str],
         columns_of: Callable[[str], list[str]]) -> str:
    """The nearest analyst table or column to the name DuckDB could not find, else a pointer
    to ``doclake schema``."""
    message = str(error)
    known = list(tables)
    if match := MISSING_TABLE.search(message):
        wanted = match.group(1).split(".")[-1].strip('"')
        nearest = difflib.get_close_matches(wanted.lower(), known, n=3, cutoff=0.5)
        if nearest:
            return f"no table {wanted!r}; did you mean {' or '.join(nearest)}? `doclake schema` " \
                   "lists every table"
        return f"no table {wanted!r}; the tables are: {', '.join(known)}"
    if match := MISSING_COLUMN.search(message):
        wanted = (match.group(1) or match.group(2)).split(".")[-1]
        named = [t for t in (m.lower() for m in TABLES_IN_QUERY.findall(query)) if t in known]
        candidates = {f"{t}.{c}": c for t in (named or known) for c in columns_of(t)}
        nearest = difflib.get_close_matches(wanted.lower(), sorted(set(candidates.values())),
                                            n=3, cutoff=0.5)
        if nearest:
            where = [name for name, column in candidates.items() if column in nearest]
            return (f"no column {wanted!r}; did you mean {' or '.join(nearest)} "
                    f"({', '.join(where[:4])})? `doclake schema TABLE` lists a table's columns")
        scope = ", ".join(named) if named else "these tables"
        return f"no column {wanted!r} in {scope}; `doclake schema TABLE` lists a table's columns"
    if "Parser Error" in message or "syntax error" in message:
        return "check the SQL near the word quoted; `doclake sql` speaks DuckDB's dialect"
    return "`doclake schema` lists the tables and columns; `doclake sql` speaks DuckDB's dialect"
