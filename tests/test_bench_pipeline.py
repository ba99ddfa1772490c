"""``doclake bench pipeline`` prints the command's own process's CPU per page beside the
wall-clock ratio: the ceiling of one run, whatever the cores (``1000 / ms`` pages a second)."""

from __future__ import annotations

import json

import pytest
from conftest import KLEISTER
from pytest import mark
from typer.testing import CliRunner

from infra.cli.main import app


@mark.skipif(not KLEISTER.is_dir(), reason=f"Kleister NDAs not found at {KLEISTER}")
def test_bench_pipeline_reports_main_process_cpu_per_page():
    """The bench's figures against what this test measures itself: the pages of the three PDFs
    it runs (counted with pypdfium2), its wall clock, and the CPU of every process it waited for
    (``RUSAGE_CHILDREN``: the command's own CPU can be no more than that)."""
    import resource
    import time

    import pypdfium2

    first_three = sorted(KLEISTER.glob("*.pdf"))[:3]
    pages = 0
    for path in first_three:
        document = pypdfium2.PdfDocument(path)
        pages += len(document)
        document.close()
    children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    result = CliRunner().invoke(app, ["bench", "pipeline", str(KLEISTER), "--limit", "3",
                                      "--book-pages", "0", "--rounds", "1", "--format", "json"])
    wall = time.monotonic() - started
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    children_cpu = (children.ru_utime + children.ru_stime
                    - children_before.ru_utime - children_before.ru_stime)
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout)
    assert (figures["inprocess_succeeded"], figures["inprocess_pages"]) == (3, pages)
    assert figures["pages"] == pages
    # The command's own process, read from the OS: its imports alone cost CPU (so zero would
    # mean the wrong process, or none, was read), and it is one of the processes waited for.
    assert 0.05 < figures["doclake_run_main_cpu_s"] <= children_cpu + 0.01
    assert figures["main_cpu_ms_per_page"] == pytest.approx(
        1000 * figures["doclake_run_main_cpu_s"] / pages)
    # Its clocks fit inside this test's: the run, and its first job inside the run.
    assert 0 < figures["first_job_s"] < figures["doclake_run_wall_s"] < wall
    assert figures["inprocess_main_cpu_process_s"] > 0
    # ... and by thread: the event loop's own, beside the others (``infra.bench.thread_cpu``);
    # no thread used more CPU than its whole process.
    assert 0 < figures["inprocess_main_cpu_s_thread_mainthread"] <= \
        figures["inprocess_main_cpu_process_s"] + 0.01
    assert 0 <= figures["inprocess_main_cpu_s_thread_other"] <= \
        figures["inprocess_main_cpu_process_s"] + 0.01
    assert figures["ratio_plain_over_doclake"] > 0


def test_run_command_reads_the_exited_process_not_its_children(tmp_path):
    """The figure is the command's own CPU: a child it waits for is not counted, its own
    spinning is."""
    import sys

    from infra.bench.command_cpu import run_command

    spin = ("import time\nend = time.process_time() + {s}\n"
            "while time.process_time() < end: pass\n")
    child = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {spin.format(s=0.6)!r}])"
    waits = run_command([sys.executable, "-c", child])
    spins = run_command([sys.executable, "-c", spin.format(s=0.6)])
    assert spins.cpu_s >= 0.5
    assert waits.cpu_s < 0.4  # its child's 0.6 s are not its own
    assert waits.wall_s >= 0.6


