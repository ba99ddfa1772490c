"""The lake's views in Athena's SQL (Trino, engine v3), and Glue view definitions built from them.

The views are written once, in DuckDB SQL (``lake.views``), and transpiled here with sqlglot. Two
things the plain transpile gets wrong or needlessly awkward for Athena are fixed on the syntax tree
before Trino SQL is generated:

- ``date_diff(unit, a, b)``: sqlglot wraps both sides in ``date_trunc`` to keep DuckDB's
  "boundaries crossed" meaning. That is right for days or hours, but a no-op for milliseconds
  on Athena's millisecond timestamps, so there the plain ``date_diff`` is emitted. Units Trino
  lacks (microsecond) are refused instead of silently changing meaning.
- ``TIMESTAMPTZ`` casts become ``TIMESTAMP``, and ``x AT TIME ZONE 'UTC'`` becomes ``x``: the lake
  stores UTC instants, which Athena's Parquet reader returns as plain ``timestamp`` in UTC, the
  type every view shows in DuckDB too (``lake.views.utc_timestamp``); a zone-aware column could
  not be described in Glue, and ``view_columns`` refuses one.

Time: Athena reads the lake's microsecond Parquet timestamps as ``timestamp(3)``, rounded to the
millisecond, so a view's timestamps in Athena can differ from DuckDB's in the last three digits.
Every value that matters is also in a numeric column computed from the events (``duration_ms``,
``latency_ms``, ``processing_ms``, ``job_latency.seconds``), and ``date_diff`` is taken in
milliseconds at most (finer units are refused below).

Partitions: every view carries ``dt`` straight from the ``raw_<type>`` partition key (a DATE in
Glue, ``lake.glue.PARTITION_TYPE``), windows are partitioned by it and joins equate it, so a
``WHERE dt >= DATE '...'`` on any view reaches partition projection as a range on the key
(``lake.views``; checked on the transpiled SQL by ``tests/test_partitions.py``).

``setup_statements`` is the whole set-up as SQL (database, raw tables, views), the one list both
``doclake lake views --dialect athena`` prints and ``doclake aws`` runs.

A view can then be created without running Athena at all: ``view_table_input`` builds the Glue
``TableInput`` Athena itself writes for a view (``VIRTUAL_VIEW`` with a base64 "Presto View"
blob). That blob must list the view's columns and Trino types; they are read from DuckDB by
defining the same views over an empty lake, then mapped to Trino types. Athena only checks that
the query's real column types can be coerced to the declared ones, so the mapping errs wide
(``timestamp(3)``, ``varchar``, ``bigint``).
"""

from __future__ import annotations

import base64
import functools
import json
import tempfile
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import ErrorLevel

from lake.events import EVENT_TYPES, SCHEMA_VERSION
from lake.glue import (
    DEFAULT_PROJECTION_START,
    check_name,
    create_table_statements,
    database_input,
    lake_uri,
)
from lake.views import DERIVED_VIEWS, dedup_sql, dedup_view, events_sql

__all__ = ["CATALOG", "DEFAULT_DATABASE", "PRESTO_VIEW_PREFIX", "PRESTO_VIEW_SUFFIX", "TranspileError",
           "to_trino", "athena_views", "create_view_statements", "create_database_statement",
           "setup_statements", "setup_script", "script_statements", "presto_type", "hive_type",
           "view_columns", "presto_view_text", "view_table_input", "view_table_inputs"]

CATALOG = "awsdatacatalog"
DEFAULT_DATABASE = "doclake"
PRESTO_VIEW_PREFIX = "/* Presto View: "
PRESTO_VIEW_SUFFIX = " */"

# Units Trino's date_diff accepts. Millisecond is the finest: Athena timestamps have no more.
_TRINO_DATE_DIFF_UNITS = ("millisecond", "second", "minute", "hour", "day", "week", "month",
                          "quarter", "year")
_ZONED = {exp.DataType.Type.TIMESTAMPTZ, exp.DataType.Type.TIMESTAMPLTZ}


class TranspileError(ValueError):
    """A view uses DuckDB SQL that has no faithful Athena (Trino) form."""


