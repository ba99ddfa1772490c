"""``doclake lake views``: the lake's tables as plain SQL, for any client to open.

Analysts work in their own DuckDB, a notebook or dbt. The DuckDB statements are exactly the ones
``lake.catalog`` runs (recorded, not rewritten, so the two cannot drift), over the lake's absolute
path; the Athena ones are the transpiled views ``doclake aws catalog`` installs over the Glue
tables. A DuckDB database file holding the views can be written instead of printed.
"""

from __future__ import annotations

from pathlib import Path

from infra.cli.errors import UserError

__all__ = ["DIALECTS", "view_statements", "write_database"]

DIALECTS = ("duckdb", "athena")


class _Recorder:
    """Stands in for a DuckDB connection and keeps the statements it is asked to run."""

    def __init__(self) -> None:
        self.statements: list[str] = []

    def execute(self, sql: str, *args: object) -> _Recorder:
        self.statements.append(sql.strip())
        return self

    def register(self, *args: object) -> None:
        raise UserError("this lake is not a local folder: its DuckDB views read through pyarrow "
                        "and cannot be written as SQL", "use --dialect athena for a lake on S3")


def view_statements(lake: str, dialect: str) -> list[str]:
    """``CREATE OR REPLACE VIEW`` statements, in dependency order, each ending with ``;``."""
    if dialect not in DIALECTS:
        raise UserError(f"--dialect {dialect!r} is not a dialect", f"use {' or '.join(DIALECTS)}")
    if dialect == "athena":  # the views only; `doclake lake views` prints lake.athena.setup_script
        from lake.athena import create_view_statements

        return [f"{s};" for s in create_view_statements()]
    from lake.catalog import define_views

    recorder = _Recorder()
    define_views(recorder, lake if "://" in lake else str(Path(lake).resolve()))
    return [f"{s};" for s in recorder.statements]


def write_database(path: Path, statements: list[str]) -> None:
    """A DuckDB file holding the views (and nothing else: the data stays in the lake)."""
    import duckdb

    if path.exists():
        raise UserError(f"{path} already exists", "choose a new file name, or remove it first")
    con = duckdb.connect(str(path))
    try:
        for statement in statements:
            con.execute(statement)
    finally:
        con.close()
