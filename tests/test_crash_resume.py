"""kill -9 the runtime at any moment; ``doclake worker --until-idle`` finishes every job.

No page is lost, and pages saved before the kill are not read again (their files are untouched).
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.homes import jobs_created, units_done

from infra.settings import Settings
from lake.catalog import query

ENV = {"DOCLAKE_EVENT_FLUSH_S": "0.02", "DOCLAKE_POLL_INTERVAL_S": "0.2",
       "DOCLAKE_CONCURRENCY": "4", "DOCLAKE_CPU_WORKERS": "2"}
DOCS = {f"doc{i}.pdf": 20 + 7 * i for i in range(8)}  # 20..69 pages, 356 in all


def _doclake(*args: str, home: Path) -> list[str]:
    return [sys.executable, "-m", "infra.cli.main", *args, "--home", str(home)]


def _stored_pages(home: Path) -> dict[str, tuple[int, int]]:
    root = home / "objects" / "pages"
    if not root.is_dir():
        return {}
    return {str(p): (p.stat().st_ino, p.stat().st_mtime_ns) for p in root.rglob("*.md")}


KILL_POINTS = {
    "while_ingesting": lambda home: (home / "jobs.db").exists(),
    "after_a_few_units": lambda home: units_done(home) >= 3,
    "mid_read": lambda home: len(_stored_pages(home)) >= 150,
}


@pytest.mark.parametrize("kill_point", sorted(KILL_POINTS))
def test_kill_9_then_worker_until_idle_finishes_everything(kill_point, tmp_path, pdf_factory):
    for name, pages in DOCS.items():
        pdf_factory(name, pages, word="resume")
    folder = tmp_path / "docs"
    home = tmp_path / "home"
    env = {**os.environ, **ENV}
    process = subprocess.Popen(_doclake("run", str(folder), home=home), env=env,
                               start_new_session=True, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not KILL_POINTS[kill_point](home):
        assert process.poll() is None, "the run finished before the kill point"
        assert time.monotonic() < deadline, "kill point never reached"
        time.sleep(0.01)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    before = _stored_pages(home)

    resumed = subprocess.run(_doclake("worker", "--until-idle", home=home), env=env,
                             capture_output=True, text=True, timeout=180)
    assert resumed.returncode == 0, resumed.stderr

    # Files the run had not ingested yet are ingested by running it again: nothing processed twice.
    rerun = subprocess.run(_doclake("run", str(folder), home=home), env=env,
                           capture_output=True, text=True, timeout=180)
    assert rerun.returncode == 0, rerun.stderr

    with sqlite3.connect(home / "jobs.db") as db:
        jobs = db.execute("SELECT source_name, status, pages FROM jobs").fetchall()
    assert sorted((n, s, p) for n, s, p in jobs) == sorted(
        (n, "succeeded", p) for n, p in DOCS.items())

    after = _stored_pages(home)
    assert len(after) == sum(DOCS.values())
    unchanged = {path: after[path] for path in before}
    assert unchanged == before, "a page saved before the kill was written again"

    lake = str(home / "lake")
    pages = query(lake, "SELECT count(*) AS n FROM pages").to_pylist()[0]["n"]
    assert pages == sum(DOCS.values())
    statuses = query(lake, "SELECT DISTINCT status FROM jobs").to_pylist()
    assert statuses == [{"status": "succeeded"}]
    _assert_replay_clean(home, env)


def _assert_replay_clean(home: Path, env: dict) -> None:
    """The lake's events, replayed, land on exactly the store's state."""
    check = subprocess.run(_doclake("lake", "replay", "--check", home=home), env=env,
                           capture_output=True, text=True, timeout=120)
    assert check.returncode == 0, check.stdout + check.stderr


def _dead_letters(home: Path) -> int:
    with sqlite3.connect(home / "queue.db") as db:
        return db.execute("SELECT count(*) FROM messages WHERE queue LIKE '%-dlq'").fetchone()[0]


def test_down_longer_than_the_no_progress_limit_then_resume_succeeds(tmp_path, pdf_factory):
    """kill -9 mid-read, stay down 2.5 times the limit, resume: downtime is not a stall.

    The limit is 4 s, not less: a loaded two-core machine can keep a unit waiting a second or two
    for a CPU process, and that wait counts (the unit's message is in flight, not queued)."""
    for name, pages in DOCS.items():
        pdf_factory(name, pages, word="downtime")
    home = tmp_path / "home"
    env = {**os.environ, **ENV, "DOCLAKE_NO_PROGRESS_TIMEOUT_S": "4"}
    process = subprocess.Popen(_doclake("run", str(tmp_path / "docs"), home=home), env=env,
                               start_new_session=True, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while units_done(home) < 5 or jobs_created(home) < len(DOCS):
        assert process.poll() is None and time.monotonic() < deadline
        time.sleep(0.01)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    time.sleep(10)
    resumed = subprocess.run(_doclake("worker", "--until-idle", home=home), env=env,
                             capture_output=True, text=True, timeout=180)
    assert resumed.returncode == 0, resumed.stderr
    with sqlite3.connect(home / "jobs.db") as db:
        jobs = db.execute("SELECT status, failure_reason FROM jobs").fetchall()
    assert jobs == [("succeeded", None)] * len(DOCS)
    _assert_replay_clean(home, env)


# A stop must land while work is left: a text run of DOCS ends about 0.2 s after its third unit
# (a loaded CI machine missed that window); a simulated model's calls leave seconds.
SLOW_READER = {"DOCLAKE_SIMULATED_LATENCY_SCALE": "0.2", "DOCLAKE_SIMULATED_TIMEOUT_RATE": "0"}
SLOW_FILE_UNITS = 2  # each PDF two units long, at the default pages per unit
PAGES_PER_UNIT = Settings.model_fields["pages_per_unit"].default


def _slow_run(pdf_factory, tmp_path: Path, word: str, files: int) -> list[str]:
    """``doclake run`` of ``files`` two-unit PDFs read by the simulated model, a call a page."""
    for n in range(files):
        pdf_factory(f"doc{n}.pdf", PAGES_PER_UNIT * SLOW_FILE_UNITS, word=word)
    return _doclake("run", str(tmp_path / "docs"), "--reader", "simulated",
                    home=tmp_path / "home")


def test_sigterm_again_and_again_sends_nothing_to_the_dead_letter_queue(tmp_path, pdf_factory):
    """Stopped gracefully more often than the maximum receive count: no message is charged a
    receive it did not use, so none reaches the dead-letter queue, and every job succeeds."""
    command = _slow_run(pdf_factory, tmp_path, word="again", files=16)
    home = tmp_path / "home"
    env = {**os.environ, **ENV, **SLOW_READER, "DOCLAKE_MAX_RECEIVES": "2"}
    stops = 0
    for _ in range(5):
        before = units_done(home)
        process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while units_done(home) < before + 2 and process.poll() is None:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        if process.poll() is not None:
            break  # everything finished before this stop
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
        assert process.returncode == 130, stderr
        stops += 1
        command = _doclake("worker", "--until-idle", home=home)
    assert stops > int(env["DOCLAKE_MAX_RECEIVES"]), f"only {stops} stops landed before the end"
    assert _dead_letters(home) == 0
    finished = subprocess.run(_doclake("worker", "--until-idle", home=home), env=env,
                              capture_output=True, text=True, timeout=180)
    assert finished.returncode == 0, finished.stderr
    assert _dead_letters(home) == 0
    with sqlite3.connect(home / "jobs.db") as db:
        statuses = db.execute("SELECT DISTINCT status FROM jobs").fetchall()
    assert statuses == [("succeeded",)]
    _assert_replay_clean(home, env)


def test_sigterm_stops_gracefully_and_nothing_is_left_in_flight(tmp_path, pdf_factory):
    files = 6
    command = _slow_run(pdf_factory, tmp_path, word="graceful", files=files)
    home = tmp_path / "home"
    env = {**os.environ, **ENV, **SLOW_READER}
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    deadline = time.monotonic() + 60
    while units_done(home) < 3:
        assert process.poll() is None and time.monotonic() < deadline
        time.sleep(0.01)
    assert units_done(home) < files * SLOW_FILE_UNITS, "the run finished before the stop: nothing was tested"
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "interrupted" in stderr
    with sqlite3.connect(home / "queue.db") as db:
        held = db.execute("SELECT count(*) FROM messages WHERE visible_at > ?",
                          (time.time(),)).fetchone()[0]
    assert held == 0, "a message was left hidden: the next worker would wait for it"

    resumed = subprocess.run(_doclake("worker", "--until-idle", home=home), env=env,
                             capture_output=True, text=True, timeout=180)
    assert resumed.returncode == 0, resumed.stderr
    with sqlite3.connect(home / "jobs.db") as db:
        statuses = db.execute("SELECT DISTINCT status FROM jobs").fetchall()
    assert statuses == [("succeeded",)]
