"""``doclake bench pipeline`` prints the command's own process's CPU per page beside the
wall-clock ratio: the ceiling of one run, whatever the cores (``1000 / ms`` pages a second)."""

from __future__ import annotations

import json

from conftest import KLEISTER
from pytest import mark
from typer.testing import CliRunner

from infra.cli.main import app


@mark.skipif(not KLEISTER.is_dir(), reason=f"Kleister NDAs not found at {KLEISTER}")
def test_bench_pipeline_reports_main_process_cpu_per_page():
    result = CliRunner().invoke(app, ["bench", "pipeline", str(KLEISTER), "--limit", "3",
                                      "--book-pages", "0", "--rounds", "1", "--format", "json"])
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout)
    assert figures["inprocess_succeeded"] == 3 and figures["inprocess_pages"] > 3
    # The command's own process, read from the OS: its imports alone cost CPU, so a figure of
    # zero would mean the wrong process (or none) was read.
    assert figures["doclake_run_main_cpu_s"] > 0.05
    assert figures["main_cpu_ms_per_page"] == (
        1000 * figures["doclake_run_main_cpu_s"] / figures["pages"])
    assert 0 < figures["first_job_s"] < figures["doclake_run_wall_s"]
    assert figures["inprocess_main_cpu_process_s"] > 0
    # ... and by thread: the event loop's own, beside the others (``infra.bench.thread_cpu``).
    assert figures["inprocess_main_cpu_s_thread_mainthread"] > 0
    assert "inprocess_main_cpu_s_thread_other" in figures
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
