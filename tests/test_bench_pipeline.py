"""``doclake bench pipeline`` prints the main process's own CPU per page beside the wall-clock
ratio: the ceiling of one run, whatever the cores (``1000 / ms`` pages a second)."""

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
    assert figures["main_cpu_ms_per_page"] > 0
    assert figures["inprocess_main_cpu_process_s"] > 0
    # ... and by thread: the event loop's own, beside the others (``infra.bench.thread_cpu``).
    assert figures["main_cpu_s_thread_mainthread"] > 0
    assert "main_cpu_s_thread_other" in figures
    assert figures["ratio_plain_over_doclake"] > 0
