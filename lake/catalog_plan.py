"""What a DuckDB session over the lake defines, as SQL text, kept between processes.

Every view of the catalog is a function of the code alone (the event models, ``lake.schema`` and
``lake.views``); only the files a raw view reads depend on the lake. Working the SQL out means
importing pydantic and building the ~25 event models, then writing ~70 statements: more than a
small ``doclake sql`` query costs in DuckDB (issue 26). So it is worked out once per version of
that code and kept as JSON in the user's cache folder (``$XDG_CACHE_HOME/doclake``, else
``~/.cache/doclake``), under a key hashed from the source files it comes from: edited code gets a
new key, never a stale plan. A cache that cannot be written (read-only home, Lambda) only means
the plan is built in every process, as before.

Nothing here decides which files a view reads: new event types' files and new ``dt`` partitions
are found by ``lake.catalog``'s listing before every statement, as without the cache.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["INTERNAL_SCHEMA", "SOURCES", "FORMAT", "internal_name", "qualify", "Plan", "build", "cache_key",
           "cache_folder", "load"]

INTERNAL_SCHEMA = "internal"
"""The DuckDB schema of the ``raw_*`` and ``ev_*`` views: out of ``SHOW TABLES``."""
_WORD = re.compile(r"[A-Za-z_]\w*")
_WHOLE_CATALOG = re.compile(
    r"(?i)\b(show|describe|summarize|information_schema|duckdb_\w+|pragma|table_info|export|"
    r"pg_catalog|sqlite_master)\b")
"""Statements that look at the catalog itself: every view is defined before them."""

SOURCES = ("events.py", "schema.py", "views.py", "catalog_plan.py")
"""The files of ``lake`` the plan is computed from: its cache key hashes them."""
FORMAT = 1


def internal_name(view: str) -> str:
    """``raw_<type>`` or ``ev_<type>`` as DuckDB names it: in the internal schema."""
    return f"{INTERNAL_SCHEMA}.{view}"


def qualify(sql: str, event_types) -> str:
    """``sql`` with its table references to ``raw_<type>`` and ``ev_<type>`` in the internal
    schema: found on sqlglot's parse tree (a table in a FROM, JOIN, DESCRIBE ...), never by
    matching the text, so an alias, a column or a string literal that reads ``raw_page_read``
    is the user's own and stays as written. Only the reference is touched (``internal.`` is
    inserted before it); the rest of the text is DuckDB's to read, as typed."""
    lowered = sql.lower()
    if not any(f"raw_{t}" in lowered or f"ev_{t}" in lowered for t in event_types):
        return sql  # the common query: no parser imported, nothing to do
    return _qualified(sql, tuple(event_types))


@functools.lru_cache(maxsize=256)
def _qualified(sql: str, event_types: tuple[str, ...]) -> str:
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    layers = {f"{prefix}_{t}" for t in event_types for prefix in ("raw", "ev")}
    try:
        trees = [tree for tree in sqlglot.parse(sql, read="duckdb") if tree is not None]
    except SqlglotError:
        return sql  # DuckDB reads it (or says what is wrong); an internal layer stays unnamed
    starts = []
    for tree in trees:
        own = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}  # WITH raw_x AS ...
        for table in tree.find_all(exp.Table):
            name = table.this
            if (table.db or not isinstance(name, exp.Identifier)
                    or name.name.lower() not in layers or name.name.lower() in own):
                continue
            start = name.meta.get("start")
            if start is not None:
                starts.append(start)
    for start in sorted(starts, reverse=True):
        sql = f"{sql[:start]}{INTERNAL_SCHEMA}.{sql[start:]}"
    return sql


