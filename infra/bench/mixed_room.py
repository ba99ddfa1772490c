"""A data room as it comes: does a one-page letter wait behind a scan, a book and eighty NDAs?

The room is built from real files: the shared corpus's Office files of several generations
(Word 95 to 2016, PowerPoint, OpenDocument), its CSV files and small sheets (the "small files"
whose times are reported), plus the bulk a data room brings with them: the Kleister NDAs, a
352-page book assembled from NDAs (``infra.bench.pipeline.build_set``), a 4-page scan whose pages
are rotated a quarter turn each (every page goes to OCR), and the corpus's broken and encrypted
files. Each side runs as a user runs it: ``doclake run ROOM`` as a fresh process in a fresh home.

A small file's time is end to end as a user waits for it: from the command's start to its
result's publication (``job_latency``'s last event: indexed, fields published). "Alone" runs
the file by itself, the same way. The run's wall is the command's; the median job latency is
``job_latency.end_to_end_seconds`` over every job of the room.

``before`` (a folder holding another checkout of doclake, e.g. ``git worktree add``): each
round also runs the room with that checkout's code (``PYTHONPATH`` first on the path), right
after this one, so both sides meet the same load on a shared machine.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import statistics
import subprocess
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from infra.bench.command_cpu import CommandFigures, run_command
from infra.bench.pipeline import build_set, doclake_command, settle_writes
from infra.bench.short_work import WORDS

__all__ = ["SMALL_FILES", "build_room", "compare", "corpus_dir"]

SMALL_FILES = (
    "doc/poi_SampleDoc.doc",
    "doc/poi_word2_not_ole.doc",
    "docx/python-docx_comments.docx",
    "docx/python-docx_having_images.docx",
    "ppt/poi_SampleShow.ppt",
    "pptx/python-pptx_charts.pptx",
    "pptx/python-pptx_speaker_notes.pptx",
    "odt/sample-files_libreoffice_source.odt",
    "csv/frictionless_invalid_ragged.csv",
    "csv/frictionless_semicolon_leading_zeros.csv",
    "xls/calamine_date_1904.xls",
    "xls/poi_testEXCEL_95.xls",
    "xlsx/calamine_any_sheets.xlsx",
    "xlsx/calamine_merged_range.xlsx",
    "xlsb/calamine_any_sheets.xlsb",
    "ods/calamine_date.ods",
)
"""The corpus's Office files and sheets (paths in ``MANIFEST.tsv``) whose times are reported."""

BULK_FOLDERS = ("pdf_broken", "encrypted_office")
"""Corpus folders added whole to the room: files that fail, as a data room holds some."""

SCAN_NAME = "cardinal_rotated_4p.pdf"


def corpus_dir(shared: Path) -> Path:
    return shared / "corpus"