def test_bench_fields_prints_the_fields_share_of_the_run_its_walls_give(pdf_factory, tmp_path):
    """``doclake bench fields`` on two one-page files, one round: the walls it prints are two
    real runs (each a fresh ``doclake run``, each over a second), and the fields' share of the
    run with them is what those walls give, ``1 - without / with``, as a reader would work it
    out from the printed medians."""
    import statistics

    pdf_factory("letter.pdf", 1)
    pdf_factory("memo.pdf", 1, word="agreement")
    folder = tmp_path / "docs"
    result = CliRunner().invoke(app, ["bench", "fields", str(folder), "--rounds", "1",
                                      "--format", "json"])
    assert result.exit_code == 0, result.output
    figures = json.loads(result.output)
    assert figures["documents"] == 2
    without = statistics.median(figures["walls_without"])
    with_fields = statistics.median(figures["walls_with"])
    assert min(without, with_fields) > 0.3  # a command's start alone takes that
    assert figures["fields_share_of_run_pct"] == pytest.approx(100 * (1 - without / with_fields))
    # One round: its pair is the medians' pair.
    assert figures["fields_share_of_run_pct_by_round"] == [
        pytest.approx(100 * (1 - without / with_fields))]
    assert figures["fields_share_of_run_pct_paired"] == pytest.approx(
        figures["fields_share_of_run_pct"])
    assert figures["fields_added_wall_pct"] == pytest.approx(100 * (with_fields / without - 1))
    # The fields of the folder read before: a real run that published a result a document.
    later = figures["walls_fields_of_read_folder"]
    assert figures["run_wall_s_fields_of_read_folder"] == statistics.median(later) > 0.3
    assert figures["results_of_read_folder_run"] == 2


def test_the_paired_share_takes_each_rounds_two_runs_together(tmp_path, monkeypatch):
    """A machine slower in one round than the others: each round's share is its own two runs'
    (``1 - without / with``) and the paired figure their median, where the medians' share
    mixes a fast round's run without the fields with a slow round's run with them."""
    from infra.bench import pipeline

    walls = iter([0.5,              # the folder read once, for the read-folder runs
                  1.0, 1.1, 0.9,    # round 1: without, with, read folder's fields
                  3.0, 3.3, 2.0,    # round 2: the machine three times slower
                  2.0, 2.6, 1.5])   # round 3

    def run_doclake(folder, home, reader, fields):
        (home / "objects" / "results").mkdir(parents=True, exist_ok=True)
        return pipeline.CommandFigures(wall_s=next(walls), cpu_s=0.1, peak_rss_mb=1.0, stdout="",
                                        started_at=0.0)

    monkeypatch.setattr(pipeline, "run_doclake", run_doclake)
    figures = pipeline.compare_fields(tmp_path, rounds=3)
    assert figures["walls_without"] == [1.0, 3.0, 2.0]
    assert figures["walls_with"] == [1.1, 3.3, 2.6]
    assert figures["fields_share_of_run_pct_by_round"] == pytest.approx(
        [100 / 11, 100 / 11, 100 * 0.6 / 2.6])
    assert figures["fields_share_of_run_pct_paired"] == pytest.approx(100 / 11)
    assert figures["fields_share_of_run_pct"] == pytest.approx(100 * (1 - 2.0 / 2.6))


def test_no_timed_run_writes_back_what_the_bench_copied_before_it(tmp_path, monkeypatch):
    """A run makes its pages durable with ``syncfs``, which writes back the whole filesystem:
    the home the bench copies for each read-folder run is written back (synced) before the
    next timed run starts, not by it."""
    from infra.bench import pipeline

    steps: list[str] = []

    def run_doclake(folder, home, reader, fields):
        home.mkdir(parents=True, exist_ok=True)
        (home / "objects" / "results").mkdir(parents=True, exist_ok=True)
        (home / "page.md").write_text("a page the run wrote")
        steps.append(f"run {fields}")
        return pipeline.CommandFigures(wall_s=1.0, cpu_s=0.1, peak_rss_mb=1.0, stdout="",
                                        started_at=0.0)

    copytree = pipeline.shutil.copytree
    depth = [0]

    def copying(*args, **kwargs):  # copytree calls itself for each folder: the outer call
        depth[0] += 1
        try:
            return copytree(*args, **kwargs)
        finally:
            depth[0] -= 1
            if depth[0] == 0:
                steps.append("copy")

    monkeypatch.setattr(pipeline, "run_doclake", run_doclake)
    monkeypatch.setattr(pipeline.shutil, "copytree", copying)
    monkeypatch.setattr(pipeline.os, "sync", lambda: steps.append("sync"))
    pipeline.compare_fields(tmp_path, rounds=2)
    copies = [n for n, step in enumerate(steps) if step == "copy"]
    assert len(copies) == 2
    assert all(steps[n + 1] == "sync" for n in copies)
