"""``doclake lake ...``: compaction, replay check and data-quality check."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from infra.cli.errors import at_least

__all__ = ["lake_app", "HomeOption", "compact", "replay", "check", "views"]

lake_app = typer.Typer(no_args_is_help=True, help="Maintain and verify the event lake.")

HomeOption = Annotated[Path | None, typer.Option("--home", help="State folder "
                       "(default $DOCLAKE_HOME, else ./.doclake).", show_default=False)]


def _settings(home: Path | None, access=None):
    """Settings over an existing home (``infra.cli.home``): these commands never create one."""
    from infra.cli.home import Access, open_settings

    return open_settings(home, access or Access.WRITE)


@lake_app.command()
def compact(
    home: HomeOption = None,
    event_type: Annotated[list[str] | None, typer.Option("--event-type",
                          help="Only these event types (repeatable).")] = None,
    target_rows: Annotated[int, typer.Option(callback=at_least(1),
                           help="Most rows per compacted file.")] = 1_000_000,
    output_format: Annotated[str, typer.Option("--format", help="table|json")] = "table",
) -> None:
    """Rewrite each partition's small files into large ones; safe to interrupt or run live."""
    from rich.console import Console

    from lake.compaction import compact as run_compaction

    report = run_compaction(_settings(home).lake, event_types=event_type, target_rows=target_rows)
    if output_format == "json":
        print(json.dumps(report.to_dict()))
    else:
        Console().print(
            f"partitions compacted {len(report.partitions)}  files {report.files_before} -> "
            f"{report.files_after}  rows {report.rows_before} -> {report.rows_after}  "
            f"duplicates dropped {report.duplicates_dropped}  in {report.seconds:.1f} s")
    for error in report.errors:
        Console(stderr=True).print(f"[red]error:[/red] {error}")
    if report.errors:
        raise typer.Exit(1)


@lake_app.command()
def replay(
    home: HomeOption = None,
    check: Annotated[bool, typer.Option("--check", help="Compare with the job store; "
                     "exit 1 on any difference.")] = False,
) -> None:
    """Rebuild job and unit state from the events alone."""
    from rich.console import Console
    from rich.table import Table

    from infra.cli.home import Access
    from infra.local.jobstore import SqliteJobStore
    from lake.replay import diff
    from lake.replay import replay as rebuild

    settings = _settings(home, Access.WRITE if check else Access.READ)
    state = rebuild(settings.lake)
    out = Console()
    out.print(f"replayed {len(state.jobs)} jobs and {len(state.units)} units from the lake")
    if not check:
        return
    store = SqliteJobStore(settings.home / "jobs.db")
    differences = diff(state, store.snapshot())
    if not differences:
        out.print("the job store agrees with the lake: no difference")
        return
    table = Table("entity", "key", "field", "lake", "store", "in flight")
    for d in differences:
        table.add_row(d.entity, d.key, d.field, str(d.lake), str(d.store), str(d.in_flight))
    out.print(table)
    raise typer.Exit(1)


@lake_app.command()
def check(
    home: HomeOption = None,
    output_format: Annotated[str | None, typer.Option("--format", help="table|csv|json "
                             "(default: table on a terminal, csv when piped)")] = None,
    docs: Annotated[bool, typer.Option("--docs", help="Also write great-expectations Data Docs "
                    "(HTML) into the lake folder and print the path of its index page.")] = False,
) -> None:
    """Run the data-quality checkpoint over the tables; exit 1 if an expectation fails."""
    import importlib.util

    from rich.console import Console
    from rich.table import Table

    if importlib.util.find_spec("great_expectations") is None:  # the `check` extra: not in the demo
        from infra.cli.errors import UserError

        raise UserError("`doclake lake check` needs great-expectations, which the runtime install "
                        "(`make demo`, `pip install -e .`) leaves out",
                        "pip install -e '.[check]' (`make test` installs it with the rest)")
    from evals.quality import check_lake, to_events
    from infra.cli.render.output import print_records, resolve_format
    from lake.writer import ParquetEventWriter

    output_format = resolve_format(output_format)
    settings = _settings(home)
    lake = str(settings.lake)
    docs_dir = None
    if docs:  # beside events/ in a local lake; in the home folder for a lake on S3
        docs_dir = Path(settings.home) / "quality" if "://" in lake else Path(lake) / "_quality"
    report = check_lake(lake, docs_dir=docs_dir)
    ParquetEventWriter.for_uri(lake).write(to_events(report))
    if report.docs is not None:  # plain print: a path must not be wrapped or styled
        print(f"data docs: {report.docs}", file=sys.stdout if output_format == "table" else sys.stderr)
    if output_format != "table":
        print_records(("table", "expectation", "ok", "unexpected", "details"),
                      ((r.table, r.expectation, r.success, r.unexpected_count, r.details)
                       for r in report.results), output_format)
        if report.failures:
            raise typer.Exit(1)
        return
    table = Table("table", "expectation", "ok", "unexpected", "details")
    for result in report.results:
        table.add_row(result.table, result.expectation, "yes" if result.success else "[red]NO[/red]",
                      "" if result.unexpected_count is None else str(result.unexpected_count),
                      (result.details or "")[:120] if not result.success else "")
    Console().print(table)
    failed = len(report.failures)
    Console().print(f"{len(report.results) - failed} passed, {failed} failed")
    if failed:
        raise typer.Exit(1)


@lake_app.command()
def views(
    home: HomeOption = None,
    dialect: Annotated[str, typer.Option(help="duckdb|athena")] = "duckdb",
    out: Annotated[Path | None, typer.Option(help="Write a DuckDB database file holding the "
                   "views instead of printing them.")] = None,
    bucket: Annotated[str | None, typer.Option(help="athena: the lake's S3 bucket (the raw "
                      "tables' LOCATION).", show_default=False)] = None,
    prefix: Annotated[str, typer.Option(help="athena: the lake's key prefix in the bucket.")] = "",
    database: Annotated[str, typer.Option(help="athena: the database to create and fill.")]
    = "doclake",
    projection_start: Annotated[str, typer.Option(help="athena: the first day Athena looks "
                                "for (YYYY-MM-DD): the lake's first day.")] = "2025-01-01",
) -> None:
    """The CREATE statements of every table over this lake, for any SQL client. Athena: a
    header, CREATE DATABASE, the raw tables (partition projection), then the views, in an
    order that runs, each statement ending with ';' (docs/athena.md has the loop)."""
    from rich.console import Console

    from infra.cli.home import Access
    from infra.cli.render.lake_views import view_statements, write_database

    if dialect == "athena":
        from infra.cli.errors import UserError
        from lake.athena import setup_script

        if out is not None:
            raise typer.BadParameter("--out writes a DuckDB file: use it with --dialect duckdb")
        if bucket is None:
            raise UserError("--dialect athena needs --bucket: the raw tables' DDL names their "
                            "S3 location", "doclake lake views --dialect athena --bucket BUCKET "
                            "[--prefix PREFIX] > athena.sql")
        try:
            script = setup_script(bucket, prefix, database=database,
                                  projection_start=projection_start)
        except ValueError as error:
            raise UserError(str(error), "a lower-case S3 bucket name and database name; "
                            "--projection-start YYYY-MM-DD") from None
        sys.stdout.write(script)
        return
    statements = view_statements(_settings(home, Access.READ).lake, dialect)
    if out is None:
        print("\n\n".join(statements))
        return
    write_database(out, statements)
    Console(stderr=True).print(f"wrote {len(statements)} views to {out}; open it with "
                               f"duckdb {out}")