def _fix_for_athena(node: exp.Expression) -> exp.Expression:
    if isinstance(node, exp.DateDiff):
        unit = (node.unit.name if node.unit else "day").lower()
        if unit not in _TRINO_DATE_DIFF_UNITS:
            raise TranspileError(f"date_diff unit {unit!r} does not exist in Athena")
        start, end = node.expression, node.this
        if unit != "millisecond":  # keep DuckDB's meaning: boundaries crossed, not whole units
            start = exp.Anonymous(this="date_trunc", expressions=[exp.Literal.string(unit), start])
            end = exp.Anonymous(this="date_trunc", expressions=[exp.Literal.string(unit), end])
        return exp.Anonymous(this="date_diff", expressions=[exp.Literal.string(unit), start, end])
    if (isinstance(node, exp.Add) and isinstance(node.expression, exp.Anonymous)
            and node.expression.name.lower() == "to_milliseconds"):
        # DuckDB's ``t + to_milliseconds(n)`` (lake.views.stage_timings_sql) is Trino's
        # ``date_add('millisecond', n, t)``; sqlglot would keep the DuckDB form.
        return exp.Anonymous(this="date_add", expressions=[
            exp.Literal.string("millisecond"), node.expression.expressions[0], node.this])
    if isinstance(node, exp.DataType) and node.this in _ZONED:
        return exp.DataType.build("TIMESTAMP")
    if isinstance(node, exp.AtTimeZone) and node.args["zone"].name.upper() == "UTC":
        # DuckDB's TIMESTAMPTZ -> TIMESTAMP in UTC (lake.views.utc_timestamp); Athena's Parquet
        # reader already gives that TIMESTAMP, and AT TIME ZONE would make it zoned again.
        return node.this
    return node


def to_trino(duckdb_sql: str) -> str:
    """One DuckDB SELECT as Athena engine v3 SQL; raises ``TranspileError`` when it cannot.

    The output is parsed back in the Trino dialect before it is returned, so a statement that
    Trino's grammar rejects never reaches the catalog.
    """
    tree = sqlglot.parse_one(duckdb_sql, read="duckdb", error_level=ErrorLevel.RAISE)
    tree = tree.transform(_fix_for_athena)
    sql = tree.sql(dialect="trino", pretty=True, unsupported_level=ErrorLevel.RAISE)
    back = sqlglot.parse_one(sql, read="trino", error_level=ErrorLevel.RAISE)
    if back.find(exp.Qualify):
        raise TranspileError("QUALIFY survived the transpile; Trino has no QUALIFY")
    return sql


def athena_views() -> dict[str, str]:
    """Every view as Athena SQL, keyed by name, in dependency order (create in this order).

    ``ev_<type>`` first (over the Glue tables ``raw_<type>``), then ``events``, then the contract
    and derived views in ``lake.views.DERIVED_VIEWS`` order.
    """
    views = {dedup_view(t): to_trino(dedup_sql(t)) for t in EVENT_TYPES}
    views["events"] = to_trino(events_sql())
    for name, sql in DERIVED_VIEWS.items():
        views[name] = to_trino(sql)
    return views


def create_view_statements(database: str | None = None) -> list[str]:
    """``CREATE OR REPLACE VIEW`` for every view, in dependency order, for Athena to run."""
    qualifier = f"{check_name(database)}." if database else ""
    return [f"CREATE OR REPLACE VIEW {qualifier}{check_name(name)} AS\n{sql}"
            for name, sql in athena_views().items()]


def _qualified(sql: str, database: str) -> str:
    """A view's Trino SQL with every table it reads named in ``database`` (CTEs excepted), so
    the statement means the same whatever database the client's session is in."""
    tree = sqlglot.parse_one(sql, read="trino", error_level=ErrorLevel.RAISE)
    ctes = {cte.alias for cte in tree.find_all(exp.CTE)}
    for table in tree.find_all(exp.Table):
        if not table.args.get("db") and table.name not in ctes:
            table.set("db", exp.to_identifier(database))
    return tree.sql(dialect="trino", pretty=True)


def create_database_statement(database: str = DEFAULT_DATABASE) -> str:
    """Athena's ``CREATE DATABASE IF NOT EXISTS``, with the comment and ``schema_version`` that
    ``lake.glue.database_input`` gives the Glue API."""
    wanted = database_input(database)
    properties = ", ".join(f"'{k}'='{v}'" for k, v in wanted["Parameters"].items())
    return (f"CREATE DATABASE IF NOT EXISTS {wanted['Name']}\n"
            f"COMMENT '{wanted['Description']}'\n"
            f"WITH DBPROPERTIES ({properties})")


