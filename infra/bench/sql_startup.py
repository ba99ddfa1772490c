"""`doclake sql` against a bare DuckDB query over the same Parquet files, process start to answer.

What an analyst waits for is a fresh process: interpreter, imports, the lake's views, the
query. Each side runs as its own process (``python -m infra.cli.main sql`` and ``python -c
"import duckdb; ..."``, the same interpreter), once untimed to warm the file cache and the
catalog plan's cache (``lake.catalog_plan``), then ``repeats`` times; medians of wall time and of
CPU time (user + system of the child, less disturbed by other load on the machine).

Two lakes: a small home (``doclake run`` over ``examples/*.pdf`` unless ``--home`` names one)
and a year of daily partitions written by ``infra.bench.lake_data`` and compacted (one file per
event type and day, as a lake a year old looks after ``doclake lake compact``).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["ROOT", "EXAMPLES", "SMALL_CASES", "YEAR_DAY", "YEAR_CASES", "time_process", "compare",
           "small_home", "year_home", "render", "COLUMNS"]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

SMALL_CASES = {
    "count(*) FROM jobs": (
        "SELECT count(*) FROM jobs",
        "SELECT count(*) FROM read_parquet('{lake}/events/event_type=job_created/*/*.parquet')"),
    "SELECT 1": ("SELECT 1", "SELECT 1"),
}
YEAR_DAY = "2025-09-01"
YEAR_CASES = {
    f"pages on one day ({YEAR_DAY})": (
        f"SELECT count(*) FROM pages WHERE dt = DATE '{YEAR_DAY}'",
        "SELECT count(*) FROM read_parquet('{lake}/events/event_type=page_read/*/*.parquet', "
        f"hive_partitioning = true) WHERE dt = DATE '{YEAR_DAY}'"),
    "count(*) FROM jobs": (
        "SELECT count(*) FROM jobs",
        "SELECT count(*) FROM read_parquet('{lake}/events/event_type=job_created/*/*.parquet')"),
}


def time_process(argv: list[str], repeats: int, env: dict[str, str]) -> dict[str, float]:
    """Median wall and CPU seconds of ``argv`` as a fresh process (after one untimed run)."""
    walls, cpus = [], []
    for attempt in range(repeats + 1):
        before = os.times()
        started = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                       check=True, cwd=ROOT)
        wall = time.perf_counter() - started
        after = os.times()
        if attempt:
            walls.append(wall)
            cpus.append(after.children_user - before.children_user
                        + after.children_system - before.children_system)
    return {"wall_s": round(statistics.median(walls), 3), "cpu_s": round(statistics.median(cpus), 3)}


def compare(home: Path, cases: dict[str, tuple[str, str]], repeats: int) -> dict[str, dict]:
    """Each case: ``doclake sql`` on the home against bare DuckDB on its lake's files."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
    lake = str((home / "lake").resolve())
    figures = {}
    for name, (query, bare) in cases.items():
        doclake = time_process([sys.executable, "-m", "infra.cli.main", "sql", "--home", str(home),
                                "--format", "csv", query], repeats, env)
        script = (f"import duckdb; print(duckdb.sql({bare.format(lake=lake)!r}).fetchall())")
        duck = time_process([sys.executable, "-c", script], repeats, env)
        figures[name] = {"doclake_wall_s": doclake["wall_s"], "bare_wall_s": duck["wall_s"],
                         "ratio_wall": round(doclake["wall_s"] / duck["wall_s"], 1),
                         "doclake_cpu_s": doclake["cpu_s"], "bare_cpu_s": duck["cpu_s"],
                         "ratio_cpu": round(doclake["cpu_s"] / max(duck["cpu_s"], 1e-3), 1)}
    return figures


def small_home(folder: Path) -> Path:
    """A home made by ``doclake run examples/*.pdf`` (what ``make demo`` makes)."""
    home = folder / "small-home"
    pdfs = sorted(str(p) for p in EXAMPLES.glob("*.pdf"))
    subprocess.run([sys.executable, "-m", "infra.cli.main", "run", *pdfs, "--home", str(home),
                    "--fields", "nda"], check=True, cwd=ROOT, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return home


def year_home(folder: Path, events: int) -> tuple[Path, int]:
    """A home whose lake holds ``events`` events over 365 days, compacted; and its file count."""
    from infra.bench.lake_data import build_stream, write_lake
    from lake.compaction import compact

    home = folder / "year-home"
    lake = home / "lake"
    write_lake(str(lake), build_stream(events, days=365, seed=365))
    compact(str(lake))
    files = sum(1 for _ in lake.rglob("*.parquet"))
    return home, files


def render(figures: dict) -> list[tuple]:
    """Rows (lake, query, doclake wall, bare wall, ratio, doclake cpu, bare cpu, ratio)."""
    return [(lake, name, f["doclake_wall_s"], f["bare_wall_s"], f["ratio_wall"],
             f["doclake_cpu_s"], f["bare_cpu_s"], f["ratio_cpu"])
            for lake, cases in figures.items() for name, f in cases.items()]


COLUMNS = ("lake", "query", "doclake_wall_s", "bare_wall_s", "ratio_wall", "doclake_cpu_s",
           "bare_cpu_s", "ratio_cpu")
