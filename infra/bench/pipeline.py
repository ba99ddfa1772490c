"""The text path against the machine: ``doclake run`` beside a plain pypdfium2 loop.

What a user waits for is the command, start-up included, so both sides run as fresh processes on
the same files, alternately, several rounds; the figure is the ratio of their median wall times
(>= 1.0: doclake is at least as fast as the plain single-process loop). The set mixes many short
documents with one long one (a "book" of 300+ pages assembled from the same PDFs), because a run
is only as fast as its longest document allows.

Beside the wall, the command's own process: its CPU, every thread, read from the OS as it exits
(``infra.bench.command_cpu``), per page (the ceiling of one run, ``1000 / ms`` pages a second,
whatever the cores), and when its first job was registered (``first_job_s``, from the run's own
job store: a small folder's fixed cost).

A separate in-process run of the same set (``stage_breakdown``) breaks the time down by stage
(queue wait for the CPU pool, reading, storing pages, committing events, polling, indexing) and
the main process's CPU by thread: those figures overlap (many messages are in flight at once),
so they say where handlers wait, not a sum of the wall; and they leave out what the command
pays around the runtime (imports, start-up, compaction, the summary).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from infra.bench.command_cpu import CommandFigures, run_command
from infra.bench.thread_cpu import ThreadCpu, process_cpu_s

__all__ = ["PLAIN_LOOP", "build_set", "doclake_command", "run_doclake", "job_times", "compare",
           "stage_breakdown", "compare_fields"]

PLAIN_LOOP = """
import sys, pathlib
import pypdfium2 as pdfium
pages = 0
for path in sorted(pathlib.Path(sys.argv[1]).glob('*.pdf')):
    document = pdfium.PdfDocument(str(path))
    for page in document:
        textpage = page.get_textpage()
        textpage.get_text_bounded()
        textpage.close()
        page.close()
        pages += 1
    document.close()
print(pages)
"""


def build_set(source: Path, into: Path, *, limit: int, book_pages: int,
              copies: int = 1) -> dict[str, int]:
    """Copy the first ``limit`` PDFs of ``source`` into ``into`` and add ``book.pdf``, the
    following PDFs concatenated up to ``book_pages`` pages (0: no book). ``copies`` > 1 adds
    ``copies - 1`` more copies of each, copy ``k`` with the one byte ``k`` appended (PDFium reads
    past it; the sha256 differs, so each is a document of its own, not an unchanged one): the
    254 Kleister training NDAs eight times are the 2,032-document set."""
    import pypdfium2 as pdfium

    paths = sorted(source.glob("*.pdf"))
    into.mkdir(parents=True, exist_ok=True)
    for path in paths[:limit]:
        shutil.copyfile(path, into / path.name)  # a copy: ingest refuses symbolic links
        if copies > 1:
            data = path.read_bytes()
            for copy in range(1, copies):
                (into / f"{path.stem}-{copy}{path.suffix}").write_bytes(data + bytes([copy % 256]))
    pages = 0
    if book_pages > 0:
        book = pdfium.PdfDocument.new()
        for path in paths[limit:] + paths[:limit]:
            part = pdfium.PdfDocument(str(path))
            book.import_pages(part)
            part.close()
            if len(book) >= book_pages:
                break
        pages = len(book)
        book.save(str(into / "book.pdf"))
        book.close()
    settle_writes()
    return {"files": len(list(into.glob("*.pdf"))), "book_pages": pages}


def settle_writes() -> None:
    """Write back what a bench's set-up wrote (copies of a folder or of a home) before the
    runs it times: a run makes its pages durable with ``syncfs`` (``infra.local.durable``),
    which writes back the whole filesystem, so the 13 MB a copied home leaves dirty were
    written by the next run timed. ``bench fields`` saw its second round's fields share at
    25 to 31 % in three benches of three (the other rounds 13 to 21 %) until the copy was
    synced."""
    os.sync()


def doclake_command() -> list[str]:
    script = Path(sys.executable).with_name("doclake")
    return [str(script)] if script.exists() else [sys.executable, "-m", "infra.cli.main"]


def run_doclake(folder: Path, home: Path, reader: str, fields: str) -> CommandFigures:
    """``doclake run`` over ``folder`` as a fresh process, as a user types it."""
    return run_command([*doclake_command(), "run", str(folder), "--home", str(home),
                        "--reader", reader, "--fields", fields])


def job_times(home: Path, started_at: float) -> dict[str, float | None]:
    """Seconds from the command's start to its first job's registration and to its last job's
    end, from the run's own job store."""
    with sqlite3.connect(home / "jobs.db") as db:
        first, last = db.execute("SELECT min(created_at), max(finished_at) FROM jobs").fetchone()

    def since(value: str | None) -> float | None:
        return datetime.fromisoformat(value).timestamp() - started_at if value else None

    return {"first_job_s": since(first), "last_job_finished_s": since(last)}


