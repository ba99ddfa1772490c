"""Athena from printed SQL alone: `doclake lake views --dialect athena` prints a header, CREATE
DATABASE, the raw tables' DDL with partition projection, then the views, in an order that runs;
the loop in docs/athena.md runs exactly those statements; a date filter on a view reaches the
partition key as a range, uncast."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import sqlglot
from sqlglot import exp
from sqlglot.optimizer.qualify import qualify
from typer.testing import CliRunner

from infra.cli.main import app
from lake.athena import script_statements, setup_script, setup_statements
from lake.events import EVENT_TYPES
from lake.glue import glue_columns, raw_table_input

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[1]


def _printed(*extra: str) -> str:
    result = runner.invoke(app, ["lake", "views", "--dialect", "athena", *extra])
    assert result.exit_code == 0, result.output
    return result.output


def test_the_script_is_a_header_then_the_generator_statements_in_order():
    printed = _printed("--bucket", "my-lake", "--prefix", "prod", "--database", "lake_x")
    assert printed == setup_script("my-lake", "prod", database="lake_x")
    header = printed.split("\n\n", 1)[0].splitlines()
    assert header and all(line.startswith("-- ") for line in header)
    statements = script_statements(printed)
    assert statements == setup_statements("my-lake", "prod", database="lake_x")
    assert statements[0].startswith("CREATE DATABASE IF NOT EXISTS lake_x")
    assert f"{len(statements)} statements" in header[1]
    for statement in statements:  # what the loop's split relies on
        assert ";" not in statement and not any(line.startswith("--")
                                                for line in statement.splitlines())
        sqlglot.parse_one(statement, read="athena")


def test_tables_then_views_each_reading_only_what_came_before_in_its_database():
    statements = setup_statements("my-lake", "prod", database="lake_x")
    tables = [s for s in statements if s.startswith("CREATE EXTERNAL TABLE")]
    views = [s for s in statements if s.startswith("CREATE OR REPLACE VIEW")]
    assert len(tables) == len(EVENT_TYPES) and 1 + len(tables) + len(views) == len(statements)
    assert statements[1:1 + len(tables)] == tables  # every table before any view
    defined: set[str] = set()
    for table in tables:
        tree = sqlglot.parse_one(table, read="athena")
        assert tree.this.this.db == "lake_x"
        name = tree.this.this.name
        columns = [(c.name, c.args["kind"].sql("hive").lower()) for c in tree.this.expressions]
        assert columns == [(c["Name"], c["Type"].lower()) for c in
                           glue_columns(name.removeprefix("raw_"))]
        expected = raw_table_input(name.removeprefix("raw_"), "my-lake", "prod")
        assert f"LOCATION '{expected['StorageDescriptor']['Location']}'" in table
        for key, value in expected["Parameters"].items():
            if key.startswith("projection.") or key == "storage.location.template":
                assert f"'{key}'='{value}'" in table
        assert "PARTITIONED BY (`dt` date)" in table and "'projection.dt.type'='date'" in table
        defined.add(name)
    for view in views:
        name = re.match(r"CREATE OR REPLACE VIEW lake_x\.(\w+) AS", view).group(1)
        tree = sqlglot.parse_one(view.split(" AS\n", 1)[1], read="trino")
        ctes = {cte.alias for cte in tree.find_all(exp.CTE)}
        read = {t for t in tree.find_all(exp.Table) if t.name not in ctes}
        assert {t.db for t in read} == {"lake_x"}, name  # no dependence on the session
        assert {t.name for t in read} <= defined, (name, {t.name for t in read} - defined)
        defined.add(name)
    assert {"jobs", "pages", "daily_costs", "events"} <= defined


def test_a_date_filter_on_a_view_reaches_the_raw_partition_key_as_a_plain_comparison():
    """Follow ``dt`` from a view down to ``raw_<type>``: at every step it is the column itself,
    never computed (no CAST, no function), so Trino sees ``dt >= DATE '...'`` on the partition
    key, a domain partition projection filters its projected days by."""
    statements = {re.match(r"CREATE OR REPLACE VIEW doclake\.(\w+)", s).group(1):
                  s.split(" AS\n", 1)[1]
                  for s in setup_statements("b-lake") if s.startswith("CREATE OR REPLACE VIEW")}
    for name in ("ev_job_created", "ev_page_read"):
        tree = qualify(sqlglot.parse_one(statements[name], read="trino"), dialect="trino",
                       validate_qualify_columns=False)
        for alias in tree.find_all(exp.Alias):
            if alias.alias == "dt":
                assert isinstance(alias.this, exp.Column), alias.sql("trino")
        assert not [c for c in tree.find_all(exp.Cast) if c.this.name == "dt"]


def test_the_loop_in_the_docs_runs_every_statement_once_in_order(tmp_path, monkeypatch):
    text = (ROOT / "docs" / "athena.md").read_text(encoding="utf-8")
    loops = [b for b in re.findall(r"```python\n(.*?)```", text, re.S)
             if "start_query_execution" in b]
    assert len(loops) == 1, "docs/athena.md shows one loop over athena.sql"
    (tmp_path / "athena.sql").write_text(setup_script("my-lake"), encoding="utf-8")
    sent: list[str] = []
    fake = types.ModuleType("awswrangler")
    fake.athena = types.SimpleNamespace(
        start_query_execution=lambda sql, **kwargs: sent.append(sql) or {"Status": "SUCCEEDED"})
    monkeypatch.setitem(sys.modules, "awswrangler", fake)
    monkeypatch.chdir(tmp_path)
    exec(compile(loops[0], "docs/athena.md", "exec"), {})
    assert sent == setup_statements("my-lake")


def test_athena_needs_the_bucket():
    result = runner.invoke(app, ["lake", "views", "--dialect", "athena"])
    assert result.exit_code == 2 and "--bucket" in result.output
