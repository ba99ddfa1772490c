"""Blank scanned pages are not sent to OCR: a glance at the page rendered small decides, and the
page row says ``blank``; a scan with any text on it is still read."""

from __future__ import annotations

import asyncio
import random

import pytest
from conftest import CORPUS, needs_corpus
from PIL import Image, ImageDraw, ImageFont

from extract.formats.pdf import count_pages
from extract.readers.blank import BLANK_READER, is_blank
from extract.readers.ocr import look_at_pages, tesseract_status
from infra.local.runtime import LocalRuntime
from lake.catalog import query

needs_tesseract = pytest.mark.skipif(tesseract_status() is not None,
                                     reason=f"OCR unavailable: {tesseract_status()}")


def _scan(draw_on) -> Image.Image:
    """A 150 dpi letter page as a scanner gives it: off-white paper with a little noise."""
    rng = random.Random(7)
    page = Image.new("L", (1275, 1650), 238)
    pixels = page.load()
    for _ in range(3000):  # dust
        pixels[rng.randrange(1275), rng.randrange(1650)] = rng.randrange(170, 238)
    draw_on(ImageDraw.Draw(page))
    return page


def _text(draw: ImageDraw.ImageDraw) -> None:
    font = ImageFont.load_default(size=40)
    for line, words in enumerate(["Confidential information shall remain",
                                  "the property of the disclosing party."]):
        draw.text((150, 200 + 60 * line), words, fill=20, font=font)


def _rule_only(draw: ImageDraw.ImageDraw) -> None:
    """A blank page but for a header rule (four such pages in the Kleister NDAs)."""
    draw.line((100, 120, 1175, 120), fill=40, width=3)


@needs_tesseract
def test_a_blank_scan_is_recorded_blank_and_the_text_scan_is_read(settings, tmp_path):
    folder = tmp_path / "scans"
    folder.mkdir()
    pages = [_scan(lambda d: None), _scan(_text), _scan(_rule_only)]
    pages[0].save(folder / "scan.pdf", save_all=True, append_images=pages[1:], resolution=150)
    runtime = LocalRuntime(settings.model_copy(update={"reader": "auto"}))
    ingested = runtime.planner().ingest_many([folder / "scan.pdf"])
    ids = [i.job_id for i in ingested]
    asyncio.run(runtime.process(lambda: all(j.settled for j in runtime.store.list_jobs(ids))))

    rows = query(settings.lake, "SELECT page_number, reader, chars FROM pages "
                                "ORDER BY page_number").to_pylist()
    assert [(r["page_number"], r["reader"]) for r in rows] == [
        (1, BLANK_READER), (2, "ocr"), (3, BLANK_READER)]
    assert rows[0]["chars"] == 0 and rows[2]["chars"] == 0
    hits = runtime.index.search("disclosing")
    assert [hit.page_number for hit in hits] == [2]


@needs_corpus()
def test_no_page_of_the_corpus_scans_looks_blank():
    """Every scanned page in the shared corpus has text OCR can read (the sparsest: two short
    lines on a 9000 x 9000 image); none may be skipped."""
    scans = sorted((CORPUS / "pdf_scanned").glob("*.pdf"))
    assert scans
    looked = 0
    for path in scans:
        numbers = list(range(1, count_pages(path) + 1))
        for number, (pixels, runs, _) in look_at_pages(path, numbers, None,
                                                       200_000_000).items():
            if pixels and runs is not None:
                looked += 1
                assert not is_blank(runs), (path.name, number, runs)
    assert looked >= 8
