"""Small work beside scans: how much longer a one-page Office file and a CSV take when a folder
of scans is processed with them than when they are alone.

Both sides are ``doclake run`` as a user types it (default reader: the text layer, then OCR;
default fields), fresh processes and homes. A small file's time is its job's, from its creation
to its end (``jobs.finished_at - jobs.created_at``); the figure is the largest extra time of
either small file beside the scans over its time alone (median of the rounds). The scans are
image-only PDFs of typed lines, so every page goes to tesseract, and the Office file goes
through LibreOffice: both programs are busy at once.
"""

from __future__ import annotations

import random
import sqlite3
import statistics
import tempfile
import zipfile
from datetime import datetime
from pathlib import Path
from xml.sax.saxutils import escape

from infra.bench.command_cpu import run_command
from infra.bench.pipeline import doclake_command

__all__ = ["WORDS", "SMALL_FILES", "write_small_files", "write_scans", "compare"]

WORDS = ("agreement", "party", "confidential", "term", "the", "of", "shall", "disclose",
         "information", "recipient", "period", "years", "state", "law", "notice", "written")

_W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_DOCX_PARTS = {
    "[Content_Types].xml": (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="rels" ContentType="application/'
        'vnd.openxmlformats-package.relationships+xml"/>'
        '<Default Extension="xml" ContentType="application/xml"/>'
        '<Override PartName="/word/document.xml" ContentType="application/'
        'vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>'),
    "_rels/.rels": (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
        'relationships/officeDocument" Target="word/document.xml"/></Relationships>'),
}
SMALL_FILES = ("memo.docx", "figures.csv")


def write_small_files(folder: Path) -> None:
    """A one-page ``.docx`` (the three parts Word and LibreOffice need) and a small CSV."""
    folder.mkdir(parents=True, exist_ok=True)
    body = "".join(f"<w:p><w:r><w:t>{escape(text)}</w:t></w:r></w:p>"
                   for text in ("MEMO", "The quarterly review moves to Friday."))
    with zipfile.ZipFile(folder / "memo.docx", "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in _DOCX_PARTS.items():
            archive.writestr(name, text)
        archive.writestr("word/document.xml",
                         f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
                         f'<w:document xmlns:w="{_W}"><w:body>{body}</w:body></w:document>')
    (folder / "figures.csv").write_text("region,revenue,units\nnorth,1200,14\nsouth,900,11\n",
                                        encoding="utf-8")


def write_scans(folder: Path, count: int, pages: int) -> None:
    """``count`` image-only PDFs of ``pages`` pages each: 150 dpi pictures of typed lines."""
    from PIL import Image, ImageDraw, ImageFont

    folder.mkdir(parents=True, exist_ok=True)
    font = ImageFont.load_default(size=28)
    for number in range(count):
        rnd = random.Random(number)
        images = []
        for _ in range(pages):
            image = Image.new("L", (1275, 1650), 238)
            draw = ImageDraw.Draw(image)
            for line in range(30):
                draw.text((120, 120 + 48 * line), " ".join(rnd.choice(WORDS) for _ in range(9)),
                          fill=20, font=font)
            images.append(image)
        images[0].save(folder / f"scan-{number:03d}.pdf", save_all=True,
                       append_images=images[1:], resolution=150)


def _run(folder: Path, home: Path) -> dict[str, float | None]:
    """``doclake run FOLDER`` as a fresh process; each small file's job time, and the wall."""
    figures = run_command([*doclake_command(), "run", str(folder), "--home", str(home)])
    with sqlite3.connect(home / "jobs.db") as db:
        rows = db.execute("SELECT source_name, status, created_at, finished_at FROM jobs"
                          ).fetchall()
    times: dict[str, float | None] = {"wall_s": figures.wall_s}
    for name, status, created, finished in rows:
        if name in SMALL_FILES:
            times[name] = ((datetime.fromisoformat(finished)
                            - datetime.fromisoformat(created)).total_seconds()
                           if status == "succeeded" and finished else None)
    return times


def compare(scans: int, pages: int, rounds: int) -> dict[str, float | None]:
    """The small files alone and beside ``scans`` scans of ``pages`` pages, alternately."""
    alone: dict[str, list[float]] = {name: [] for name in SMALL_FILES}
    beside: dict[str, list[float]] = {name: [] for name in SMALL_FILES}
    walls = []
    with tempfile.TemporaryDirectory(prefix="doclake-bench-short-") as scratch:
        root = Path(scratch)
        write_small_files(root / "alone")
        write_small_files(root / "mixed")
        write_scans(root / "mixed", scans, pages)
        for number in range(rounds):
            for side, into in (("alone", alone), ("mixed", beside)):
                times = _run(root / side, root / f"home-{side}-{number}")
                if side == "mixed":
                    walls.append(times["wall_s"])
                for name in SMALL_FILES:
                    if times.get(name) is None:
                        raise RuntimeError(f"{name} did not succeed in the {side} run")
                    into[name].append(times[name])
    figures: dict[str, float | None] = {"scans": scans, "scan_pages": scans * pages,
                                        "rounds": rounds}
    waits = []
    for name in SMALL_FILES:
        key = name.replace(".", "_")
        figures[f"{key}_alone_s"] = statistics.median(alone[name])
        figures[f"{key}_beside_scans_s"] = statistics.median(beside[name])
        waits.append(figures[f"{key}_beside_scans_s"] - figures[f"{key}_alone_s"])
        figures[f"{key}_extra_s"] = waits[-1]
        figures[f"{key}_beside_scans_s_max"] = max(beside[name])
    figures["worst_extra_s"] = max(waits)
    figures["mixed_run_wall_s"] = statistics.median(walls)
    return figures
