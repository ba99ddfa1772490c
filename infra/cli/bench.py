"""``doclake bench ...``: measured figures, printed, never asserted in tests.

``pipeline`` times ``doclake run`` on a folder of PDFs (the Kleister NDA train split by default,
plus one long document) beside a plain single-process pypdfium2 loop, both as fresh processes
(``infra.bench.pipeline``): the wall, and the command's own process's CPU per page read from the
OS; then, unless ``--no-breakdown``, breaks an in-process run's time down by stage.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path
from typing import Annotated

import typer

__all__ = ["bench_app", "KLEISTER", "DEFAULT_PDFS", "pipeline", "fields", "short_work", "HomeOption",
           "burst", "fanout", "plan", "sql_startup", "mixed_room"]

bench_app = typer.Typer(no_args_is_help=True, help="Benchmarks that print figures.")

KLEISTER = "data/kleister-nda/train/documents"


def _default_pdfs() -> Path:
    """The Kleister NDAs: under $DOCLAKE_SHARED_DIR, else under a ``shared/`` inside the clone or
    beside it or any folder above it (the clone normally sits beside ``shared/``)."""
    if os.environ.get("DOCLAKE_SHARED_DIR"):
        return Path(os.environ["DOCLAKE_SHARED_DIR"]) / KLEISTER
    for folder in Path(__file__).resolve().parents[2:]:
        if (folder / "shared" / KLEISTER).is_dir():
            return folder / "shared" / KLEISTER
    return Path(__file__).resolve().parents[2] / "shared" / KLEISTER


DEFAULT_PDFS = _default_pdfs()


@bench_app.command()
def pipeline(
    folder: Annotated[Path, typer.Argument(help="A folder of PDFs.")] = DEFAULT_PDFS,
    limit: Annotated[int, typer.Option(help="Use the first N files.")] = 83,
    book_pages: Annotated[int, typer.Option(help="Add one long document of this many pages "
                                            "assembled from the others (0: none).")] = 352,
    copies: Annotated[int, typer.Option(min=1, help="Copies of each file, each copy one byte "
                      "longer (a document of its own): --limit 254 --copies 8 --book-pages 0 "
                      "is the 2,032-document set.")] = 1,
    rounds: Annotated[int, typer.Option(min=1, help="Alternating runs of each side.")] = 3,
    concurrency: Annotated[int | None, typer.Option(help="Runtime concurrency (the in-process "
                           "breakdown's).")] = None,
    reader: Annotated[str, typer.Option(help="text: the text layer only, like the plain loop; "
                                        "auto adds OCR for pages without one.")] = "text",
    breakdown: Annotated[bool, typer.Option(help="Also run the set in-process once, for where "
                         "the time goes by stage and the main process's CPU by thread.")] = True,
    output_format: Annotated[str | None, typer.Option("--format", help="table|csv|json "
                             "(default: table on a terminal, csv when piped)")] = None,
) -> None:
    """`doclake run` against a plain single-process pypdfium2 loop: same pages, start-up counted,
    median of alternating rounds, the command's own CPU per page from the OS; then where the
    time goes, stage by stage (an in-process run, prefixed `inprocess_`)."""
    from infra.bench.pipeline import build_set, compare, stage_breakdown
    from infra.cli.render.output import print_object, resolve_format

    output_format = resolve_format(output_format)
    if not folder.is_dir():
        raise typer.BadParameter(f"{folder} is not a folder (the Kleister data lives in ../shared)")
    with tempfile.TemporaryDirectory(prefix="doclake-bench-set-") as scratch:
        bench_set = Path(scratch) / "set"
        figures = build_set(folder, bench_set, limit=limit, book_pages=book_pages, copies=copies)
        figures.update(compare(bench_set, rounds, reader))
        inprocess = stage_breakdown(bench_set, concurrency, reader) if breakdown else None
    if inprocess is not None:
        stages = inprocess.pop("stages")
        figures.update({f"inprocess_main_cpu_s_thread_{re.sub(r'[^a-z0-9]+', '_', name.lower())}":
                        seconds for name, seconds in inprocess.pop("main_cpu_by_thread").items()})
        figures.update({f"inprocess_{k}": v for k, v in inprocess.items()})
        figures.update({f"inprocess_stage_{name}_s": v["seconds"] for name, v in stages.items()})
    print_object(figures, output_format)


@bench_app.command()
def fields(
    folder: Annotated[Path, typer.Argument(help="A folder of PDFs.")] = DEFAULT_PDFS,
    rounds: Annotated[int, typer.Option(min=1, help="Alternating runs of each side.")] = 3,
    reader: Annotated[str, typer.Option(help="Who reads pages (text: the text layer only).")]
    = "text",
    output_format: Annotated[str | None, typer.Option("--format", help="table|csv|json "
                             "(default: table on a terminal, csv when piped)")] = None,
) -> None:
    """What the fields stage adds: `doclake run` with `--fields none` and with `--fields nda`
    (the offline rules), fresh processes and homes, median of alternating rounds."""
    from infra.bench.pipeline import compare_fields
    from infra.cli.render.output import print_object, resolve_format

    output_format = resolve_format(output_format)
    if not folder.is_dir():
        raise typer.BadParameter(f"{folder} is not a folder (the Kleister data lives in ../shared)")
    print_object(compare_fields(folder, rounds, reader), output_format)


@bench_app.command("short-work")
def short_work(
    scans: Annotated[int, typer.Option(min=1, help="Scanned (image-only) PDFs beside the small "
                     "files.")] = 6,
    pages: Annotated[int, typer.Option(min=1, help="Pages of each scan.")] = 6,
    rounds: Annotated[int, typer.Option(min=1, help="Alternating runs of each side.")] = 2,
    output_format: Annotated[str | None, typer.Option("--format", help="table|csv|json "
                             "(default: table on a terminal, csv when piped)")] = None,
) -> None:
    """A one-page .docx and a CSV alone, then beside a folder of scans (LibreOffice and
    tesseract busy at once): each small file's job time both ways, and the worst extra wait."""
    from infra.bench.short_work import compare as compare_short_work
    from infra.cli.render.output import print_object, resolve_format

    output_format = resolve_format(output_format)
    print_object(compare_short_work(scans, pages, rounds), output_format)


