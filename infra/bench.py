"""``doclake bench ...``: measured figures, printed, never asserted in tests.

``pipeline`` runs the whole embedded pipeline on a folder of PDFs (the Kleister NDA train split by
default) beside a plain pypdfium2 loop over the same files in the same run, so the ratio is the
pipeline's overhead; it also counts the Parquet files written per 1,000 events.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Annotated

import typer

bench_app = typer.Typer(no_args_is_help=True, help="Benchmarks that print figures.")

KLEISTER = "data/kleister-nda/train/documents"
DEFAULT_PDFS = Path(os.environ.get("DOCLAKE_SHARED_DIR")
                    or Path(__file__).resolve().parents[2] / "shared") / KLEISTER


def _plain_read(path: str) -> int:
    """The baseline: open, read every page's text layer, close. Returns pages read."""
    import pypdfium2 as pdfium

    document = pdfium.PdfDocument(path)
    try:
        for page in document:
            textpage = page.get_textpage()
            textpage.get_text_bounded()
            textpage.close()
            page.close()
        return len(document)
    finally:
        document.close()


def plain_loop(paths: list[Path], workers: int) -> tuple[int, float]:
    started = time.perf_counter()
    if workers == 1:
        pages = sum(_plain_read(str(p)) for p in paths)
    else:
        with ProcessPoolExecutor(workers) as pool:
            pages = sum(pool.map(_plain_read, [str(p) for p in paths], chunksize=4))
    return pages, time.perf_counter() - started


def pipeline_run(paths: list[Path], concurrency: int | None) -> dict:
    from extract.state import JobStatus
    from infra.local.runtime import LocalRuntime
    from infra.settings import Settings
    from lake.catalog import query

    with tempfile.TemporaryDirectory(prefix="doclake-bench-") as home:
        options = {"home": Path(home)}
        if concurrency:
            options["concurrency"] = concurrency
        settings = Settings(**options)
        runtime = LocalRuntime(settings)
        started = time.perf_counter()
        runtime.cpu.warm()
        ingested = runtime.planner().ingest_many(paths)
        ids = [i.job_id for i in ingested]

        def done() -> bool:
            return all(j.settled for j in runtime.store.list_jobs(ids))

        asyncio.run(runtime.process(done))
        seconds = time.perf_counter() - started
        jobs = runtime.store.list_jobs(ids)
        pages = sum(j.pages or 0 for j in jobs if j.status is JobStatus.SUCCEEDED)
        events = query(settings.lake, "SELECT count(*) AS n FROM events").to_pylist()[0]["n"]
        raw = sum(len(files) for _, _, files in os.walk(settings.lake))
        return {
            "documents": len(jobs),
            "succeeded": sum(j.status is JobStatus.SUCCEEDED for j in jobs),
            "pages": pages,
            "seconds": seconds,
            "pages_per_s": pages / seconds,
            "events": events,
            "parquet_files": raw,
            "files_per_1000_events": raw * 1000 / events if events else 0.0,
            "writer_flushes": runtime.writer.stats.flushes,
        }


@bench_app.command()
def pipeline(
    folder: Annotated[Path, typer.Argument(help="A folder of PDFs.")] = DEFAULT_PDFS,
    limit: Annotated[int | None, typer.Option(help="Use only the first N files.")] = None,
    concurrency: Annotated[int | None, typer.Option(help="Runtime concurrency.")] = None,
    output_format: Annotated[str | None, typer.Option("--format", help="table|csv|json "
                             "(default: table on a terminal, csv when piped)")] = None,
) -> None:
    """Pages per second: `doclake run` against a plain pypdfium2 loop, same files, same run."""
    from infra.output import print_object, resolve_format

    output_format = resolve_format(output_format)
    if not folder.is_dir():
        raise typer.BadParameter(f"{folder} is not a folder (the Kleister data lives in ../shared)")
    paths = sorted(folder.glob("*.pdf"))[:limit]
    cores = os.cpu_count() or 1
    plain_pages, plain_1 = plain_loop(paths, 1)
    _, plain_n = plain_loop(paths, cores)
    result = pipeline_run(paths, concurrency)
    figures = {
        "files": len(paths),
        "plain_pages": plain_pages,
        "plain_1_process_pages_per_s": plain_pages / plain_1,
        f"plain_{cores}_processes_pages_per_s": plain_pages / plain_n,
        **{f"pipeline_{k}": v for k, v in result.items()},
        "overhead_ratio_vs_same_cores": (plain_pages / plain_n) / result["pages_per_s"],
    }
    print_object(figures, output_format)