def setup_statements(bucket: str, prefix: str = "", *, database: str = DEFAULT_DATABASE,
                     projection_start: str = DEFAULT_PROJECTION_START) -> list[str]:
    """Every statement that sets the lake up in Athena, in the order they must run, each
    without its ``;``: ``CREATE DATABASE``, one ``CREATE EXTERNAL TABLE`` per event type
    (partition projection on ``dt``, a DATE), then every view, each reading only what came
    before it. Every name is qualified with ``database``: no statement depends on the
    session's current database. ``doclake lake views --dialect athena`` prints exactly these
    (``setup_script``); ``doclake aws`` runs exactly these. No statement holds a ``;`` and no
    line of one starts with ``--`` (``script_statements`` relies on both)."""
    check_name(database)
    statements = [create_database_statement(database)]
    statements += create_table_statements(bucket, prefix, database=database,
                                          projection_start=projection_start)
    statements += [f"CREATE OR REPLACE VIEW {database}.{check_name(name)} AS\n"
                   f"{_qualified(sql, database)}" for name, sql in athena_views().items()]
    return statements


def setup_script(bucket: str, prefix: str = "", *, database: str = DEFAULT_DATABASE,
                 projection_start: str = DEFAULT_PROJECTION_START) -> str:
    """``setup_statements`` as one printable script: a header of ``--`` lines saying what it
    creates and how to run it, then each statement followed by ``;`` and a blank line."""
    statements = setup_statements(bucket, prefix, database=database,
                                  projection_start=projection_start)
    tables = sum(s.startswith("CREATE EXTERNAL TABLE") for s in statements)
    views = sum(s.startswith("CREATE OR REPLACE VIEW") for s in statements)
    header = [
        f"-- doclake: the Athena set-up of the lake {lake_uri(bucket, prefix)}",
        f"-- event schema version {SCHEMA_VERSION}; {len(statements)} statements, in the order "
        "they must run:",
        f"--   1 CREATE DATABASE ({database}), {tables} CREATE EXTERNAL TABLE (raw_<event type>, "
        f"partition projection on dt from {projection_start}), {views} CREATE OR REPLACE VIEW.",
        "-- Athena runs one statement per query: drop these -- lines, split on ';' at the end "
        "of a line,",
        "-- and run each statement after the one before it has succeeded (docs/athena.md shows "
        "the loop).",
        "-- Running it again is safe: IF NOT EXISTS keeps the tables, OR REPLACE rewrites the "
        "views.",
    ]
    return "\n".join(header) + "\n\n" + "".join(f"{s};\n\n" for s in statements)


def script_statements(script: str) -> list[str]:
    """The statements of a ``setup_script``: its ``--`` lines dropped, split on a ``;`` that
    ends a line (the loop docs/athena.md shows, as a function)."""
    body = "\n".join(line for line in script.splitlines() if not line.startswith("--"))
    return [s.strip() for s in body.split(";\n") if s.strip()]


# --- column types ------------------------------------------------------------------------------

_PRESTO_SCALARS = {
    "VARCHAR": "varchar",
    "BIGINT": "bigint",
    "HUGEINT": "bigint",  # DuckDB widens sum(bigint) to HUGEINT; Trino keeps bigint
    "INTEGER": "integer",
    "SMALLINT": "smallint",
    "TINYINT": "tinyint",
    "DOUBLE": "double",
    "FLOAT": "real",
    "BOOLEAN": "boolean",
    "DATE": "date",
    "TIMESTAMP": "timestamp(3)",  # UTC, as every view shows it (lake.views.utc_timestamp)
    # The raw Parquet columns (UTC instants): Glue declares them ``timestamp``, which Athena
    # reads as UTC. A view never has one (``view_columns`` refuses it).
    "TIMESTAMP WITH TIME ZONE": "timestamp(3)",
    "TIMESTAMPTZ": "timestamp(3)",
}
_ZONED_NAMES = ("TIMESTAMP WITH TIME ZONE", "TIMESTAMPTZ")

_HIVE_SCALARS = {
    "varchar": "string",
    "bigint": "bigint",
    "integer": "int",
    "smallint": "smallint",
    "tinyint": "tinyint",
    "double": "double",
    "real": "float",
    "boolean": "boolean",
    "date": "date",
    "timestamp(3)": "timestamp",
}


