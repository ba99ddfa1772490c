"""Athena from printed SQL alone (issue 26, finding 5): `doclake lake views --dialect athena`
prints the raw tables' DDL with partition projection, then the views, in an order that runs."""

from __future__ import annotations

import re

import sqlglot
from sqlglot import exp
from typer.testing import CliRunner

from infra.cli.main import app
from lake.events import EVENT_TYPES
from lake.glue import glue_columns, raw_table_input

runner = CliRunner()


def _statements(*extra: str) -> list[str]:
    result = runner.invoke(app, ["lake", "views", "--dialect", "athena", *extra])
    assert result.exit_code == 0, result.output
    return [s.strip() for s in result.output.split(";\n") if s.strip()]


def test_tables_then_views_each_reading_only_what_came_before():
    statements = _statements("--bucket", "my-lake", "--prefix", "prod")
    tables = [s for s in statements if s.startswith("CREATE EXTERNAL TABLE")]
    views = [s for s in statements if s.startswith("CREATE OR REPLACE VIEW")]
    assert len(tables) == len(EVENT_TYPES) and len(tables) + len(views) == len(statements)
    assert statements[:len(tables)] == tables  # every table before any view
    defined: set[str] = set()
    for table in tables:
        tree = sqlglot.parse_one(table.rstrip(";"), read="athena")
        name = tree.this.this.name
        event_type = name.removeprefix("raw_")
        columns = [(c.name, c.args["kind"].sql("hive").lower()) for c in tree.this.expressions]
        assert columns == [(c["Name"], c["Type"].lower()) for c in glue_columns(event_type)]
        expected = raw_table_input(event_type, "my-lake", "prod")
        assert f"LOCATION '{expected['StorageDescriptor']['Location']}'" in table
        for key, value in expected["Parameters"].items():
            if key.startswith("projection.") or key == "storage.location.template":
                assert f"'{key}'='{value}'" in table
        assert "PARTITIONED BY (`dt` string)" in table
        defined.add(name)
    for view in views:
        name = re.match(r"CREATE OR REPLACE VIEW (\w+) AS", view).group(1)
        tree = sqlglot.parse_one(view.split(" AS\n", 1)[1], read="trino")
        ctes = {cte.alias for cte in tree.find_all(exp.CTE)}
        read = {t.name for t in tree.find_all(exp.Table)} - ctes
        assert read <= defined, (name, read - defined)
        defined.add(name)
    assert {"jobs", "pages", "daily_costs", "events"} <= defined


def test_athena_needs_the_bucket():
    result = runner.invoke(app, ["lake", "views", "--dialect", "athena"])
    assert result.exit_code == 2 and "--bucket" in result.output
