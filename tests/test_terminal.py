"""Every everyday command, run in a pseudo-terminal as a person runs it.

A piped test never starts rich's live progress bar or the SQL prompt; these do (see
``support.terminal``). Each asserts the exit code, that no traceback reached the screen and that
what the person came for is on it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from support.terminal import HIDE_CURSOR, doclake_command, run_in_terminal

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
FAST = {"DOCLAKE_EVENT_FLUSH_S": "0.02", "DOCLAKE_POLL_INTERVAL_S": "0.2"}


def doclake(*args: str, home: Path, **options) -> object:
    return run_in_terminal([doclake_command(), *args, "--home", str(home)],
                           env={**FAST, **options.pop("env", {})}, **options)


def lines(run) -> list[str]:
    """The screen's lines, trailing spaces cut: tests compare whole lines, never substrings."""
    return [line.rstrip() for line in run.text.splitlines()]


def rows(run) -> list[list[str]]:
    """The cells of every body row of the tables on screen (rich's ``│`` separators)."""
    return [[cell.strip() for cell in line.strip().strip("│").split("│")]
            for line in lines(run) if line.lstrip().startswith("│")]


def the_line(run, pattern: str) -> re.Match:
    """The one line on screen that ``pattern`` matches whole."""
    found = [m for m in (re.fullmatch(pattern, line) for line in lines(run)) if m]
    assert len(found) == 1, (pattern, run.text[-3000:])
    return found[0]


