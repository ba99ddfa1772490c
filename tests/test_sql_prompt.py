"""``doclake sql``'s prompt behaves as psql's and duckdb's do, typed at a real terminal; and the
user's SQL reaches DuckDB as written (only table references to internal layers are qualified,
on sqlglot's parse tree: aliases and string literals are the user's)."""

from __future__ import annotations

import fcntl
import json
import os
import select
import subprocess
import termios
import time
from pathlib import Path

import pytest

from tests.support.homes import empty_home
from tests.support.terminal import ANSI, doclake_command

PRODUCT = "3703701"  # 1234567 * 3: a figure no path, prompt or banner holds


def _controlling_terminal() -> None:  # in the child: the pty is its terminal, as a shell's is
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def prompt_session(home: Path, keys: list[str], timeout: float = 90.0) -> tuple[int, str]:
    """``doclake sql`` in a pseudo-terminal that is its controlling terminal (so Ctrl-C is the
    terminal's SIGINT); each of ``keys`` is typed once the prompt has answered and is waiting
    (its last output is a prompt). The exit status and what the screen showed."""
    master, slave = os.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "100", "LINES": "40",
           "HOME": str(home.parent)}  # readline's history file: not the real user's
    for name in ("NO_COLOR", "FORCE_COLOR", "CI", "DOCLAKE_HOME"):
        env.pop(name, None)
    process = subprocess.Popen([doclake_command(), "sql", "--home", str(home)], stdin=slave,
                               stdout=slave, stderr=slave, env=env,
                               preexec_fn=_controlling_terminal, close_fds=True)
    os.close(slave)
    screen = b""
    pending = list(keys)
    partial = False  # the last key left a line half typed: no prompt follows it
    quiet_since = time.monotonic()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:
                    data = b""
                if not data and process.poll() is not None:
                    break
                screen += data
                quiet_since = time.monotonic()
                continue
            if process.poll() is not None:
                break
            shown = ANSI.sub("", screen.decode(errors="replace")).rstrip(" ")
            waiting = shown.endswith(("doclake>", "...>")) or (
                partial and time.monotonic() - quiet_since > 0.5)
            if pending and waiting:
                key = pending.pop(0)
                os.write(master, key.encode())
                partial = not key.endswith(("\n", "\x03", "\x04"))
                screen += b"\x00"  # typed: wait for the next prompt after this one
                quiet_since = time.monotonic()
        else:
            process.kill()
            raise AssertionError("the prompt did not end; it showed:\n"
                                 + ANSI.sub("", screen.decode(errors="replace")))
    finally:
        process.wait(timeout=30)
        os.close(master)
    text = ANSI.sub("", screen.replace(b"\x00", b"").decode(errors="replace"))
    return process.returncode, text.replace("\r\n", "\n").replace("\r", "\n")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return empty_home(tmp_path / "home")


@pytest.mark.parametrize("word", ["\\q", ".quit", "exit", "quit", "\x04"],
                         ids=["backslash-q", "dot-quit", "exit", "quit", "ctrl-d"])
def test_each_way_out_leaves_the_prompt(home, word):
    keys = [word if word == "\x04" else word + "\n"]
    code, screen = prompt_session(home, keys)
    assert code == 0, screen
    assert "...>" not in screen  # never a continuation line
    assert "error" not in screen.lower()


def test_a_way_out_after_a_half_typed_statement_leaves_without_running_it(home):
    code, screen = prompt_session(home, ["SELECT 1234567 * 3 AS product\n", "\\q\n"])
    assert code == 0
    assert PRODUCT not in screen


def test_ctrl_c_clears_a_half_typed_query_and_never_runs_it(home):
    keys = ["SELECT 1234567 * 3", "\x03",  # on the line being typed
            "SELECT 1234567\n", "* 3 AS product", "\x03",  # on a second line of a statement
            "SELECT 'still here' AS answer;\n", "\\q\n"]
    code, screen = prompt_session(home, keys)
    assert code == 0, screen
    assert PRODUCT not in screen
    lines = [line.strip(" │|") for line in screen.splitlines()]
    assert "still here" in [line.strip() for line in lines]  # the prompt went on


def test_a_pasted_block_without_a_semicolon_runs_on_the_empty_line_after_it(home):
    code, screen = prompt_session(home, ["SELECT 1234567 * 3\n", "  AS product\n", "\n", "\\q\n"])
    assert code == 0, screen
    assert PRODUCT in screen


def test_an_empty_line_inside_an_unfinished_statement_waits_for_the_rest(home):
    code, screen = prompt_session(home, ["SELECT 1234567 * 3 AS product FROM\n", "\n",
                                         "range(1);\n", "\\q\n"])
    assert code == 0, screen
    assert PRODUCT in screen
    assert "error" not in screen.lower()


def _sql_json(home: Path, query: str) -> list[dict]:
    env = {k: v for k, v in os.environ.items() if k != "DOCLAKE_HOME"}
    result = subprocess.run([doclake_command(), "sql", query, "--home", str(home), "--format",
                             "json"], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize("query", [
    "SELECT 1 AS raw_page_read",
    "SELECT 2 AS ev_job_failed, 3 AS \"raw_job_created\"",
    "SELECT 'rows of raw_page_read' AS said",
    "SELECT 'FROM ev_job_failed' AS said, 'internal.' || 'raw_page_read' AS joined",
    "WITH ev_page_read AS (SELECT 7 AS n) SELECT n FROM ev_page_read",
])
def test_user_sql_reaches_duckdb_as_written(home, query):
    import duckdb

    con = duckdb.connect()
    relation = con.sql(query)
    expected = [dict(zip(relation.columns, row, strict=True)) for row in relation.fetchall()]
    assert _sql_json(home, query) == expected


def test_an_internal_layer_named_as_a_table_is_still_found(home):
    rows = _sql_json(home, "SELECT count(*) AS n, 'raw_page_read' AS named FROM raw_page_read")
    assert rows == [{"n": 0, "named": "raw_page_read"}]
