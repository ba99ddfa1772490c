"""Formats benchmark: the sheet path against plain python-calamine and openpyxl, Office
conversion per file (cold soffice as the pipeline runs it; warm unoserver when installed), OCR
per page with every core busy, and a 14-sheet workbook through the whole runtime.

    .venv/bin/python -m infra.bench.formats_bench [--corpus ../shared/corpus] [--skip office,ocr]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from extract.formats.office import ConvertLimits, convert_to_pdf
from extract.formats.sniff import sniff_file
from extract.formats.spreadsheet import SheetLimits, plan_workbook, read_sheet

__all__ = ["OFFICE", "SCANS", "sheets", "office", "ocr", "main"]

OFFICE = ["doc/poi_SampleDoc.doc", "docx/python-docx_comments.docx",
          "docx/python-docx_having_images.docx", "odt/sample-files_libreoffice_source.odt",
          "ppt/poi_SampleShow.ppt", "pptx/python-pptx_charts.pptx", "doc/poi_word2_not_ole.doc"]
SCANS = ["pdf_scanned/ocrmypdf_c02-22_huckfinn_scan.pdf", "pdf_scanned/ocrmypdf_ccitt_g4_scan.pdf",
         "pdf_scanned/ocrmypdf_multipage_mixed_scans_6p.pdf"]


def sheets(corpus: Path, repeat: int) -> None:
    files = [corpus / "xlsx/poi_bug62181_19k_rows.xlsx"]
    limits = SheetLimits()

    def ours() -> int:
        rows = 0
        for path in files:
            plan = plan_workbook(path, sniff_file(path).format, limits, False)
            rows += sum(t.rows for t in plan.texts)
            for sheet in plan.sheets[len(plan.texts):]:
                rows += read_sheet(path, sniff_file(path).format, sheet.position, limits).rows
        return rows

    def calamine() -> int:
        import python_calamine

        rows = 0
        for path in files:
            book = python_calamine.CalamineWorkbook.from_path(str(path))
            for name in book.sheet_names:
                rows += len(book.get_sheet_by_name(name).to_python())
        return rows

    def openpyxl_rows() -> int:
        import openpyxl

        rows = 0
        for path in files:
            book = openpyxl.load_workbook(path, read_only=True, data_only=True)
            for sheet in book.worksheets:
                rows += sum(1 for _ in sheet.iter_rows(values_only=True))
            book.close()
        return rows

    # Rounds alternate the three, so that a busy machine slows each alike; best of the rounds,
    # in wall time and in CPU time (this process's: every path here runs in it), the second
    # being the steadier when other work shares the cores.
    runs = (("doclake sheet path", ours), ("plain calamine", calamine),
            ("openpyxl read-only", openpyxl_rows))
    wall = dict.fromkeys((name for name, _ in runs), float("inf"))
    cpu = dict(wall)
    rows = {}
    for _ in range(repeat):
        for name, fn in runs:
            started, started_cpu = time.perf_counter(), time.process_time()
            rows[name] = fn()
            cpu[name] = min(cpu[name], time.process_time() - started_cpu)
            wall[name] = min(wall[name], time.perf_counter() - started)
    for name, _ in runs:
        print(f"sheets  {name:22s} {rows[name]:7d} rows  {wall[name]:6.3f} s "
              f"{rows[name] / wall[name]:8.0f} rows/s  (CPU {cpu[name]:6.3f} s "
              f"{rows[name] / cpu[name]:8.0f} rows/s)")
    ours_name, plain_name, openpyxl_name = (name for name, _ in runs)
    for label, best in (("wall", wall), ("CPU", cpu)):
        speed = {name: rows[name] / best[name] for name, _ in runs}
        print(f"sheets  {label:4s} doclake / plain calamine = "
              f"{speed[ours_name] / speed[plain_name]:.2f} (goal 0.8), "
              f"doclake / openpyxl = {speed[ours_name] / speed[openpyxl_name]:.1f} (goal 5)")


def office(corpus: Path) -> None:
    async def cold() -> list[float]:
        times = []
        for name in OFFICE:
            path = corpus / name
            started = time.perf_counter()
            async with convert_to_pdf(path, sniff_file(path).format, ConvertLimits()):
                pass
            times.append(time.perf_counter() - started)
        return times

    times = asyncio.run(cold())
    print(f"office  cold soffice (fresh process, copied profile): first {times[0]:.2f} s, "
          f"then {sum(times[1:]) / len(times[1:]):.2f} s/file over {len(times) - 1} files")
    unoconvert = shutil.which("unoconvert") or str(Path(sys.executable).parent / "unoconvert")
    if not Path(unoconvert).exists() or subprocess.run(
            ["/usr/bin/python3", "-c", "import uno"], capture_output=True).returncode:
        print("office  warm unoserver: not installed (pip install unoserver; apt-get install "
              "python3-uno)")
        return
    import unoserver

    site = str(Path(unoserver.__file__).parents[1])
    with tempfile.TemporaryDirectory() as folder:
        server = subprocess.Popen(
            ["/usr/bin/python3", "-m", "unoserver.server", "--interface", "127.0.0.1",
             "--port", "2103", "--uno-port", "2102", "--user-installation", folder],
            env={"PYTHONPATH": site, "PATH": "/usr/bin:/bin", "HOME": folder},
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            time.sleep(8)
            ok, times = 0, []
            for name in OFFICE:
                started = time.perf_counter()
                done = subprocess.run([unoconvert, "--host", "127.0.0.1", "--port", "2103",
                                       "--convert-to", "pdf", str(corpus / name),
                                       f"{folder}/out.pdf"], capture_output=True, timeout=120)
                times.append(time.perf_counter() - started)
                ok += done.returncode == 0
            print(f"office  warm unoserver: first {times[0]:.2f} s, then "
                  f"{sum(times[1:]) / len(times[1:]):.2f} s/file; {ok}/{len(times)} converted")
        finally:
            import os
            import signal
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


def _ocr(job: tuple[str, int]) -> float:
    from extract.readers.ocr import ocr_pages

    started = time.perf_counter()
    ocr_pages(Path(job[0]), [job[1]], None, dpi=300, max_pixels=12_000_000,
              max_image_pixels=250_000_000)
    return time.perf_counter() - started


def ocr(corpus: Path, workers: int) -> None:
    import pypdfium2

    jobs = [(str(corpus / name), n) for name in SCANS
            for n in range(1, len(pypdfium2.PdfDocument(str(corpus / name))) + 1)]
    started = time.perf_counter()
    with ProcessPoolExecutor(workers) as pool:
        per_page = list(pool.map(_ocr, jobs))
    wall = time.perf_counter() - started
    print(f"ocr     {len(jobs)} pages on {workers} processes: {wall:.1f} s wall, "
          f"{wall / len(jobs):.2f} s/page throughput, {sum(per_page) / len(per_page):.2f} s/page "
          "each (OMP_THREAD_LIMIT=1)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", type=Path,
                        default=Path(__file__).resolve().parents[2] / "shared" / "corpus")
    parser.add_argument("--skip", default="")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    skip = set(args.skip.split(","))
    if "sheets" not in skip:
        sheets(args.corpus, args.repeat)
    if "office" not in skip:
        office(args.corpus)
    if "ocr" not in skip:
        import os
        ocr(args.corpus, os.cpu_count() or 1)


if __name__ == "__main__":
    main()
