"""Issue 19, item 5: a one-page Office file and a text PDF finish, and their results are published,
while OCR pages of a scan are still waiting; a run, a real pool, a real LibreOffice conversion.

The OCR page is replaced by a stand-in that waits for the test to let it go (``gated_ocr_page``),
so "OCR is slow" is as slow as the test needs and no assertion reads a clock: with the OCR pages
held, the Office file's text layer, index and fields must get through (before the lanes they
queued behind the held pages and the Office file finished only when the stand-in gave up, 60 s
later). The poll interval is an hour, so nothing on the way to a published result may wait for
the poller's timer either.
"""

from __future__ import annotations

import asyncio
import functools
from pathlib import Path

import pytest
from PIL import Image, ImageDraw, ImageFont
from support import cpu_tasks
from support.officegen import make_docx
from support.pdfgen import make_pdf

from extract.formats.office import find_soffice
from extract.readers import ocr
from infra.local.runtime import LocalRuntime
from infra.settings import Settings

needs_soffice = pytest.mark.skipif(find_soffice() is None, reason="LibreOffice is not installed")


def _scan(path: Path, pages: int) -> Path:
    """An image-only PDF: each page a 150 dpi picture of a line of text (not blank to a glance)."""
    images = []
    for number in range(1, pages + 1):
        image = Image.new("L", (1275, 1650), 238)
        ImageDraw.Draw(image).text((150, 200), f"Scanned page {number} of the agreement",
                                   fill=20, font=ImageFont.load_default(size=40))
        images.append(image)
    images[0].save(path, save_all=True, append_images=images[1:], resolution=150)
    return path


@needs_soffice
def test_an_office_file_is_published_while_ocr_pages_are_still_queued(tmp_path, monkeypatch):
    gate = tmp_path / "gate"
    gate.mkdir()
    stand_in = functools.partial(cpu_tasks.gated_ocr_page, str(gate))
    stand_in.__name__ = "_ocr_one"  # routed as the OCR page it stands for
    monkeypatch.setattr(ocr, "_ocr_one", stand_in)
    monkeypatch.setattr(ocr, "tesseract_status", lambda: None)  # the stand-in needs no tesseract

    folder = tmp_path / "drop"
    folder.mkdir()
    scan = _scan(folder / "scan.pdf", 4)
    memo = make_docx(folder / "memo.docx", ["MEMO", "The quarterly review moves to Friday."])
    letter = make_pdf(folder / "letter.pdf", ["A letter of one page."])
    settings = Settings(home=tmp_path / "home", poll_interval_s=3600, cpu_workers=1,
                        concurrency=8, visibility_timeout_s=300, reader="auto")
    runtime = LocalRuntime(settings)
    scan_job, memo_job, letter_job = (i.job_id for i in runtime.planner().ingest_many(
        [scan, memo, letter]))
    runtime.store.request_fields([scan_job, memo_job, letter_job], "nda", "rules")
    seen: dict[str, int] = {}

    def done() -> bool:
        jobs = {j.job_id: j for j in runtime.store.list_jobs([scan_job, memo_job, letter_job])}
        if not seen and all(jobs[j].fields_published_at for j in (memo_job, letter_job)):
            seen["ocr_started"] = len(list(gate.glob("started-*")))
            seen["ocr_done"] = len(list(gate.glob("done-*")))
            seen["scan_finished"] = jobs[scan_job].status.terminal
            (gate / "open").touch()  # now the scan may finish
        return all(j.settled for j in jobs.values())

    asyncio.run(asyncio.wait_for(runtime.process(done), timeout=300))

    # The memo and the letter were published while the OCR pages were held: started, none done.
    assert seen["ocr_started"] >= 1
    assert seen == {"ocr_started": seen["ocr_started"], "ocr_done": 0, "scan_finished": False}
    memo_pages = runtime.index.search("quarterly")
    assert [(hit.document_id, hit.page_number) for hit in memo_pages] == [
        (runtime.store.get_job(memo_job).document_id, 1)]
    assert len(list(gate.glob("done-*"))) == 4  # and the scan was read in full afterwards


def test_the_rules_strategy_is_built_once_a_process_not_once_a_document(monkeypatch):
    """On the way to every result: building the rules strategy (loading the model, hashing it
    and the generators' code) took 30 ms, six times an NDA's extraction, and was done twice a
    document, on the main process's event loop and in the short lane. Built once where the rules
    run, it is reused; the handler's process (the run's event loop: 0.4 to 0.7 s under load)
    only reads the version, and it is the one the results carry."""
    from extract.fields.base import PageText
    from extract.fields.rules import offline
    from extract.fields.rules.strategy import RulesStrategy

    offline.shipped_rules.cache_clear()
    built = []
    real_init = RulesStrategy.__init__

    def counting_init(self, *args, **kwargs):
        built.append(self)
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(RulesStrategy, "__init__", counting_init)
    pages = (PageText(1, "MUTUAL NON-DISCLOSURE AGREEMENT between Acme, Inc. and Beta LLC, "
                         "governed by the laws of the State of Delaware."),)
    versions = {offline.OffloadedRules(cpu=None, timeout_s=1).model_version for _ in range(3)}
    assert built == []  # the handler's process records the version from the files, builds none
    results = [offline.run_rules(pages) for _ in range(3)]  # as the short lane's process runs it
    assert len(built) == 1 and len(versions) == 1
    assert {r.model_version for r in results} == versions


@needs_soffice
@pytest.mark.skipif(ocr.tesseract_status() is not None, reason="tesseract is not installed")
def test_bench_short_work_prints_each_small_file_alone_and_beside_scans():
    import json
    import time

    from typer.testing import CliRunner

    from infra.cli.main import app

    started = time.monotonic()
    result = CliRunner().invoke(app, ["bench", "short-work", "--scans", "1", "--pages", "1",
                                      "--rounds", "1", "--format", "json"])
    wall = time.monotonic() - started
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout)
    # Each small file's two timings are runs of their own, one after the other: together they
    # fit inside this test's own wall clock (a figure that added the runs up twice, or counted
    # from the bench's start, would not).
    for name in ("memo_docx", "figures_csv"):
        alone, beside = figures[f"{name}_alone_s"], figures[f"{name}_beside_scans_s"]
        assert alone > 0 and beside > 0 and alone + beside < wall, (name, alone, beside, wall)
        assert figures[f"{name}_extra_s"] == pytest.approx(beside - alone)
    assert figures["memo_docx_alone_s"] + figures["figures_csv_alone_s"] < wall
    assert figures["worst_extra_s"] == max(figures["memo_docx_extra_s"],
                                           figures["figures_csv_extra_s"])