HomeOption = Annotated[Path | None, typer.Option(
    "--home", help="Keep the run's state and lake here (for `bench plan`, `dashboard`, "
    "`sql`); default: a temporary folder, removed.", show_default=False)]


def _load(spec, home: Path | None) -> dict:
    from infra.bench.load import run_load

    if home is not None:
        home.mkdir(parents=True, exist_ok=True)
        return run_load(spec, home)
    with tempfile.TemporaryDirectory(prefix="doclake-bench-") as scratch:
        return run_load(spec, Path(scratch))


@bench_app.command()
def burst(
    home: HomeOption = None,
    docs: Annotated[int, typer.Option(min=1, help="Documents, all arriving at once.")] = 200,
    concurrency: Annotated[int, typer.Option(min=1, help="Workers reading (the cap, C).")] = 10,
    service_time: Annotated[float, typer.Option(min=0.01, help="Seconds the simulated provider "
                            "holds each document (S).")] = 2.5,
    pages: Annotated[int, typer.Option(min=1, help="Pages per document.")] = 1,
    rate: Annotated[float | None, typer.Option(help="Sustained mode: documents per second, "
                    "arriving steadily, instead of a burst.")] = None,
    cap: Annotated[str, typer.Option(help="read: C readers, splitting and indexing on workers "
                   "of their own (as on AWS); all: C workers for every stage; model: C model "
                   "calls in flight, the next reads rendering beside them (a local run whose "
                   "model quota is C).")] = "read",
    faults: Annotated[bool, typer.Option(help="Keep the simulated provider's errors, timeouts "
                      "and blocks.")] = False,
    poll_interval: Annotated[float, typer.Option(help="Poller period, seconds.")] = 1.0,
    latency_sigma: Annotated[float | None, typer.Option(min=0.0, help="Sigma of the simulated "
                             "call latency (default: the write-up's fit, 0.762); lower takes "
                             "the lognormal tail out of the drain.")] = None,
    output_format: Annotated[str | None, typer.Option("--format", help="table|csv|json")] = None,
) -> None:
    """A burst (or a steady stream) of simulated documents against Little's law: throughput
    beside C/S, drain beside N*S/C, latency split into queue wait, read and publish."""
    from infra.bench.load import LoadSpec
    from infra.cli.render.output import print_object, resolve_format

    output_format = resolve_format(output_format)
    if cap not in ("read", "all", "model"):
        raise typer.BadParameter("--cap is read, all or model")
    spec = LoadSpec(docs=docs, concurrency=concurrency, service_s=service_time, pages=pages,
                    rate=rate, poll_interval_s=poll_interval, faults=faults, cap=cap,
                    sigma=latency_sigma)
    figures = _load(spec, home)
    stages = figures.pop("stage_seconds")
    figures.update({f"stage_{k.replace(':', '_')}_s": v for k, v in stages.items()})
    print_object(figures, output_format)