def presto_type(duckdb_type: str) -> str:
    """A DuckDB column type as the Trino type a Presto view declares; unknown types raise.

    Raising (rather than guessing ``varchar``) makes a new view with an unmapped type fail the
    tests instead of producing a view Athena reports as stale.
    """
    text = duckdb_type.strip().upper()
    if text.endswith("[]"):
        return f"array({presto_type(text[:-2])})"
    if text.startswith("DECIMAL(") and text.endswith(")"):
        return text.lower().replace(" ", "")
    try:
        return _PRESTO_SCALARS[text]
    except KeyError:
        raise TypeError(f"no Athena type for DuckDB type {duckdb_type!r}") from None


def hive_type(presto: str) -> str:
    """A Trino type as the Hive type Glue shows in the view's storage descriptor."""
    if presto.startswith("array(") and presto.endswith(")"):
        return f"array<{hive_type(presto[6:-1])}>"
    if presto.startswith("decimal("):
        return presto
    try:
        return _HIVE_SCALARS[presto]
    except KeyError:
        raise TypeError(f"no Hive type for Trino type {presto!r}") from None


@functools.lru_cache(maxsize=1)
def _duckdb_view_columns() -> dict[str, tuple[tuple[str, str], ...]]:
    from lake.catalog import connect

    with tempfile.TemporaryDirectory(prefix="doclake-empty-lake-") as root:
        con = connect(root)
        try:
            return {
                name: tuple((row[0], row[1]) for row in
                            con.sql(f"DESCRIBE SELECT * FROM {name}").fetchall())
                for name in athena_views()
            }
        finally:
            con.close()


def view_columns() -> dict[str, list[tuple[str, str]]]:
    """Each view's columns as (name, Trino type), from DuckDB views over an empty lake.

    A zoned timestamp in a view raises: DuckDB would show it with a zone and Athena without,
    and the views promise one type, ``TIMESTAMP`` in UTC, in both (``lake.views.utc_timestamp``).
    """
    found = _duckdb_view_columns()
    for name, cols in found.items():
        zoned = [col for col, kind in cols if kind.upper() in _ZONED_NAMES]
        if zoned:
            raise TypeError(f"view {name}: {', '.join(zoned)} zoned in DuckDB but not in "
                            "Athena; select it through lake.views.utc_timestamp")
    return {name: [(col, presto_type(kind)) for col, kind in cols]
            for name, cols in found.items()}


# --- Glue view definitions ---------------------------------------------------------------------


def presto_view_text(sql: str, columns: list[tuple[str, str]], database: str, *,
                     catalog: str = CATALOG, owner: str | None = None) -> str:
    """The ``ViewOriginalText`` Athena writes: a comment wrapping base64 JSON of the view."""
    definition: dict[str, Any] = {
        "originalSql": sql,
        "catalog": catalog,
        "schema": database,
        "columns": [{"name": name, "type": kind} for name, kind in columns],
        "runAsInvoker": False,
        "properties": {},
    }
    if owner:
        definition["owner"] = owner
    blob = base64.b64encode(json.dumps(definition, separators=(",", ":")).encode()).decode()
    return f"{PRESTO_VIEW_PREFIX}{blob}{PRESTO_VIEW_SUFFIX}"


def view_table_input(name: str, sql: str, columns: list[tuple[str, str]], database: str, *,
                     catalog: str = CATALOG, owner: str | None = None) -> dict[str, Any]:
    """The Glue ``TableInput`` of one Athena view, as Athena's own CREATE VIEW would store it."""
    table: dict[str, Any] = {
        "Name": check_name(name),
        "Description": f"doclake view {name}",
        "TableType": "VIRTUAL_VIEW",
        "Parameters": {
            "presto_view": "true",
            "comment": "Presto View",
            "schema_version": str(SCHEMA_VERSION),
        },
        "ViewOriginalText": presto_view_text(sql, columns, check_name(database),
                                             catalog=catalog, owner=owner),
        "ViewExpandedText": "/* Presto View */",
        "PartitionKeys": [],
        "StorageDescriptor": {
            "Columns": [{"Name": col, "Type": hive_type(kind)} for col, kind in columns],
            "Location": "",
            "SerdeInfo": {},
            "Compressed": False,
            "NumberOfBuckets": 0,
            "StoredAsSubDirectories": False,
        },
    }
    if owner:
        table["Owner"] = owner
    return table


def view_table_inputs(database: str, *, owner: str | None = None) -> dict[str, dict[str, Any]]:
    """The ``TableInput`` of every view, keyed by name, in dependency order."""
    types = view_columns()
    return {name: view_table_input(name, sql, types[name], database, owner=owner)
            for name, sql in athena_views().items()}