def assert_clean(run) -> None:
    assert run.returncode == 0, run.text[-3000:]
    assert "Traceback" not in run.text, run.text[-3000:]


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The examples run once in a terminal; the other commands look at its home."""
    home = tmp_path_factory.mktemp("terminal") / "home"
    return home, doclake("run", str(EXAMPLES), home=home)


def _lake_count(home: Path, sql: str) -> int:
    done = subprocess.run([doclake_command(), "sql", sql, "--home", str(home), "--format", "json"],
                          capture_output=True, text=True, check=True, env={**FAST})
    return next(iter(json.loads(done.stdout)[0].values()))


def test_run_draws_live_progress_then_a_summary_that_matches_the_lake(demo):
    home, run = demo
    assert_clean(run)
    assert HIDE_CURSOR in run.raw, "no live progress was drawn: the command did not see a terminal"
    files = [p for p in EXAMPLES.iterdir() if p.is_file() and not p.name.startswith(".")]
    n = len(files)
    assert f"documents {n}  (new {n}, new versions 0, unchanged 0)" in lines(run)
    summary = the_line(run, r"succeeded (\d+)  failed 0  pages (\d+) \((\d+) read by this run\)"
                            r"  time [\d.]+ s  \([\d.]+ pages/s\)")
    succeeded, pages, read = map(int, summary.groups())
    assert succeeded == n == _lake_count(
        home, "SELECT count(*) FROM jobs WHERE status = 'succeeded'")
    assert pages == read == _lake_count(home, "SELECT count(*) FROM pages")
    after = lines(run)[lines(run).index(summary.group(0)) + 1:]
    # The line wraps at a word where the terminal is narrower than it (a long home path).
    paths = after[:after.index("next:")]
    assert " ".join(paths) == (f"results: {home}/objects/results/<document_id>.json  text: "
                               f"{home}/objects/pages/<document_id>/<job_id>/00001.md"), after
    # 100: run_in_terminal's width
    assert len(paths) <= 2 and all(len(line) <= 100 for line in paths), after
    rest = after[len(paths):]
    assert rest[:2] == ["next:", f"  doclake status --home {home}"], after


def test_worker_in_a_terminal(demo):
    home, _ = demo
    run = doclake("worker", "--until-idle", home=home)
    assert_clean(run)
    the_line(run, r"documents 0  \(succeeded 0, failed 0\)  pages read 0  time [\d.]+ s")
    assert "messages 0  (retries 0, dead letters 0, released after a crash 0)" in lines(run)


def test_status_in_a_terminal(demo):
    home, _ = demo
    run = doclake("status", home=home)
    assert_clean(run)
    n = len([p for p in EXAMPLES.iterdir() if p.is_file() and not p.name.startswith(".")])
    table = rows(run)
    for status, count in (("queued", 0), ("extracting", 0), ("succeeded", n), ("failed", 0)):
        assert [status, str(count)] in table, table


def test_search_in_a_terminal(demo):
    home, _ = demo
    run = doclake("search", "confidential information", "--limit", "3", home=home)
    assert_clean(run)
    hits = [row for row in rows(run) if row[1].isdigit()]  # a hit's first line; the rest wrap
    names = {p.name for p in EXAMPLES.iterdir()}
    assert len(hits) == 3 and all(row[0] in names for row in hits), rows(run)
    snippets = " ".join(row[2] for row in rows(run))  # a wrapped snippet joins up again
    assert snippets.count("[Confidential Information]") == 3, run.text


def test_sql_query_in_a_terminal(demo):
    home, _ = demo
    run = doclake("sql", "SELECT count(*) AS documents FROM documents", home=home)
    assert_clean(run)
    assert rows(run) == [[str(len(list(EXAMPLES.glob("*.*"))))]], run.text
    assert "┃ documents ┃" in lines(run)


def test_sql_prompt_in_a_terminal(demo):
    home, _ = demo
    run = doclake("sql", home=home, typed=["SELECT 40 + 2 AS answer;\r", "SELECT * FROM job;\r",
                                            "quit\r"])
    assert_clean(run)
    assert rows(run) == [["42"]] and "┃ answer ┃" in lines(run), run.text
    # a mistake at the prompt: said, and it goes on; quit is a command, not SQL
    assert "hint: no table 'job'; did you mean jobs? `doclake schema` lists every table" in \
        lines(run)
    assert lines(run)[-1] == "doclake> quit" and "Parser Error" not in run.text


def test_dashboard_in_a_terminal(demo, tmp_path):
    home, _ = demo
    out = tmp_path / "report.html"
    run = doclake("dashboard", "--out", str(out), home=home)
    assert_clean(run)
    assert out.stat().st_size > 1000 and "<svg" in out.read_text()


def test_evals_report_in_a_terminal(demo, tmp_path):
    home, _ = demo
    run = doclake("evals", "report", "--out", str(tmp_path / "weekly"), home=home)
    assert_clean(run)  # nothing labelled yet: a report that says so, no gate asked for
    assert sorted(p.suffix for p in tmp_path.glob("weekly-*")) == [".html", ".md"], run.text
    assert any(re.fullmatch(r".*\b0 labelled documents\b.*", line) for line in lines(run))
    assert "doclake evals sample" in run.text and "import-labels" in run.text  # what to do


def test_run_from_a_project_whose_own_packages_share_doclakes_names(tmp_path):
    """A user types `doclake run docs` in their own project, which has an ``infra/`` folder (and
    ``lake/``, ``extract/``): doclake's workers must still import doclake's packages, not these
    (the fork server's fresh interpreter put the current folder first on its path, and every
    document failed ``crashes_parser``)."""
    project = tmp_path / "project"
    for name in ("infra", "lake", "extract", "ingest"):
        (project / name).mkdir(parents=True)
        (project / name / "__init__.py").write_text("")
    shutil.copytree(EXAMPLES, project / "docs")
    home = tmp_path / "home"
    run = doclake("run", "docs", "--fields", "none", home=home, cwd=project)
    assert_clean(run)
    files = [p for p in EXAMPLES.iterdir() if p.is_file() and not p.name.startswith(".")]
    the_line(run, rf"succeeded {len(files)}  failed 0  pages \d+ .*")


def test_a_run_after_a_crash_says_resumed_and_counts_the_lake(tmp_path, pdf_factory):
    """kill -9 a run once jobs exist; a second run in a terminal finishes them, calls them
    resumed (not unchanged) and prints the lake's own counts of jobs and pages."""
    for index in range(6):
        pdf_factory(f"doc{index}.pdf", 30, word="resume")
    folder, home = tmp_path / "docs", tmp_path / "home"
    env = {**FAST, "DOCLAKE_CPU_WORKERS": "1", "DOCLAKE_CONCURRENCY": "1"}
    first = subprocess.Popen([doclake_command(), "run", str(folder), "--home", str(home)],
                             env={**os.environ, **env}, start_new_session=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while _store_count(home, "SELECT count(*) FROM units WHERE status = 'done'") < 1:
        assert first.poll() is None, "the first run finished before it could be killed"
        assert time.monotonic() < deadline
        time.sleep(0.02)
    while _store_count(home, "SELECT count(*) FROM jobs") < 6:
        time.sleep(0.02)
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    unfinished = _store_count(home, "SELECT count(*) FROM jobs WHERE status NOT IN "
                              "('succeeded', 'failed')")
    assert unfinished > 0, "every job ended before the kill: nothing left to resume"
    stored_before = len(list((home / "objects" / "pages").rglob("*.md")))

    run = doclake("run", str(folder), home=home, env=env)
    assert_clean(run)
    the_line(run, rf"documents 6  \(.*resumed {unfinished}.*unchanged {6 - unfinished}\)")
    summary = the_line(run, r"succeeded (\d+)  failed 0  pages (\d+) \((\d+) read by this run\)"
                            r"  time [\d.]+ s  \([\d.]+ pages/s\)")
    succeeded, pages, read = map(int, summary.groups())
    assert succeeded == _lake_count(
        home, "SELECT count(*) FROM jobs WHERE status = 'succeeded'") == 6
    assert pages == _lake_count(home, "SELECT count(*) FROM pages") == 180
    # Pages stored before the kill are not read again, and not counted as read now.
    assert read == 180 - stored_before, (stored_before, summary.group(0))


def _store_count(home: Path, sql: str) -> int:
    try:
        with sqlite3.connect(home / "jobs.db", timeout=5) as db:
            return db.execute(sql).fetchone()[0]
    except sqlite3.Error:
        return 0


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_demo_in_a_terminal(tmp_path):
    demo_home = tmp_path / "demo-home"
    run = run_in_terminal(["make", "--no-print-directory", "demo", f"DEMO_HOME={demo_home}"],
                          cwd=ROOT, env=FAST, timeout=400)
    assert_clean(run)
    assert HIDE_CURSOR in run.raw
    the_line(run, r"succeeded 5  failed 0  pages \d+ .*")
    assert any(line.startswith("┃ source_name") and "┃ effective_date" in line
               for line in lines(run)), run.text[-3000:]