@dataclass(frozen=True)
class Plan:
    """The catalog as text.

    ``raw_views[type]`` names the raw view of a type (unqualified, as ``lake.views`` does),
    ``raw[name]`` the type an ``internal.ev_<type>`` view reads; ``columns[type]`` is the raw
    view's column list and ``empty[type]`` a typed SELECT of no rows
    (a type without files reads as it); ``sql`` holds every view above the raw ones by DuckDB
    name, in dependency order (``internal.ev_*``, then ``events`` and the derived views), and
    ``reads`` the layers each one reads: those whose names appear in its SQL."""

    event_types: tuple[str, ...]
    raw_views: dict[str, str]
    columns: dict[str, str]
    empty: dict[str, str]
    sql: dict[str, str]
    reads: dict[str, list[str]]
    raw: dict[str, str]

    @property
    def order(self) -> list[str]:
        return list(self.sql)


    def duckdb_sql(self, sql: str) -> str:
        return qualify(sql, self.event_types)

    def needed(self, statement: str) -> list[str]:
        """The layers ``statement`` reaches, in dependency order (all of them for a statement
        that reads the catalog itself). A layer is named by its last part (``ev_page_read``
        for ``internal.ev_page_read``): a statement that names it in any schema, or quoted,
        defines it (more is harmless)."""
        if _WHOLE_CATALOG.search(statement):
            return self.order
        words = set(_WORD.findall(statement))
        todo = [name for name in self.sql if _short(name) in words]
        seen: set[str] = set()
        while todo:
            name = todo.pop()
            if name not in seen:
                seen.add(name)
                todo.extend(self.reads[name])
        return [name for name in self.sql if name in seen]


def _short(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def build() -> Plan:
    """The plan worked out from the code (imports pydantic and the event models)."""
    from lake.events import EVENT_TYPES
    from lake.schema import columns
    from lake.views import DERIVED_VIEWS, dedup_sql, dedup_view, events_sql, raw_view

    types = tuple(EVENT_TYPES)
    sql = {internal_name(dedup_view(t)): qualify(dedup_sql(t), types) for t in types}
    sql["events"] = qualify(events_sql(), types)
    sql.update((name, qualify(text, types)) for name, text in DERIVED_VIEWS.items())
    reads = {}
    for name, text in sql.items():
        words = set(_WORD.findall(text))
        reads[name] = [other for other in sql if other != name and _short(other) in words]
    column_lists, empty = {}, {}
    for event_type, model in EVENT_TYPES.items():
        cols = columns(model)
        column_lists[event_type] = ", ".join(c.name for c in cols)
        typed = ", ".join(f"CAST(NULL AS {c.duckdb}) AS {c.name}" for c in cols)
        empty[event_type] = f"SELECT {typed}, CAST(NULL AS DATE) AS dt WHERE false"
    return Plan(types, {t: raw_view(t) for t in types}, column_lists, empty, sql, reads,
                {internal_name(dedup_view(t)): t for t in types})


def cache_key() -> str:
    """A hash of the source files the plan is computed from."""
    digest = hashlib.sha256(f"doclake-catalog-plan {FORMAT}".encode())
    here = Path(__file__).parent
    for name in SOURCES:
        digest.update(name.encode() + b"\0" + (here / name).read_bytes() + b"\0")
    return digest.hexdigest()[:32]


def cache_folder() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "doclake"


def _read(path: Path, key: str) -> Plan | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("key") != key:
            return None
        return Plan(tuple(data["event_types"]), data["raw_views"], data["columns"], data["empty"],
                    data["sql"], data["reads"], data["raw"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write(path: Path, key: str, plan: Plan) -> None:
    data = {"key": key, "event_types": list(plan.event_types), "raw_views": plan.raw_views,
            "columns": plan.columns, "empty": plan.empty, "sql": plan.sql, "reads": plan.reads,
            "raw": plan.raw}
    with contextlib.suppress(OSError):  # no cache: every process builds the plan, nothing worse
        path.parent.mkdir(parents=True, exist_ok=True)
        part = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        part.write_text(json.dumps(data), encoding="utf-8")
        os.replace(part, path)


def load(folder: Path | None = None) -> Plan:
    """The plan of this code: from the cache when it holds this key, else built and stored."""
    key = cache_key()
    path = (folder or cache_folder()) / f"catalog-plan-{key}.json"
    plan = _read(path, key)
    if plan is None:
        plan = build()
        _write(path, key, plan)
    return plan
