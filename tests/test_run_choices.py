"""A job is handled with the choices of the run that created it, wherever it is resumed (issue 19).

Measured before: a ``--reader simulated`` run killed with SIGKILL half way and finished with
``doclake worker --until-idle`` (no flags, as the README says) read the rest by the text layer,
with no model call. Here the same, for real: the run is killed, the worker has no reader flag and
no ``DOCLAKE_READER``, and every page must still be read (and paid for) by the simulated model.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from support.homes import jobs_created

from lake.catalog import query

ENV = {"DOCLAKE_SIMULATED_LATENCY_SCALE": "0.5", "DOCLAKE_SIMULATED_TIMEOUT_RATE": "0",
       "DOCLAKE_EVENT_FLUSH_S": "0.02", "DOCLAKE_POLL_INTERVAL_S": "0.3",
       "DOCLAKE_CONCURRENCY": "4", "DOCLAKE_CPU_WORKERS": "2"}


def _cli(*args: str, home: Path) -> list[str]:
    return [sys.executable, "-m", "infra.cli.main", *args, "--home", str(home)]


def _stored(home: Path) -> int:
    root = home / "objects" / "pages"
    return sum(1 for _ in root.rglob("*.md")) if root.is_dir() else 0


def test_a_killed_simulated_run_resumed_by_a_plain_worker_reads_every_page_by_the_model(
        tmp_path, pdf_factory):
    for n in range(4):
        pdf_factory(f"doc{n}.pdf", 15, word="resume")  # 60 pages, all with a text layer
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if k != "DOCLAKE_READER"} | ENV
    process = subprocess.Popen(
        _cli("run", str(tmp_path / "docs"), "--reader", "simulated", "--fields", "none",
             home=home),
        env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while _stored(home) < 15 or jobs_created(home) < 4:
        assert process.poll() is None, "the run ended before the kill point"
        assert time.monotonic() < deadline, "kill point never reached"
        time.sleep(0.02)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    assert _stored(home) < 60, "the kill came too late to test a resume"

    done = subprocess.run(_cli("worker", "--until-idle", home=home), env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]

    lake = str(home / "lake")
    jobs = query(lake, "SELECT status, count(*) AS n FROM jobs GROUP BY 1").to_pylist()
    assert jobs == [{"status": "succeeded", "n": 4}], jobs
    readers = query(lake, "SELECT reader, count(*) AS n FROM pages GROUP BY 1").to_pylist()
    assert sum(r["n"] for r in readers) == 60
    assert [r for r in readers if r["reader"] in ("text", "ocr")] == [], readers
    unpaid = query(lake, """
        SELECT count(*) AS n FROM pages p ANTI JOIN model_calls c
        ON c.job_id = p.job_id AND c.page_number = p.page_number AND c.outcome = 'ok'
    """).to_pylist()[0]["n"]
    assert unpaid == 0, "every page was read by a model call"
    calls = query(lake, "SELECT count(*) AS n FROM model_calls WHERE outcome = 'ok'"
                  ).to_pylist()[0]["n"]
    in_flight = 4 * 5  # concurrency x pages_in_flight: the most answered but unsaved at the kill
    assert 60 <= calls <= 60 + in_flight, calls
    # Issue 19, item 9: simulated calls are kept apart from real spend in daily_costs.
    costs = query(lake, "SELECT model, simulated, is_total, pages FROM daily_costs "
                        "ORDER BY is_total, model").to_pylist()
    assert costs and all(r["simulated"] and r["model"].startswith("simulated:") for r in costs)
    assert [r["pages"] for r in costs if r["is_total"]] == [60]


def test_a_second_ctrl_c_stops_at_once_and_the_first_says_so(tmp_path, pdf_factory):
    """Issue 19, item 7: the first Ctrl-C waits for the messages in hand; it now says that a
    second one stops at once, and the second does (here the model calls in hand would take an
    hour: without it the run would not end)."""
    import sqlite3

    pdf_factory("slow.pdf", 5, word="slow")
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if k != "DOCLAKE_READER"} | ENV | {
        "DOCLAKE_SIMULATED_LATENCY_SCALE": "2000", "DOCLAKE_MODEL_TIMEOUT_S": "3600"}
    process = subprocess.Popen(
        _cli("run", str(tmp_path / "docs"), "--reader", "simulated", "--fields", "none",
             home=home), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while True:  # a unit is being read: its model calls are in hand
        assert process.poll() is None and time.monotonic() < deadline
        try:
            with sqlite3.connect(home / "jobs.db") as db:
                if db.execute("SELECT count(*) FROM units WHERE status = 'running'").fetchone()[0]:
                    break
        except sqlite3.Error:
            pass
        time.sleep(0.1)
    import threading

    said = threading.Event()
    err_lines: list[str] = []

    def read_stderr() -> None:
        for line in process.stderr:
            err_lines.append(line)
            if "Ctrl-C again to stop at once" in line:
                said.set()

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    process.send_signal(signal.SIGINT)
    # The second Ctrl-C once the first has been heard (it says so), however long that takes.
    assert said.wait(timeout=120), "".join(err_lines)[-2000:]
    process.send_signal(signal.SIGINT)
    process.wait(timeout=120)
    reader.join(timeout=30)
    err = "".join(err_lines)
    assert process.returncode == 130, err[-2000:]
