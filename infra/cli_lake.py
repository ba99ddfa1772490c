"""``doclake lake ...``: compaction, replay check and data-quality check."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

lake_app = typer.Typer(no_args_is_help=True, help="Maintain and verify the event lake.")

HomeOption = Annotated[Path | None, typer.Option("--home", help="State folder "
                       "(default $DOCLAKE_HOME, else ./.doclake).", show_default=False)]


def _settings(home: Path | None):
    from infra.settings import Settings

    return Settings(home=home) if home is not None else Settings()


@lake_app.command()
def compact(
    home: HomeOption = None,
    event_type: Annotated[list[str] | None, typer.Option("--event-type",
                          help="Only these event types (repeatable).")] = None,
    target_rows: Annotated[int, typer.Option(help="Most rows per compacted file.")] = 1_000_000,
    output_format: Annotated[str, typer.Option("--format", help="table|json")] = "table",
) -> None:
    """Rewrite each partition's small files into large ones; safe to interrupt or run live."""
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
    from infra.local.jobstore import SqliteJobStore
    from lake.replay import diff
    from lake.replay import replay as rebuild

    settings = _settings(home)
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
def check(home: HomeOption = None) -> None:
    """Run the data-quality suites over the tables; exit 1 if an expectation fails."""
    from evals.quality import check_lake, to_events
    from lake.writer import ParquetEventWriter

    settings = _settings(home)
    report = check_lake(settings.lake)
    ParquetEventWriter.for_uri(settings.lake).write(to_events(report))
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