def compare(folder: Path, rounds: int, reader: str = "text") -> dict[str, float]:
    """Median wall of the plain loop and of ``doclake run`` over ``folder``, and the median
    CPU of each one's own process (the run's: every thread of ``doclake run``, no workers)."""
    plain_wall, plain_cpu, run_wall, run_cpu, first_jobs, peaks = [], [], [], [], [], []
    pages = 0
    with tempfile.TemporaryDirectory(prefix="doclake-bench-homes-") as homes:
        for round_number in range(rounds):
            plain = run_command([sys.executable, "-c", PLAIN_LOOP, str(folder)])
            plain_wall.append(plain.wall_s)
            plain_cpu.append(plain.cpu_s)
            pages = int(plain.stdout.strip())
            # Homes are removed after the last round, not before the next run: ext4 then
            # searches long for a free inode among thousands deleted seconds before (perf: 1.4 s
            # of kernel time in one run), a cost a user's run never meets.
            home = Path(homes) / str(round_number)
            run = run_doclake(folder, home, reader, "none")
            run_wall.append(run.wall_s)
            run_cpu.append(run.cpu_s)
            peaks.append(run.peak_rss_mb)
            first_jobs.append(job_times(home, run.started_at)["first_job_s"])
    plain_s, run_s = statistics.median(plain_wall), statistics.median(run_wall)
    main_cpu = statistics.median(run_cpu)
    return {
        "pages": pages,
        "rounds": rounds,
        "plain_loop_wall_s": plain_s,
        "plain_loop_cpu_s": statistics.median(plain_cpu),
        "doclake_run_wall_s": run_s,
        "ratio_plain_over_doclake": plain_s / run_s,
        "doclake_pages_per_s": pages / run_s,
        # The command's own process, every thread, from the OS as it exits.
        "doclake_run_main_cpu_s": main_cpu,
        "main_cpu_ms_per_page": 1000 * main_cpu / pages if pages else None,
        # The spread of the rounds (a shared machine's figures wander).
        "doclake_run_main_cpu_s_min": min(run_cpu),
        "doclake_run_main_cpu_s_max": max(run_cpu),
        "doclake_run_wall_s_min": min(run_wall),
        "doclake_run_wall_s_max": max(run_wall),
        "plain_loop_wall_s_min": min(plain_wall),
        "plain_loop_wall_s_max": max(plain_wall),
        "first_job_s": statistics.median(known) if (known := [x for x in first_jobs
                                                              if x is not None]) else None,
        "doclake_run_peak_rss_mb": max((p for p in peaks if p is not None), default=None),
        "load_average": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
    }


def stage_breakdown(folder: Path, concurrency: int | None = None, reader: str = "text") -> dict:
    """One in-process run: phases, per-stage handler time, job latency, files written."""
    started = time.perf_counter()
    from extract.state import JobStatus
    from infra.local.runtime import LocalRuntime
    from infra.local.settled_watch import SettledWatch
    from infra.settings import Settings

    imported = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="doclake-bench-") as home:
        options: dict = {"home": Path(home), "reader": reader}
        if concurrency:
            options["concurrency"] = concurrency
        runtime = LocalRuntime(Settings(**options))
        runtime.cpu.warm()
        with ThreadCpu() as threads:
            cpu_started = process_cpu_s()
            ingested = runtime.planner().ingest_many(sorted(folder.glob("*.pdf")))
            ids = [i.job_id for i in ingested]
            planned = time.perf_counter()
            cpu_planned = process_cpu_s()
            # The stop test ``doclake run`` uses: one that listed every job after each pass
            # cost a third of the main thread's CPU, a cost of the bench and not of a run.
            stats = asyncio.run(runtime.process(SettledWatch(runtime.store, ids)))
            finished = time.perf_counter()
            cpu_finished = process_cpu_s()
        jobs = runtime.store.list_jobs(ids)
        pages = sum(j.pages or 0 for j in jobs)
        latencies = sorted((j.finished_at - j.created_at).total_seconds() for j in jobs
                           if j.finished_at)
        book = [j for j in jobs if j.source_name == "book.pdf"]
        files = sum(len(names) for _, _, names in os.walk(runtime.settings.lake))
        return {
            "import_s": imported - started,
            "ingest_s": planned - imported,
            "process_s": finished - planned,
            "succeeded": sum(j.status is JobStatus.SUCCEEDED for j in jobs),
            "pages": pages,
            # The main process's own CPU (its threads, not the parsing processes): the ceiling
            # of one run is about 1000 / main_cpu_ms_per_page pages a second, whatever the cores.
            "main_cpu_ingest_s": cpu_planned - cpu_started,
            "main_cpu_process_s": cpu_finished - cpu_planned,
            "main_cpu_ms_per_page": (1000 * (cpu_finished - cpu_started) / pages
                                     if pages else None),
            # The same CPU by thread (``infra.bench.thread_cpu``): which one holds the ceiling.
            "main_cpu_by_thread": threads.by_thread(),
            "job_latency_p50_s": statistics.median(latencies) if latencies else None,
            "job_latency_max_s": latencies[-1] if latencies else None,
            "book_latency_s": ((book[0].finished_at - book[0].created_at).total_seconds()
                               if book and book[0].finished_at else None),
            "writer_flushes": runtime.writer.stats.flushes,
            **{f"writer_{phase}_s": seconds
               for phase, seconds in sorted(runtime.writer.stats.seconds.items())},
            "lake_files": files,
            "stages": stats.stages.as_dict(),
        }


