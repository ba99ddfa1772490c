"""One 300-page document read by the simulated provider at a large concurrency, against the ideal.

The ideal is the slowest unit plus one poll interval: with every unit in flight at once, a job
cannot finish before its slowest unit, and the poller notices within one interval. Cost per 1,000
pages and the fallback share come from the ledger (``daily_costs``, ``pages``), as an analyst would
get them. Everything goes through ``doclake run`` in a fresh process, like a user's run.

    .venv/bin/python -m infra.bench.models_bench [--pages 300] [--concurrency 64] [--scale 1.0]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["main"]


def _make_pdf(path: Path, pages: int) -> None:
    """Blank pages: the simulated provider reads images, so content makes no difference."""
    from infra.bench.load_docs import make_documents

    made = make_documents(path.parent, path.stem, 1, pages)[0]
    made.rename(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=300)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--scale", type=float, default=1.0, help="simulated latency scale")
    parser.add_argument("--poll-interval", type=float, default=1.0)
    parser.add_argument("--format", choices=("table", "json"), default="table")
    args = parser.parse_args()

    from lake.catalog import query

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "docs"
        folder.mkdir()
        _make_pdf(folder / "long.pdf", args.pages)
        home = Path(tmp) / "home"
        env = {**os.environ, "DOCLAKE_SIMULATED_LATENCY_SCALE": str(args.scale),
               "DOCLAKE_POLL_INTERVAL_S": str(args.poll_interval),
               "DOCLAKE_CONCURRENCY": str(args.concurrency)}
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "infra.cli.main", "run", str(folder), "--reader",
                        "simulated", "--home", str(home)], env=env, check=True,
                       stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - started
        lake = str(home / "lake")
        job = query(lake, "SELECT status, seconds FROM job_latency").to_pylist()[0]
        units = query(lake, "SELECT max(duration_ms) / 1000 AS slowest, "
                            "median(duration_ms) / 1000 AS median, count(*) AS n FROM units"
                      ).to_pylist()[0]
        cost = query(lake, "SELECT pages, model_calls, cost_usd, cost_per_1000_pages FROM "
                           "daily_costs WHERE is_total").to_pylist()[0]
        readers = query(lake, "SELECT reader, count(*) AS pages FROM pages GROUP BY 1 "
                              "ORDER BY 2 DESC").to_pylist()
        calls = query(lake, "SELECT median(latency_ms) / 1000 AS p50, "
                            "quantile_cont(latency_ms, 0.9) / 1000 AS p90 FROM model_calls "
                            "WHERE outcome = 'ok'").to_pylist()[0]
    ideal = units["slowest"] + args.poll_interval
    fallback = sum(r["pages"] for r in readers if not r["reader"].endswith(":gemini-2.5-flash"))
    figures = {
        "pages": args.pages, "units": units["n"], "concurrency": args.concurrency,
        "latency_scale": args.scale, "job_status": job["status"],
        "job_seconds": round(job["seconds"], 2), "slowest_unit_s": round(units["slowest"], 2),
        "median_unit_s": round(units["median"], 2), "ideal_s": round(ideal, 2),
        "job_over_ideal": round(job["seconds"] / ideal, 3), "wall_s": round(wall, 2),
        "call_p50_s": round(calls["p50"], 2), "call_p90_s": round(calls["p90"], 2),
        "model_calls": cost["model_calls"], "cost_usd": round(float(cost["cost_usd"]), 4),
        "cost_per_1000_pages_usd": round(float(cost["cost_per_1000_pages"]), 3),
        "fallback_share": round(fallback / max(1, args.pages), 3), "readers": readers,
    }
    if args.format == "json":
        print(json.dumps(figures))
        return
    for key, value in figures.items():
        print(f"{key:>24}  {value}")


if __name__ == "__main__":
    main()
