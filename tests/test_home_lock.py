"""One home, one writer: a second ``run`` or ``worker`` on a home being worked is refused naming
the other process; the lock goes with its holder however it ends; and a rerun after an
interruption counts as "unchanged" only the documents that had ended before it began."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.terminal import doclake_command


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "DOCLAKE_HOME"}


def doclake(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([doclake_command(), *args], cwd=cwd, env=_env(), capture_output=True,
                          text=True, timeout=240)


def start_worker(home: Path, cwd: Path) -> subprocess.Popen:
    """A ``doclake worker`` that runs until stopped, once it holds the home (its pid is in the
    lock file: waited for, never slept on)."""
    worker = subprocess.Popen([doclake_command(), "worker", "--home", str(home)], cwd=cwd,
                              env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    deadline = time.monotonic() + 120
    lock = home / "writer.lock"
    while time.monotonic() < deadline:
        if lock.is_file() and lock.read_text().startswith(f"{worker.pid} "):
            return worker
        if worker.poll() is not None:
            raise AssertionError(f"the worker ended first: {worker.communicate()}")
        time.sleep(0.05)
    worker.kill()
    raise AssertionError("the worker never took the home's lock")


@pytest.fixture
def room(tmp_path: Path) -> Path:
    folder = tmp_path / "room"
    folder.mkdir()
    (folder / "a.txt").write_text("Mutual non-disclosure agreement between Acme and Beta.\n")
    (folder / "b.txt").write_text("Confidential information stays confidential.\n")
    return folder


def test_a_second_writer_is_refused_naming_the_first_then_runs_once_it_is_gone(tmp_path, room):
    home = tmp_path / "home"
    assert doclake("run", str(room / "a.txt"), "--fields", "none", "--home", str(home),
                   cwd=tmp_path).returncode == 0
    worker = start_worker(home, tmp_path)
    try:
        for command in (["run", str(room), "--fields", "none"], ["worker", "--until-idle"]):
            second = doclake(*command, "--home", str(home), cwd=tmp_path)
            assert second.returncode == 2, second.stderr
            message = " ".join(second.stderr.split())
            assert f"another doclake is working on home {home} (pid {worker.pid}, doclake " \
                   "worker)" in message
            assert f"kill -INT {worker.pid}" in message
    finally:
        worker.send_signal(signal.SIGINT)
        worker.communicate(timeout=120)
    third = doclake("run", str(room), "--fields", "none", "--home", str(home), cwd=tmp_path)
    assert third.returncode == 0, third.stderr


def test_a_killed_writer_leaves_a_lock_the_next_takes_over(tmp_path, room):
    home = tmp_path / "home"
    assert doclake("run", str(room / "a.txt"), "--fields", "none", "--home", str(home),
                   cwd=tmp_path).returncode == 0
    worker = start_worker(home, tmp_path)
    worker.kill()  # SIGKILL: no handler, no cleanup
    worker.communicate(timeout=60)
    assert (home / "writer.lock").read_text().startswith(f"{worker.pid} ")  # its name is left
    again = doclake("run", str(room), "--fields", "none", "--home", str(home), cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert (home / "writer.lock").read_text() == ""  # released at the end, no stale name


def test_reading_commands_do_not_wait_for_the_writer(tmp_path, room):
    home = tmp_path / "home"
    assert doclake("run", str(room), "--fields", "none", "--home", str(home),
                   cwd=tmp_path).returncode == 0
    worker = start_worker(home, tmp_path)
    try:
        status = doclake("status", "--home", str(home), "--format", "csv", cwd=tmp_path)
        assert status.returncode == 0, status.stderr
    finally:
        worker.send_signal(signal.SIGINT)
        worker.communicate(timeout=120)


def test_a_job_finished_by_the_rerun_counts_as_resumed_not_unchanged(tmp_path, room):
    """The rerun's workers start on what the interrupted run left while the rerun still plans
    its files: a job found ended at planning time may have been mid-extraction when the rerun
    began. The report is told which jobs had not ended then."""
    from infra.cli.render.run_report import RunReport
    from infra.local.jobstore import SqliteJobStore
    from ingest.planner import Ingested, IngestOutcome

    home = tmp_path / "home"
    assert doclake("run", str(room), "--fields", "none", "--home", str(home),
                   cwd=tmp_path).returncode == 0
    store = SqliteJobStore(home / "jobs.db")
    jobs = {Path(j.source_path or j.source_name).name: j for j in store.list_jobs()}
    ingested = [Ingested(IngestOutcome.UNCHANGED, jobs[name].document_id, jobs[name].job_id, name)
                for name in ("a.txt", "b.txt")]
    # b.txt's job was extracting when the rerun began (as the store said then)
    report = RunReport.start(store, ingested, time.perf_counter(), {jobs["b.txt"].job_id})
    summary = report.finish(store, interrupted=False).summary
    assert (summary["unchanged"], summary["resumed"]) == (1, 1)
    plain = RunReport.start(store, ingested, time.perf_counter()).finish(store, interrupted=False)
    assert (plain.summary["unchanged"], plain.summary["resumed"]) == (2, 0)


def test_the_store_names_the_jobs_not_ended(tmp_path, room):
    from infra.local.jobstore import SqliteJobStore

    home = tmp_path / "home"
    assert doclake("run", str(room), "--fields", "none", "--home", str(home),
                   cwd=tmp_path).returncode == 0
    store = SqliteJobStore(home / "jobs.db")
    assert store.unfinished_job_ids() == set()
    job = store.list_jobs()[0]
    with sqlite3.connect(home / "jobs.db") as db:  # as an interrupted run leaves it
        db.execute("UPDATE jobs SET status = 'extracting' WHERE job_id = ?", (job.job_id,))
    assert store.unfinished_job_ids() == {job.job_id}