@bench_app.command()
def fanout(
    home: HomeOption = None,
    pages: Annotated[int, typer.Option(min=1, help="Pages of the one long document.")] = 300,
    concurrency: Annotated[int, typer.Option(min=1, help="Workers.")] = 64,
    scale: Annotated[float, typer.Option(min=0.01, help="Simulated latency scale (1.0: "
                     "2.9 s median call).")] = 1.0,
    poll_interval: Annotated[float, typer.Option(help="Poller period, seconds.")] = 1.0,
    output_format: Annotated[str | None, typer.Option("--format", help="table|csv|json")] = None,
) -> None:
    """One long document at high concurrency, against its slowest unit plus one poll interval
    (a job cannot finish before its slowest unit; the poller notices within one interval)."""
    from infra.bench.load import LoadSpec
    from infra.bench.load_docs import expected_hold_s
    from infra.cli.render.output import print_object, resolve_format

    output_format = resolve_format(output_format)
    spec = LoadSpec(docs=1, concurrency=concurrency, pages=pages, cap="all",
                    service_s=scale * expected_hold_s(pages), poll_interval_s=poll_interval)
    row = _load(spec, home)
    ideal = row["slowest_unit_s"] + poll_interval
    figures = {"pages": pages, "units": -(-pages // 5), "concurrency": concurrency,
               "latency_scale": row["latency_scale"], "status": row["succeeded"] and "succeeded",
               "job_s": row["latency_p50_s"], "slowest_unit_s": row["slowest_unit_s"],
               "ideal_s": ideal, "job_over_ideal": row["latency_p50_s"] / ideal,
               "queue_wait_s": row["queue_wait_mean_s"], "read_s": row["read_mean_s"],
               "publish_s": row["publish_mean_s"], "model_calls": row["model_calls"],
               "cost_usd": row["cost_usd"], "run_id": row["run_id"]}
    print_object(figures, output_format)


@bench_app.command()
def plan(
    home: Annotated[Path | None, typer.Option("--home", help="The home whose lake holds "
                    "measured runs.", show_default=False)] = None,
    docs: Annotated[int, typer.Option(min=1, help="Documents in the burst.")] = ...,
    within: Annotated[float, typer.Option(min=1, help="Seconds to drain it in.")] = ...,
    bucket: Annotated[str | None, typer.Option(help="Size bucket whose service time to use "
                      "(1-20, 21-50, 51-100, 101-300, over 300); default all.")] = None,
    utilization: Annotated[float, typer.Option(min=0.05, max=1.0, help="Share of worker time "
                           "spent on documents (bench burst at the write-up's sigma: 0.885).")] = 0.88,
    memory_mb: Annotated[int, typer.Option(min=128, help="Lambda memory, for compute cost.")]
    = 2048,
    output_format: Annotated[str | None, typer.Option("--format", help="table|csv|json")] = None,
) -> None:
    """What concurrency drains DOCS within WITHIN seconds, from the lake's measured service
    times, and what it costs."""
    from infra.bench.plan import plan as make_plan
    from infra.cli.errors import UserError
    from infra.cli.home import Access, open_settings
    from infra.cli.render.output import print_object, resolve_format

    output_format = resolve_format(output_format)
    settings = open_settings(home, Access.READ)
    try:
        figures = make_plan(settings.lake, docs=docs, within_s=within, bucket=bucket,
                            utilization=utilization, memory_mb=memory_mb)
    except LookupError as error:
        raise UserError(str(error), "run `doclake run` or `doclake bench burst --home DIR` "
                        "first: the plan uses measured service times") from None
    print_object(figures, output_format)


@bench_app.command("sql")
def sql_startup(
    home: Annotated[Path | None, typer.Option("--home", help="A home to query (default: one "
                    "made by `doclake run examples/*.pdf`).", show_default=False)] = None,
    year_events: Annotated[int, typer.Option(min=0, help="Events in the year-of-partitions lake "
                           "(0: skip it).")] = 200_000,
    repeats: Annotated[int, typer.Option(min=1, help="Timed runs of each side (median).")] = 5,
    output_format: Annotated[str | None, typer.Option("--format", help="table|csv|json")] = None,
) -> None:
    """`doclake sql` against a bare DuckDB query over the same Parquet files, each a fresh
    process: on a small home and on a year of daily partitions."""
    from infra.bench.sql_startup import COLUMNS, SMALL_CASES, YEAR_CASES, compare, render, year_home
    from infra.bench.sql_startup import small_home as make_small
    from infra.cli.errors import UserError
    from infra.cli.render.output import print_records, resolve_format

    output_format = resolve_format(output_format)
    if home is not None and not (home / "lake").is_dir():
        raise UserError(f"no lake at {home / 'lake'}", "give the --home `doclake run` used")
    with tempfile.TemporaryDirectory(prefix="doclake-bench-sql-") as scratch:
        small = home if home is not None else make_small(Path(scratch))
        figures = {"small": compare(small, SMALL_CASES, repeats)}
        if year_events:
            year, files = year_home(Path(scratch), year_events)
            figures[f"year ({year_events:,} events, {files:,} files)"] = compare(
                year, YEAR_CASES, repeats)
    print_records(COLUMNS, render(figures), output_format)


@bench_app.command("mixed-room")
def mixed_room(
    rounds: Annotated[int, typer.Option(min=1, help="Rounds of the room, each side.")] = 1,
    alone_rounds: Annotated[int, typer.Option(min=0, help="Of those, rounds that also run "
                            "each small file alone first (0: none; `worst_extra_s` is then "
                            "the worst time in the room).")] = 1,
    limit: Annotated[int, typer.Option(min=0, help="Kleister NDAs in the room.")] = 83,
    book_pages: Annotated[int, typer.Option(min=0, help="Pages of the book (0: none).")] = 352,
    before: Annotated[Path | None, typer.Option(help="Another checkout of doclake (e.g. `git "
                      "worktree add /tmp/before main`): each round also runs its code, right "
                      "after this one's, for before and after figures under the same load.")]
    = None,
    output_format: Annotated[str | None, typer.Option("--format", help="table|csv|json "
                             "(default: table on a terminal, csv when piped)")] = None,
) -> None:
    """A data room as it comes (the corpus's Office files and sheets, the NDAs, a 352-page book,
    a rotated 4-page scan, broken and encrypted files), run as a user runs it: each small file's
    time to its published result alone and in the room, the median job latency, the wall."""
    from infra.bench.mixed_room import compare as compare_room
    from infra.cli.render.output import print_object, resolve_format

    output_format = resolve_format(output_format)
    ndas = DEFAULT_PDFS
    corpus = ndas.parents[3] / "corpus"
    if not ndas.is_dir() or not (corpus / "MANIFEST.tsv").is_file():
        raise typer.BadParameter(f"the shared corpus and Kleister data are not at {ndas.parents[3]}"
                                 " (set DOCLAKE_SHARED_DIR)")
    if before is not None and not (before / "infra" / "cli" / "main.py").is_file():
        raise typer.BadParameter(f"{before} is not a checkout of doclake")
    print_object(compare_room(corpus, ndas, rounds=rounds, limit=limit, book_pages=book_pages,
                              before=before, alone_rounds=alone_rounds), output_format)
