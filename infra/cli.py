"""The ``doclake`` command: composes the local runtime, the lake and the reports."""

from __future__ import annotations

import asyncio
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from extract.messages import QUEUES
from extract.state import JobStatus
from infra.bench import bench_app
from infra.cli_aws import aws_app
from infra.cli_lake import lake_app
from infra.local.runtime import LocalRuntime
from infra.output import print_rows
from infra.settings import Settings
from ingest.planner import IngestOutcome, expand_paths

app = typer.Typer(no_args_is_help=True, add_completion=False,
                  help="Turn documents into searchable text and a queryable event lake.")
app.add_typer(lake_app, name="lake")
app.add_typer(bench_app, name="bench")
app.add_typer(aws_app, name="aws")
console = Console(stderr=True)

INTERRUPTED = 130  # the shell's convention for a run stopped by a signal

HomeOption = Annotated[Path | None, typer.Option("--home", help="State folder "
                       "(default $DOCLAKE_HOME, else ./.doclake).", show_default=False)]


def load_settings(home: Path | None, **overrides) -> Settings:
    values = {k: v for k, v in overrides.items() if v is not None}
    if home is not None:
        values["home"] = home
    return Settings(**values)


@app.command()
def run(
    paths: Annotated[list[Path], typer.Argument(help="Files and folders to process.")],
    home: HomeOption = None,
    reader: Annotated[str, typer.Option(help="auto|text (ocr, gemini, simulated: later)")] = "auto",
    fields: Annotated[str, typer.Option(help="nda|none|MODULE:CLASS")] = "none",
    strategy: Annotated[str, typer.Option(help="rules|single-pass|agentic")] = "rules",
    concurrency: Annotated[int | None, typer.Option(help="Messages handled at once.")] = None,
    password: Annotated[str | None, typer.Option(help="Password for encrypted PDFs.")] = None,
) -> None:
    """Ingest files and folders and process them to a terminal state."""
    if reader not in ("auto", "text"):
        raise typer.BadParameter(f"reader {reader!r} is not available in this build; use auto or text")
    if fields != "none":
        raise typer.BadParameter("field extraction is not available in this build; use --fields none")
    if strategy not in ("rules", "single-pass", "agentic"):
        raise typer.BadParameter(f"strategy {strategy!r}: use rules, single-pass or agentic")
    settings = load_settings(home, concurrency=concurrency, password=password)
    try:
        files = expand_paths(paths)
    except FileNotFoundError as error:
        console.print(f"[red]error:[/red] {error}")
        raise typer.Exit(2) from None
    runtime = LocalRuntime(settings)
    started = time.perf_counter()
    runtime.cpu.warm()
    runtime.recover()  # what an earlier, interrupted run left behind
    ingested = runtime.planner().ingest_many(files)
    job_ids = sorted({i.job_id for i in ingested})

    with _progress() as progress:
        documents = progress.add_task("documents", total=len(job_ids))
        pages = progress.add_task("pages", total=None)

        def done() -> bool:
            """Checked after each poll: one read of the jobs serves the bar and the answer."""
            jobs = runtime.store.list_jobs(job_ids)
            progress.update(documents, completed=sum(j.status.terminal for j in jobs))
            total, read = runtime.store.page_progress(job_ids)
            progress.update(pages, total=total or None, completed=read)
            return all(j.settled for j in jobs)

        stats = asyncio.run(runtime.process(done))
    elapsed = time.perf_counter() - started
    _print_summary(runtime, ingested, job_ids, elapsed)
    if stats.interrupted:
        unsettled = sum(not j.settled for j in runtime.store.list_jobs(job_ids))
        console.print(f"[yellow]interrupted:[/yellow] {unsettled} documents not finished; "
                      "`doclake worker --until-idle` (or the same `doclake run`) finishes them")
        raise typer.Exit(INTERRUPTED)


