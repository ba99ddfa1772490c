"""The ``doclake`` command: composes the local runtime, the lake and the reports.

Conventions every command follows (later ones inherit them):

- a user's mistake is a ``UserError``: one message naming the value and what is allowed, exit 2
  (``infra.cli.errors``); ``--debug`` shows the traceback instead;
- ``run``, ``worker`` and ``serve`` create the home; commands that read refuse a missing one
  (``infra.cli.home``);
- data goes to stdout in ``--format table|csv|json``, a table only on a terminal
  (``infra.cli.render.output``); progress and notes go to stderr;
- heavy libraries (pyarrow, duckdb, pandas, sqlglot, boto3) are imported inside the commands that
  use them, so ``doclake --help`` and small commands start fast.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from infra.cli.aws import aws_app
from infra.cli.bench import bench_app
from infra.cli.dashboard import dashboard as dashboard_command
from infra.cli.errors import DoclakeGroup, UserError, at_least, set_debug, stderr_console
from infra.cli.evals import evals_app
from infra.cli.fields import fields_app
from infra.cli.home import Access, check_home, load_settings, open_home, open_settings
from infra.cli.lake import lake_app
from infra.cli.narrow import DoclakeApp
from infra.cli.render.output import (
    FormatOption,
    print_object,
    print_records,
    resolve_format,
    terminal_safe,
)
from infra.cli.serve import serve as serve_command
from infra.cli.show import show as show_command
from infra.process_env import settle_native_threads

__all__ = ["app", "INTERRUPTED", "HomeOption", "main", "run", "worker", "status", "search", "sql", "schema"]

if TYPE_CHECKING:
    from infra.local.runtime import LocalRuntime

app = DoclakeApp(cls=DoclakeGroup, no_args_is_help=True, add_completion=False,
                 pretty_exceptions_show_locals=False,
                 context_settings={"help_option_names": ["-h", "--help"]},
                 help="Turn documents into searchable text and a queryable event lake.")
app.add_typer(lake_app, name="lake")
app.add_typer(bench_app, name="bench")
app.add_typer(aws_app, name="aws")
app.add_typer(fields_app, name="fields")
app.command("serve")(serve_command)
app.command("show")(show_command)
app.command("dashboard")(dashboard_command)
app.add_typer(evals_app, name="evals")

INTERRUPTED = 130  # the shell's convention for a run stopped by a signal

HomeOption = Annotated[Path | None, typer.Option("--home", help="State folder "
                       "(default $DOCLAKE_HOME, else ./.doclake).", show_default=False)]


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        print(f"doclake {version('doclake')}")
        raise typer.Exit()


@app.callback()
def main(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks instead of short "
                     "error messages (also DOCLAKE_DEBUG=1).")] = False,
    show_version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                            help="Print the version and exit.")] = False,
) -> None:
    """doclake: documents in, searchable text and an event lake out."""
    set_debug(debug)
    settle_native_threads()  # before any command imports numpy (with pyarrow)


# --- run and worker -----------------------------------------------------------------------------


@app.command()
def run(
    paths: Annotated[list[Path], typer.Argument(help="Files and folders to process.")],
    home: HomeOption = None,
    reader: Annotated[str, typer.Option(help="Who reads pages: auto (text layer, then OCR), "
                                        "text, ocr, gemini (DOCLAKE_GEMINI_API_KEY), or "
                                        "simulated (a priced stand-in, nothing billed).")]
    = "auto",
    fields: Annotated[str, typer.Option(help="Structured fields to extract: nda (the built-in NDA "
                                        "schema, offline), MODULE:CLASS, or none to skip.")] = "nda",
    strategy: Annotated[str, typer.Option(help="rules|single-pass|agentic")] = "rules",
    concurrency: Annotated[int | None, typer.Option(
        callback=at_least(1), show_default=False,
        help="Messages handled at once (default 64, or DOCLAKE_CONCURRENCY).")] = None,
    password: Annotated[str | None, typer.Option(
        help="Password for encrypted files. Shown in the process list: prefer --ask-password or "
             "DOCLAKE_PASSWORD.")] = None,
    ask_password: Annotated[bool, typer.Option("--ask-password", help="Prompt for the password "
                            "(not echoed, not in the process list).")] = False,
    passwords: Annotated[Path | None, typer.Option(
        help="A CSV or JSON file mapping a file's name (or its path relative to a folder given) "
             "to its own password; used before --password, never stored in the lake.")] = None,
    retry_failed: Annotated[bool, typer.Option("--retry-failed", help="Process again files whose "
                            "identical bytes failed before (from the stored copy).")] = False,
) -> None:
    """Ingest files and folders and process them to a terminal state."""
    from infra.local import forkserver

    forkserver.start()  # the workers' fork server imports while this process does
    from infra.cli.preflight import check_models_can_run, check_reader_name, fields_request
    from infra.settings import Settings
    from ingest.walk import walk_sources

    check_reader_name(reader)
    schema_name = fields_request(fields, strategy)
    if ask_password:
        password = typer.prompt("Password", hide_input=True, err=True)
    try:
        walk = walk_sources(paths, allow_hard_links=Settings().allow_hard_links)
    except FileNotFoundError as error:
        raise UserError(str(error), "check the path; nothing was ingested") from None
    sources = walk.files
    if (skipped := walk.skipped_summary()) is not None:
        stderr_console().print(f"[yellow]warning:[/yellow] {terminal_safe(skipped)}")
    files = [file for file, _ in sources]
    if not files:
        stderr_console().print(f"[yellow]warning:[/yellow] no files in {', '.join(map(str, paths))}; "
                      "nothing to do (hidden files are skipped)")
        return
    per_file = _per_file_passwords(passwords, files, paths)
    settings = load_settings(home, options={"concurrency": "--concurrency"},
                             concurrency=concurrency, password=password, reader=reader)
    check_models_can_run(reader, schema_name, strategy, settings)
    open_home(settings, Access.CREATE)  # after every check: a refused run leaves no home
    from infra.cli.render.run_report import RunReport, progress_bar
    from infra.local.runtime import LocalRuntime

    runtime = LocalRuntime(settings)
    started = time.perf_counter()
    runtime.cpu.warm(rules=schema_name is not None and strategy == "rules")
    unfinished_before = runtime.store.unfinished_job_ids()  # before any worker finishes one
    runtime.recover()  # what an earlier, interrupted run left behind
    # Workers start on the first documents while the rest are still being stored.
    def request_fields(store, batch) -> None:  # on the ingest thread, as each batch is planned
        store.request_fields([i.job_id for i in batch], schema_name, strategy)

    ingest = runtime.ingest_in_background(
        files, retry_failed=retry_failed, passwords=per_file, source_paths=dict(sources),
        after_batch=request_fields if schema_name is not None else None,
        fields=(schema_name, strategy) if schema_name is not None else None)
    state: dict = {}
    with progress_bar(stderr_console()) as bar:

        def done() -> bool:
            if not ingest.finished:
                return False
            if "tracker" not in state:
                if schema_name is not None:  # every batch asked already: this only nudges
                    runtime.store.request_fields([i.job_id for i in ingest.result()],
                                                 schema_name, strategy)
                    runtime.nudge()
                state["report"] = RunReport.start(runtime.store, ingest.result(), started,
                                                  unfinished_before)
                state["tracker"] = bar.tracker(runtime.store, state["report"],
                                               activity=runtime.activity.describe)
            return state["tracker"]()

        try:
            stats = _process(runtime, done)
        finally:
            ingest.stop()
    report = state.get("report") or RunReport.start(runtime.store, ingest.result(), started,
                                                    unfinished_before)
    report.objects_root = Path(settings.home) / "objects"
    try:
        report.finish(runtime.store, interrupted=stats.interrupted)
    finally:
        runtime.close()  # flushes the run's events: the failure messages below are read from them
    if report.summary["failure_reasons"]:
        from infra.cli.render.run_report import failure_messages

        examples = [r["example_job_id"] for r in report.summary["failure_reasons"]]
        report.add_messages(failure_messages(str(settings.lake), examples))
    from rich.console import Console

    # Piped: one line a fact, never wrapped; on a terminal, wrapped at words (never mid-word).
    report.print(Console(highlight=False, soft_wrap=not sys.stdout.isatty()),
                 home=str(settings.home))
    if stats.interrupted:
        raise typer.Exit(INTERRUPTED)


def _per_file_passwords(table_path: Path | None, files: list[Path],
                        roots: list[Path]) -> dict[Path, str] | None:
    """``--passwords``: read the table and match it to the files; a key matching no file is
    warned about (by name only, never its password)."""
    if table_path is None:
        return None
    from ingest.passwords import load_passwords, passwords_for

    try:
        table = load_passwords(table_path)
    except (OSError, ValueError) as error:
        raise UserError(f"--passwords: {error}", "give a CSV (name,password) or a JSON object "
                        "mapping file names or relative paths to passwords") from None
    found, unmatched = passwords_for(files, roots, table)
    if unmatched:
        shown = ", ".join(unmatched[:5]) + (" ..." if len(unmatched) > 5 else "")
        stderr_console().print(f"[yellow]warning:[/yellow] --passwords names {len(unmatched)} file(s) not "
                      f"among those given: {shown}")
    return found


def _process(runtime: LocalRuntime, done):
    """Run until ``done()``; a Ctrl-C that lands before the runtime's own signal handlers are
    installed (or after they are removed) still ends in a summary, not a traceback."""
    import asyncio

    try:
        # A run that ends on its own merges its small event files (lake, issue 7) before its
        # workers stop; never raises.
        return asyncio.run(runtime.process(done, compact_lake=True))
    except KeyboardInterrupt:
        runtime.stats.interrupted = True
        return runtime.stats


@app.command()
def worker(
    home: HomeOption = None,
    until_idle: Annotated[bool, typer.Option("--until-idle", help="Stop when nothing is left.")]
    = False,
    password: Annotated[str | None, typer.Option(
        help="Password for encrypted files (prefer --ask-password or DOCLAKE_PASSWORD).")] = None,
    ask_password: Annotated[bool, typer.Option("--ask-password", help="Prompt for the password "
                            "(not echoed, not in the process list).")] = False,
    output_format: FormatOption = None,
) -> None:
    """Resume and drain pending work (after a crash, say)."""
    output_format = resolve_format(output_format)
    if ask_password:
        password = typer.prompt("Password", hide_input=True, err=True)
    settings = open_settings(home, Access.CREATE, password=password)
    from infra.cli.render.run_report import WorkerReport
    from infra.local.runtime import LocalRuntime

    runtime = LocalRuntime(settings)
    recovered = runtime.recover()
    report = WorkerReport.start(runtime.store, recovered)
    stats = _process(runtime, runtime.idle if until_idle else (lambda: False))
    summary = report.finish(runtime.store, stats)
    if output_format == "table":
        from rich.console import Console

        summary.print(Console(highlight=False, soft_wrap=not sys.stdout.isatty()))
    else:
        print_object(summary.to_dict(), output_format)
        if stats.interrupted:
            summary.print_interrupted()
    if stats.interrupted:
        raise typer.Exit(INTERRUPTED)


# --- status and search --------------------------------------------------------------------------


@app.command()
def status(
    home: HomeOption = None,
    jobs: Annotated[bool, typer.Option("--jobs", help="Count every job, not documents by their "
                    "latest job.")] = False,
    config: Annotated[bool, typer.Option("--config", help="Show the settings in force and the "
                      "retry budget they add up to, instead.")] = False,
    output_format: FormatOption = None,
) -> None:
    """Documents by the status of their latest job, failure reasons, queue depths."""
    from infra.cli.render.status import read_status

    output_format = resolve_format(output_format)
    if config:
        from infra.cli.render.config_report import read_config

        report_config = read_config(open_settings(home, Access.READ))
        if output_format == "json":
            print_object(report_config.to_dict(), "json")
        else:
            report_config.print(output_format)
        return
    settings = open_settings(home, Access.WRITE)
    report = read_status(settings, every_job=jobs)
    if output_format == "json":
        print_object(report.to_dict(), "json")
    elif output_format == "csv":
        print_records(("table", "key", "value"), report.long_rows(), "csv")
    else:
        report.print_tables()
    stderr_console().print(f"next: {report.next_command()}", markup=False, highlight=False,
                           soft_wrap=not sys.stderr.isatty())  # piped: one line, whole


@app.command()
def search(
    query: Annotated[list[str], typer.Argument(help='Words to find, all of them; a quoted '
                     'argument ("exact phrase") is searched as a phrase.')],
    home: HomeOption = None,
    limit: Annotated[int, typer.Option(callback=at_least(1), help="Most hits shown.")] = 10,
    output_format: FormatOption = None,
) -> None:
    """Full-text search over indexed documents: which document, which page."""
    from infra.local.search import Fts5SearchIndex

    output_format = resolve_format(output_format)
    settings = open_settings(home, Access.WRITE)
    text = " ".join(f'"{word}"' if any(c.isspace() for c in word.strip()) else word
                    for word in query)
    if not text.strip():
        raise UserError("the search query is empty", 'give words to find, e.g. doclake search '
                        '"non-solicitation"')
    if not (settings.home / "search.db").is_file():  # never created by a reading command
        stderr_console().print(f"nothing is indexed in {settings.home} yet; next: doclake run "
                               f"PATH --home {settings.home}", markup=False, highlight=False)
        return
    hits = Fts5SearchIndex(settings.home / "search.db").search(text, limit=limit)
    if not hits:  # said on stderr in every format: a program's stdout stays its data
        stderr_console().print(f"no match for {text}; try fewer or other words, or doclake "
                               f"status --home {settings.home} to see what was indexed",
                               markup=False, highlight=False)
        if output_format == "table":
            return
    # A person reads the file, the page and the words around the match; the ids, for a
    # program's next step (doclake show ID, a join in SQL), come in csv and json only.
    rows = [(h.source_name, h.page_number, " ".join(h.snippet.split()), h.document_id, h.job_id)
            for h in hits]
    if output_format == "table":
        print_records(("document", "page", "snippet"), (row[:3] for row in rows), output_format)
    else:
        print_records(("document", "page", "snippet", "document_id", "job_id"), rows, output_format)


# --- SQL ----------------------------------------------------------------------------------------


# A query may begin with a comment ("-- ..."), as the dashboard's named queries do: a token that
# looks like an unknown option is taken as the query, not refused.
@app.command(context_settings={"ignore_unknown_options": True})
def sql(
    query: Annotated[str | None, typer.Argument(help="SQL over the lake's tables; several "
                     "statements are separated by ';'. None: an interactive prompt.")] = None,
    home: HomeOption = None,
    output_format: FormatOption = None,
    engine: Annotated[str, typer.Option(help="duckdb, or athena (AWS, through awswrangler; "
                      "DOCLAKE_ATHENA_DATABASE/WORKGROUP/OUTPUT)")] = "duckdb",
    tables: Annotated[bool, typer.Option("--tables", help="List the tables and their columns, "
                      "with a description of each, and exit.")] = False,
    region: Annotated[str | None, typer.Option(help="AWS region of --engine athena (default: "
                      "the environment's).")] = None,
) -> None:
    """Query the lake with DuckDB; no query opens an interactive prompt."""
    from infra.cli import sqlshell

    output_format = resolve_format(output_format)
    if tables:
        sqlshell.print_reference(output_format)
        return
    if engine == "athena":
        if query is None:
            raise UserError("--engine athena needs a query", "give the SQL as an argument")
        from infra.cli.aws import athena_sql

        athena_sql(query, output_format, region=region)
        return
    if engine != "duckdb":
        raise UserError(f"--engine {engine!r} is not an engine", "use duckdb or athena")
    from infra.cli.home import open_lake_location
    from lake.catalog import connect

    # One statement: a local lake's files are read by DuckDB itself however many there are
    # (lake.catalog.NATIVE_MAX_FILES says why); the prompt keeps the default, for many statements.
    con = connect(open_lake_location(home),
                  **({} if query is None else {"native_max_files": sys.maxsize}))
    if query is None:
        sqlshell.interactive(con, output_format)
    else:
        sqlshell.run_script(con, query, output_format)


@app.command()
def schema(
    table: Annotated[str | None, typer.Argument(help="One table (default: all of them).")] = None,
    home: Annotated[Path | None, typer.Option("--home", help="Checked as everywhere; the "
                    "schema comes from the code, the same for every home.",
                    show_default=False)] = None,
    output_format: FormatOption = None,
) -> None:
    """The tables an analyst queries, their columns and what each means."""
    from infra.cli import sqlshell
    from infra.cli.render import schema_doc

    output_format = resolve_format(output_format)
    if home is not None:  # a --home given is checked as every command checks it
        check_home(home, Access.READ)
    if table is None:
        sqlshell.print_reference(output_format)
    elif not sqlshell.print_schema(table, output_format):
        raise UserError(f"no table {table!r}",
                        f"the tables are: {', '.join(t.name for t in schema_doc.tables())}")


if __name__ == "__main__":  # pragma: no cover
    app()
