"""``doclake bench ...``: measured figures, printed, never asserted in tests.

``pipeline`` times ``doclake run`` on a folder of PDFs (the Kleister NDA train split by default,
plus one long document) beside a plain single-process pypdfium2 loop, both as fresh processes
(``infra.bench_pipeline``), and breaks the run's time down by stage.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Annotated

import typer

bench_app = typer.Typer(no_args_is_help=True, help="Benchmarks that print figures.")

KLEISTER = "data/kleister-nda/train/documents"
DEFAULT_PDFS = Path(os.environ.get("DOCLAKE_SHARED_DIR")
                    or Path(__file__).resolve().parents[2] / "shared") / KLEISTER


@bench_app.command()
def pipeline(
    folder: Annotated[Path, typer.Argument(help="A folder of PDFs.")] = DEFAULT_PDFS,
    limit: Annotated[int, typer.Option(help="Use the first N files.")] = 83,
    book_pages: Annotated[int, typer.Option(help="Add one long document of this many pages "
                                            "assembled from the others (0: none).")] = 352,
    rounds: Annotated[int, typer.Option(min=1, help="Alternating runs of each side.")] = 3,
    concurrency: Annotated[int | None, typer.Option(help="Runtime concurrency.")] = None,
    output_format: Annotated[str | None, typer.Option("--format", help="table|csv|json "
                             "(default: table on a terminal, csv when piped)")] = None,
) -> None:
    """`doclake run` against a plain single-process pypdfium2 loop: same pages, start-up counted,
    median of alternating rounds; then where the time goes, stage by stage."""
    from infra.bench_pipeline import build_set, compare, stage_breakdown
    from infra.output import print_object, resolve_format

    output_format = resolve_format(output_format)
    if not folder.is_dir():
        raise typer.BadParameter(f"{folder} is not a folder (the Kleister data lives in ../shared)")
    with tempfile.TemporaryDirectory(prefix="doclake-bench-set-") as scratch:
        bench_set = Path(scratch) / "set"
        figures = build_set(folder, bench_set, limit=limit, book_pages=book_pages)
        figures.update(compare(bench_set, rounds))
        breakdown = stage_breakdown(bench_set, concurrency)
    stages = breakdown.pop("stages")
    figures.update({f"inprocess_{k}": v for k, v in breakdown.items()})
    figures.update({f"stage_{name}_s": v["seconds"] for name, v in stages.items()})
    print_object(figures, output_format)
