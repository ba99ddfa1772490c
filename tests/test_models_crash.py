"""SIGKILL the runtime again and again during a simulated run: every job still ends, and a page is
paid for twice only when the process died between the model's answer and the page's write.

The ledger row of a call is durable before its page is stored, so that window is visible: a page
with two successful calls must have its first one shortly before one of the kills.
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

ENV = {"DOCLAKE_READER": "simulated", "DOCLAKE_SIMULATED_LATENCY_SCALE": "0.3",
       "DOCLAKE_SIMULATED_TIMEOUT_RATE": "0", "DOCLAKE_EVENT_FLUSH_S": "0.02",
       "DOCLAKE_POLL_INTERVAL_S": "0.3", "DOCLAKE_CONCURRENCY": "4", "DOCLAKE_CPU_WORKERS": "2"}
WINDOW_S = 2.0  # answer -> ledger row durable -> page stored takes well under this


def _cli(*args: str, home: Path) -> list[str]:
    return [sys.executable, "-m", "infra.cli.main", *args, "--home", str(home)]


def _stored(home: Path) -> int:
    root = home / "objects" / "pages"
    return sum(1 for _ in root.rglob("*.md")) if root.is_dir() else 0


def test_repeated_kill_9_during_a_simulated_run(tmp_path, pdf_factory):
    for n in range(6):
        pdf_factory(f"doc{n}.pdf", 20 + 3 * n, word="crash")  # 165 pages
    home = tmp_path / "home"
    env = {**os.environ, **ENV}
    kills: list[float] = []
    commands = [_cli("run", str(tmp_path / "docs"), "--reader", "simulated", home=home),
                _cli("worker", home=home), _cli("worker", home=home)]
    for command, threshold in zip(commands, (20, 60, 100), strict=True):
        process = subprocess.Popen(command, env=env, start_new_session=True,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 90
        while _stored(home) < threshold or jobs_created(home) < 6:
            assert process.poll() is None, "the run ended before the kill point"
            assert time.monotonic() < deadline, "kill point never reached"
            time.sleep(0.02)
        os.killpg(process.pid, signal.SIGKILL)
        kills.append(time.time())
        process.wait()

    done = subprocess.run(_cli("worker", "--until-idle", home=home), env=env,
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]

    lake = str(home / "lake")
    jobs = query(lake, "SELECT status, count(*) AS n FROM jobs GROUP BY 1").to_pylist()
    assert jobs == [{"status": "succeeded", "n": 6}], jobs
    pages = query(lake, "SELECT count(*) AS n FROM pages").to_pylist()[0]["n"]
    assert pages == 165
    twice = query(lake, """
        SELECT job_id, page_number, list(epoch_ms(occurred_at) ORDER BY occurred_at) AS at_ms
        FROM model_calls WHERE outcome = 'ok' GROUP BY 1, 2 HAVING count(*) > 1""").to_pylist()
    unpaid = query(lake, """
        SELECT count(*) AS n FROM pages p ANTI JOIN model_calls c
        ON c.job_id = p.job_id AND c.page_number = p.page_number AND c.outcome IN ('ok',
           'blocked', 'empty')""").to_pylist()[0]["n"]
    assert unpaid == 0, "every stored page has its call on the ledger"
    for row in twice:
        first = row["at_ms"][0] / 1000
        assert any(0 <= kill - first <= WINDOW_S for kill in kills), (
            f"page {row['page_number']} paid twice outside the die-between-answer-and-write "
            f"window (first answer {first:.3f}, kills {kills})")
    print(f"\n{len(kills)} kills, 165 pages, {len(twice)} paid twice (answered just before a kill)")