def compare_fields(folder: Path, rounds: int, reader: str = "text",
                   fields: str = "nda") -> dict[str, float]:
    """What the fields stage adds to what the user waits for: ``doclake run`` with ``--fields
    none`` and with ``--fields nda`` (the rules), as fresh processes in fresh homes, alternately;
    the figure is the ratio of their median wall times (and of their own process's CPU), and
    the fields' share of the run with them (what the user waits for that they add). Beside them,
    the fields of the same folder read before (``--fields none`` once, then ``doclake run
    --fields nda`` again in a copy of that home, each round): the fields' work alone, as a user
    asking a read folder for its fields waits for it."""
    walls: dict[str, list[float]] = {"none": [], fields: []}
    cpus: dict[str, list[float]] = {"none": [], fields: []}
    later: list[float] = []
    later_results = 0
    with tempfile.TemporaryDirectory(prefix="doclake-bench-homes-") as homes:
        read = Path(homes) / "read"
        run_doclake(folder, read, reader, "none")
        for round_number in range(rounds):
            for side in walls:
                # Kept until the last round ends, as in ``compare``.
                home = Path(homes) / f"{round_number}-{side}"
                run = run_doclake(folder, home, reader, side)
                walls[side].append(run.wall_s)
                cpus[side].append(run.cpu_s)
            home = Path(homes) / f"{round_number}-later"
            shutil.copytree(read, home, symlinks=True)
            settle_writes()
            later.append(run_doclake(folder, home, reader, fields).wall_s)
            later_results = len(list((home / "objects" / "results").glob("*.json")))
    without, with_fields = statistics.median(walls["none"]), statistics.median(walls[fields])
    cpu_without, cpu_with = statistics.median(cpus["none"]), statistics.median(cpus[fields])
    return {
        "documents": len(list(folder.glob("*.pdf"))),
        "rounds": rounds,
        "run_wall_s_without_fields": without,
        "run_wall_s_with_fields": with_fields,
        "fields_added_wall_pct": 100 * (with_fields / without - 1),
        # The fields' part of the run a user waits for (the issue's "a fifth of a run's time").
        "fields_share_of_run_pct": 100 * (1 - without / with_fields),
        # The same share a round at a time (its two runs side by side), then the median: a
        # machine whose speed drifts within the bench moves both runs of a round together, where
        # it moves the two medians apart (they may come from rounds minutes apart).
        "fields_share_of_run_pct_paired": 100 * statistics.median(
            1 - alone / both for alone, both in zip(walls["none"], walls[fields], strict=True)),
        "fields_share_of_run_pct_by_round": [
            100 * (1 - alone / both) for alone, both in zip(walls["none"], walls[fields],
                                                             strict=True)],
        "run_cpu_s_without_fields": cpu_without,
        "run_cpu_s_with_fields": cpu_with,
        "fields_added_cpu_pct": 100 * (cpu_with / cpu_without - 1),
        "walls_without": walls["none"],
        "walls_with": walls[fields],
        # ``doclake run --fields nda`` over the folder already read: the fields alone.
        "run_wall_s_fields_of_read_folder": statistics.median(later),
        "walls_fields_of_read_folder": later,
        "results_of_read_folder_run": later_results,  # the last round's: one a document
    }