def _progress() -> Progress:
    return Progress(TextColumn("{task.description:>10}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=console, transient=False,
                    disable=not console.is_terminal)


def _print_summary(runtime: LocalRuntime, ingested, job_ids, elapsed: float) -> None:
    jobs = runtime.store.list_jobs(job_ids)
    succeeded = [j for j in jobs if j.status is JobStatus.SUCCEEDED]
    failed = [j for j in jobs if j.status is JobStatus.FAILED]
    pages = sum(j.pages or 0 for j in succeeded)
    unchanged = sum(1 for i in ingested if i.outcome is IngestOutcome.UNCHANGED)
    out = Console()
    out.print(f"documents {len(ingested)}  (new jobs {len(ingested) - unchanged}, "
              f"unchanged {unchanged})")
    out.print(f"succeeded {len(succeeded)}  failed {len(failed)}  pages {pages}  "
              f"time {elapsed:.1f} s  ({pages / elapsed if elapsed else 0:.1f} pages/s)")
    if failed:
        table = Table("reason", "documents", "examples", title="failed")
        reasons = Counter(j.failure_reason or "unknown" for j in failed)
        for reason, count in reasons.most_common():
            names = [j.source_name for j in failed if (j.failure_reason or "unknown") == reason]
            table.add_row(reason, str(count), ", ".join(names[:3]) + (" …" if len(names) > 3 else ""))
        out.print(table)


@app.command()
def worker(
    home: HomeOption = None,
    until_idle: Annotated[bool, typer.Option("--until-idle", help="Stop when nothing is left.")]
    = False,
    password: Annotated[str | None, typer.Option(help="Password for encrypted PDFs.")] = None,
) -> None:
    """Resume and drain pending work (after a crash, say)."""
    settings = load_settings(home, password=password)
    runtime = LocalRuntime(settings)
    recovered = runtime.recover()
    console.print(f"recovered: {recovered}")
    started = time.perf_counter()
    stats = asyncio.run(runtime.process(runtime.idle if until_idle else (lambda: False)))
    console.print(f"handled {stats.messages} messages ({stats.retries} retries, "
                  f"{stats.dead_letters} dead letters) in {time.perf_counter() - started:.1f} s")
    if stats.interrupted and until_idle:
        raise typer.Exit(INTERRUPTED)


@app.command()
def status(home: HomeOption = None) -> None:
    """Jobs by status and queue depths."""
    runtime = LocalRuntime(load_settings(home))
    all_jobs = runtime.store.list_jobs()
    counts = Counter(j.status.value for j in all_jobs)
    out = Console()
    jobs = Table("status", "jobs", title="jobs")
    for value in JobStatus:
        jobs.add_row(value.value, str(counts.get(value.value, 0)))
    out.print(jobs)
    reasons = Counter(j.failure_reason or "unknown" for j in all_jobs
                      if j.status is JobStatus.FAILED)
    if reasons:
        failed = Table("failure reason", "jobs", title="failed jobs")
        for reason, count in reasons.most_common():
            failed.add_row(reason, str(count))
        out.print(failed)
    queues = Table("queue", "visible", "in flight", "dead letter", title="queues")
    for name in QUEUES:
        depth = runtime.queue.depth(name)
        queues.add_row(name, str(depth.visible), str(depth.in_flight), str(depth.dead_letter))
    out.print(queues)


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="Words to find.")],
    home: HomeOption = None,
    limit: Annotated[int, typer.Option(help="Most hits shown.")] = 10,
) -> None:
    """Full-text search over indexed documents: which document, which page."""
    runtime = LocalRuntime(load_settings(home))
    hits = runtime.index.search(query, limit=limit)
    if not hits:
        Console().print("no match")
        return
    table = Table("document", "page", "snippet", "document_id")
    for hit in hits:
        table.add_row(hit.source_name, str(hit.page_number), hit.snippet, hit.document_id)
    Console().print(table)


@app.command()
def sql(
    query: Annotated[str | None, typer.Argument(help="SQL over the lake's views.")] = None,
    home: HomeOption = None,
    output_format: Annotated[str, typer.Option("--format", help="table|csv|json")] = "table",
) -> None:
    """Query the lake with DuckDB; no query opens an interactive prompt."""
    from lake.catalog import connect

    if output_format not in ("table", "csv", "json"):
        raise typer.BadParameter("--format must be table, csv or json")
    settings = load_settings(home)
    con = connect(settings.lake)
    if query is not None:
        if not _run_sql(con, query, output_format):
            raise typer.Exit(1)
        return
    console.print("doclake sql: DuckDB over the lake's views; end a statement with ';', "
                  "Ctrl-D to quit")
    buffer = ""
    for line in sys.stdin:
        buffer += line
        if buffer.strip().endswith(";"):
            _run_sql(con, buffer, output_format)  # an interactive prompt reports and goes on
            buffer = ""


def _run_sql(con, query: str, output_format: str) -> bool:
    """Run and print one statement; False (with the error printed) if DuckDB refused it."""
    import duckdb

    try:
        table = con.sql(query).to_arrow_table()
    except duckdb.Error as error:
        console.print(f"[red]error:[/red] {error}")
        return False
    print_rows(table, output_format)
    return True


@app.callback()
def main() -> None:
    """doclake: documents in, searchable text and an event lake out."""


if __name__ == "__main__":  # pragma: no cover
    app()