def write_rotated_scan(path: Path, pages: int = 4) -> None:
    """An image-only PDF of ``pages`` pages of typed lines, page k turned k quarter turns."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.load_default(size=28)
    rnd = random.Random(4)
    images = []
    for number in range(pages):
        image = Image.new("L", (1275, 1650), 238)
        draw = ImageDraw.Draw(image)
        for line in range(30):
            draw.text((120, 120 + 48 * line), " ".join(rnd.choice(WORDS) for _ in range(9)),
                      fill=20, font=font)
        images.append(image.rotate(90 * number, expand=True, fillcolor=238))
    images[0].save(path, save_all=True, append_images=images[1:], resolution=150)


def build_room(corpus: Path, ndas: Path, into: Path, *, limit: int = 83,
               book_pages: int = 352) -> dict[str, int]:
    """The room in ``into``: the small files, the NDAs and the book, the scan, the failures."""
    figures = build_set(ndas, into, limit=limit, book_pages=book_pages)
    for relative in SMALL_FILES:
        shutil.copyfile(corpus / relative, into / Path(relative).name)
    for folder in BULK_FOLDERS:
        for path in sorted((corpus / folder).iterdir()):
            if path.is_file():
                shutil.copyfile(path, into / path.name)
    write_rotated_scan(into / SCAN_NAME)
    figures["files"] = sum(1 for _ in into.iterdir())
    return figures


_LATENCY_SQL = (
    "SELECT d.source_name, l.status, l.pages, l.end_to_end_seconds, "
    "strftime(l.created_at, '%Y-%m-%dT%H:%M:%S.%f') AS created "
    "FROM job_latency AS l JOIN documents AS d USING (document_id)")


def _environment(pythonpath: Path | None) -> dict[str, str] | None:
    if pythonpath is None:
        return None
    env = dict(os.environ)
    env["PYTHONPATH"] = str(pythonpath)
    return env


def _run(folder: Path, home: Path, pythonpath: Path | None) -> dict:
    """``doclake run FOLDER`` as a fresh process; each job's end, from the command's start."""
    env = _environment(pythonpath)
    figures: CommandFigures = run_command(
        [*doclake_command(), "run", str(folder), "--home", str(home)], env=env)
    out = subprocess.run([*doclake_command(), "sql", _LATENCY_SQL, "--home", str(home),
                          "--format", "json"], capture_output=True, text=True, check=True,
                         env=env)
    jobs = {}
    for row in json.loads(out.stdout):
        # job_latency's timestamps are UTC without a zone.
        created = datetime.fromisoformat(row["created"]).replace(tzinfo=UTC).timestamp()
        jobs[row["source_name"]] = {
            "status": row["status"], "pages": row["pages"], "job_s": row["end_to_end_seconds"],
            "from_start_s": created + row["end_to_end_seconds"] - figures.started_at}
    return {"wall_s": figures.wall_s, "jobs": jobs}


def compare(corpus: Path, ndas: Path, *, rounds: int, limit: int, book_pages: int,
            before: Path | None, alone_rounds: int = 1) -> dict:
    """Each small file alone (the first ``alone_rounds`` rounds), then the room, ``rounds``
    times; with ``before``, the same with that checkout's code right after each of this one's."""
    sides = ["after"] + (["before"] if before is not None else [])
    paths = {"after": None, "before": before}
    names = [Path(relative).name for relative in SMALL_FILES]
    alone: dict[str, dict[str, list[float]]] = {s: {n: [] for n in names} for s in sides}
    room: dict[str, dict[str, list[float]]] = {s: {n: [] for n in names} for s in sides}
    walls: dict[str, list[float]] = {s: [] for s in sides}
    medians: dict[str, list[float]] = {s: [] for s in sides}
    with tempfile.TemporaryDirectory(prefix="doclake-bench-room-") as scratch:
        root = Path(scratch)
        figures: dict = build_room(corpus, ndas, root / "room", limit=limit,
                                   book_pages=book_pages)
        for relative in SMALL_FILES:
            single = root / "alone" / Path(relative).name
            single.mkdir(parents=True)
            shutil.copyfile(corpus / relative, single / Path(relative).name)
        settle_writes()
        for number in range(rounds):
            for side in sides:
                for name in names if number < alone_rounds else ():
                    run = _run(root / "alone" / name, root / f"home-{side}-{number}-{name}",
                               paths[side])
                    alone[side][name].append(run["jobs"][name]["from_start_s"])
                run = _run(root / "room", root / f"home-{side}-{number}-room", paths[side])
                walls[side].append(run["wall_s"])
                jobs = run["jobs"]
                medians[side].append(statistics.median(
                    j["job_s"] for j in jobs.values() if j["job_s"] is not None))
                for name in names:
                    room[side][name].append(jobs[name]["from_start_s"])
                    figures.setdefault(f"{name}_pages", jobs[name]["pages"])
    figures["rounds"] = rounds
    for side in sides:
        prefix = "" if side == "after" else "before_"
        extras = []
        for name in names:
            r = statistics.median(room[side][name])
            a = statistics.median(alone[side][name]) if alone[side][name] else 0.0
            if alone[side][name]:
                figures[f"{prefix}{name}_alone_s"] = round(a, 2)
            figures[f"{prefix}{name}_room_s"] = round(r, 2)
            figures[f"{prefix}{name}_room_s_range"] = (
                f"{min(room[side][name]):.1f}-{max(room[side][name]):.1f}")
            extras.append((r - a, name))
        worst = max(extras)
        figures[f"{prefix}worst_extra_s"] = round(worst[0], 2)
        figures[f"{prefix}worst_extra_file"] = worst[1]
        figures[f"{prefix}median_job_latency_s"] = round(statistics.median(medians[side]), 2)
        figures[f"{prefix}median_job_latency_s_range"] = (
            f"{min(medians[side]):.2f}-{max(medians[side]):.2f}")
        figures[f"{prefix}run_wall_s"] = round(statistics.median(walls[side]), 2)
        figures[f"{prefix}run_wall_s_range"] = f"{min(walls[side]):.1f}-{max(walls[side]):.1f}"
    figures["load_average"] = os.getloadavg()[0]
    return figures
