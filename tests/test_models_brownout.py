"""A provider brownout of a minute, with the default retry settings: every document succeeds after
it, no page is paid twice, the cost stays near a calm run's, and retries are spread out.

The simulated provider answers 503 to every call in its brownout window; its latency is scaled
down (0.05: a 2.9 s call takes 0.15 s) but the retry settings are the defaults, so the test takes
about as long as the brownout plus the largest backoff that can straddle its end.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from lake.catalog import query

BROWNOUT_S = 60.0
CALM = {"DOCLAKE_READER": "simulated", "DOCLAKE_SIMULATED_LATENCY_SCALE": "0.05",
        "DOCLAKE_SIMULATED_ERROR_RATE": "0", "DOCLAKE_SIMULATED_TIMEOUT_RATE": "0",
        "DOCLAKE_SIMULATED_BLOCKED_RATE": "0", "DOCLAKE_SIMULATED_EMPTY_RATE": "0",
        "DOCLAKE_POLL_INTERVAL_S": "0.5", "DOCLAKE_CONCURRENCY": "16", "DOCLAKE_CPU_WORKERS": "2"}


def _run(folder: Path, home: Path, **extra: str) -> None:
    env = {**os.environ, **CALM, **extra}
    done = subprocess.run([sys.executable, "-m", "infra.cli.main", "run", str(folder), "--reader",
                           "simulated", "--home",
                           str(home)], env=env, capture_output=True, text=True, timeout=280)
    assert done.returncode == 0, done.stderr[-3000:]


def _rows(home: Path, sql: str) -> list[dict]:
    return query(str(home / "lake"), sql).to_pylist()


def test_a_one_minute_brownout_with_default_retries(tmp_path, pdf_factory):
    for n in range(4):
        pdf_factory(f"doc{n}.pdf", 10, word="brownout")
    folder = tmp_path / "docs"
    _run(folder, tmp_path / "calm")
    # The brownout's clock starts at the first call: from 0.1 s on, only the first wave of
    # calls (16 at once) is answered, so most pages meet it however fast the run reads. From
    # 0.5 s, a run that had sent all 40 calls by then met no brownout at all.
    _run(folder, tmp_path / "storm", DOCLAKE_SIMULATED_BROWNOUT_AFTER_S="0.1",
         DOCLAKE_SIMULATED_BROWNOUT_FOR_S=str(BROWNOUT_S))

    home = tmp_path / "storm"
    jobs = _rows(home, "SELECT status, count(*) AS n FROM jobs GROUP BY 1")
    assert jobs == [{"status": "succeeded", "n": 4}]
    paid = _rows(home, "SELECT job_id, page_number, count(*) AS n FROM model_calls "
                       "WHERE outcome = 'ok' GROUP BY 1, 2")
    assert len(paid) == 40 and max(row["n"] for row in paid) == 1, "a page was paid twice"
    calls = _rows(home, "SELECT job_id, page_number, outcome, http_status, call_attempt, "
                        "epoch_ms(occurred_at) AS at_ms FROM model_calls ORDER BY at_ms")
    errors = [c for c in calls if c["outcome"] == "error"]
    assert errors and {c["http_status"] for c in errors} == {503}

    def cost(run: str) -> float:
        return _rows(tmp_path / run, "SELECT sum(cost_usd) AS c FROM model_calls")[0]["c"]

    ratio = cost("storm") / cost("calm")
    assert ratio <= 1.5, f"the brownout cost {ratio:.2f}x a calm run"

    # Not in lockstep: the k-th try of different pages is sent at different times.
    by_try: dict[int, list[float]] = defaultdict(list)
    for c in calls:
        by_try[c["call_attempt"]].append(c["at_ms"] / 1000)
    spreads = {k: statistics.quantiles(times, n=10)[-1] - statistics.quantiles(times, n=10)[0]
               for k, times in by_try.items() if k >= 3 and len(times) >= 10}
    assert spreads and min(spreads.values()) >= 1.0, spreads
    # and no instant gets a crowd of retries: the busiest 100 ms holds a small share of them
    retries = [c for c in errors if c["call_attempt"] >= 2]
    start = retries[0]["at_ms"]
    bins = defaultdict(int)
    for c in retries:
        bins[int((c["at_ms"] - start) // 100)] += 1
    busiest = max(bins.values()) / len(retries)
    print(f"\nbrownout {BROWNOUT_S:g} s: {len(errors)} 503s, cost ratio {ratio:.3f}, "
          f"busiest 100 ms holds {busiest:.1%} of the retries; p10-p90 spread of the k-th try (s): "
          + ", ".join(f"{k}: {v:.1f}" for k, v in sorted(spreads.items())))
    assert busiest <= 0.1
