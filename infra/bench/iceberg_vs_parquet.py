"""Compacted tables as Iceberg or as plain Parquet: the comparison behind docs/lake.md.

    python -m infra.bench.iceberg_vs_parquet [--events 1000000] [--format table|json]

Optional: needs ``pip install "pyiceberg[sql-sqlite,pyarrow]"`` and says so (exit 0) without it.

The same events (``infra.bench.lake_data``, the rows compaction would produce) are stored twice:

- plain: one zstd Parquet file per (event_type, UTC day), row groups as ``lake.compaction``
  writes them, in the lake's own layout, read by ``lake.catalog`` (DuckDB ``read_parquet``);
- Iceberg: one table per event type in a SQLite catalog with a local warehouse, partitioned by
  ``day(occurred_at)``, one append per day (as a daily compaction would commit), read through
  pyiceberg's Arrow scan and registered in DuckDB under the same views (``lake.views``).

Measured: write time, the analyst queries of ``infra.bench.lake_bench`` end to end, a projected
single-table query (Iceberg's best case), the cost of small appends (if raw events went straight
to Iceberg), and the moving parts (files, metadata, packages).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from infra.bench.lake_bench import QUERIES
from infra.bench.lake_data import build_stream
from lake.catalog import connect
from lake.compaction import ROW_GROUP_ROWS
from lake.events import EVENT_TYPES
from lake.layout import event_type_prefix
from lake.schema import columns
from lake.views import DERIVED_VIEWS, dedup_sql, dedup_view, events_sql, raw_view

__all__ = ["PROJECTED", "write_plain", "write_iceberg", "iceberg_connection", "run", "render", "main"]

PROJECTED = """SELECT reader, CAST(occurred_at AS DATE) AS day, count(*) AS pages,
                      sum(chars) AS chars FROM page_read GROUP BY ALL ORDER BY ALL"""


def _timed(action):
    started = time.perf_counter()
    result = action()
    return time.perf_counter() - started, result


def _by_day(table: pa.Table) -> list[tuple[str, pa.Table]]:
    days = table["occurred_at"].to_numpy().astype("datetime64[D]")
    order = np.argsort(days, kind="stable")
    table, days = table.take(order), days[order]
    return [(str(day), table.filter(pa.array(days == day))) for day in np.unique(days)]


def write_plain(root: str, tables: dict[str, pa.Table]) -> None:
    """One compacted file per partition, as ``lake.compaction`` leaves it."""
    for event_type, table in tables.items():
        for day, rows in _by_day(table):
            folder = f"{root}/{event_type_prefix(event_type)}/dt={day}"
            os.makedirs(folder, exist_ok=True)
            pq.write_table(rows, f"{folder}/compacted-bench.parquet", compression="zstd",
                           row_group_size=ROW_GROUP_ROWS)


def write_iceberg(warehouse: str, tables: dict[str, pa.Table]):
    """One Iceberg table per event type, partitioned by day, one commit per day."""
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.transforms import DayTransform

    os.makedirs(warehouse, exist_ok=True)
    catalog = SqlCatalog("bench", uri=f"sqlite:///{warehouse}/catalog.db",
                         warehouse=f"file://{warehouse}")
    catalog.create_namespace("lake")
    for event_type, table in tables.items():
        iceberg = catalog.create_table(f"lake.{event_type}", schema=table.schema)
        with iceberg.update_spec() as spec:
            spec.add_field("occurred_at", DayTransform(), "day")
        for _, rows in _by_day(table):
            iceberg.append(rows)
    return catalog


def _empty_select(event_type: str) -> str:
    cols = ", ".join(f"CAST(NULL AS {c.duckdb}) AS {c.name}"
                     for c in columns(EVENT_TYPES[event_type]))
    return f"SELECT {cols} WHERE false"


def iceberg_connection(catalog, present: set[str]):
    """DuckDB with the lake's views over pyiceberg Arrow scans (the only way in without
    DuckDB's iceberg extension, which would have to be downloaded)."""
    import duckdb

    con = duckdb.connect(":memory:", config={"autoinstall_known_extensions": False,
                                             "autoload_known_extensions": False})
    con.execute("SET TimeZone = 'UTC'")
    for event_type in EVENT_TYPES:
        if event_type in present:
            arrow = catalog.load_table(f"lake.{event_type}").scan().to_arrow()
            con.register(f"_ice_{event_type}", arrow)
            con.execute(f"CREATE VIEW {raw_view(event_type)} AS SELECT * FROM _ice_{event_type}")
        else:
            con.execute(f"CREATE VIEW {raw_view(event_type)} AS {_empty_select(event_type)}")
        con.execute(f"CREATE VIEW {dedup_view(event_type)} AS {dedup_sql(event_type)}")
    con.execute(f"CREATE VIEW events AS {events_sql()}")
    for name, sql in DERIVED_VIEWS.items():
        con.execute(f"CREATE VIEW {name} AS {sql}")
    return con


def _queries(open_connection, repeats: int) -> dict:
    """Median wall time of connect + each query, as one ``catalog.query`` call would take."""
    figures: dict[str, list[float]] = {name: [] for name in QUERIES}
    connects, results = [], {}
    for _ in range(repeats):
        seconds, con = _timed(open_connection)
        connects.append(seconds)
        for name, sql in QUERIES.items():
            took, results[name] = _timed(lambda sql=sql, con=con: con.sql(sql).to_arrow_table())
            figures[name].append(took)
        con.close()
    connect_s = statistics.median(connects)
    return {"connect_s": round(connect_s, 3), "results": results,
            "queries": {n: round(connect_s + statistics.median(t), 3) for n, t in figures.items()}}


def _projected(plain_root: str, catalog, repeats: int) -> dict:
    """The best case for a table format: one table, three columns."""
    import duckdb

    def plain():
        con = duckdb.connect()
        glob = f"{plain_root}/{event_type_prefix('page_read')}/*/*.parquet"
        con.execute(f"CREATE VIEW page_read AS SELECT * FROM read_parquet('{glob}')")
        return con.sql(PROJECTED).to_arrow_table()

    def iceberg():
        con = duckdb.connect()
        scan = catalog.load_table("lake.page_read").scan(
            selected_fields=("reader", "occurred_at", "chars"))
        con.register("page_read", scan.to_arrow())
        return con.sql(PROJECTED).to_arrow_table()

    plain_s = statistics.median(_timed(plain)[0] for _ in range(repeats))
    iceberg_s = statistics.median(_timed(iceberg)[0] for _ in range(repeats))
    same = plain().sort_by([("reader", "ascending"), ("day", "ascending")]).equals(
        iceberg().sort_by([("reader", "ascending"), ("day", "ascending")]))
    return {"plain_s": round(plain_s, 3), "iceberg_s": round(iceberg_s, 3), "same_answer": same}


def _small_appends(catalog, sample: pa.Table, commits: int) -> dict:
    """What writing raw events straight into Iceberg would cost: one commit per ~50-event flush."""
    table = catalog.load_table("lake.page_read")
    rows = sample.slice(0, 49)
    times = [_timed(lambda: table.append(rows))[0] for _ in range(commits)]
    return {"commits": commits, "rows_per_commit": rows.num_rows,
            "median_ms": round(statistics.median(times) * 1000, 1),
            "last_ms": round(times[-1] * 1000, 1)}


def _inventory(folder: str) -> dict:
    kinds = {"data_parquet": 0, "metadata_json": 0, "manifest_avro": 0, "other": 0}
    size = 0
    for base, _, names in os.walk(folder):
        for name in names:
            size += os.path.getsize(f"{base}/{name}")
            if name.endswith(".parquet"):
                kinds["data_parquet"] += 1
            elif name.endswith(".metadata.json"):
                kinds["metadata_json"] += 1
            elif name.endswith(".avro"):
                kinds["manifest_avro"] += 1
            else:
                kinds["other"] += 1
    return {**kinds, "mb": round(size / 1e6, 1)}


def run(events: int, repeats: int, commits: int, workdir: str) -> dict:
    stream = build_stream(events)
    tables = {t: table.drop_columns(["_flush"]) for t, table in stream.tables.items()
              if table.num_rows}
    plain_root, warehouse = f"{workdir}/plain", f"{workdir}/iceberg"
    plain_write, _ = _timed(lambda: write_plain(plain_root, tables))
    iceberg_write, catalog = _timed(lambda: write_iceberg(warehouse, tables))
    plain = _queries(lambda: connect(plain_root), repeats)
    iceberg = _queries(lambda: iceberg_connection(catalog, set(tables)), repeats)
    same = all(plain["results"][n].equals(iceberg["results"][n]) for n in QUERIES)
    files = {"plain": _inventory(plain_root), "iceberg": _inventory(warehouse)}
    projected = _projected(plain_root, catalog, repeats)
    appends = _small_appends(catalog, tables["page_read"], commits)
    files["iceberg_after_small_appends"] = _inventory(warehouse)
    return {
        "events": stream.events, "tables": len(tables),
        "write_s": {"plain": round(plain_write, 2), "iceberg": round(iceberg_write, 2)},
        "views": {"plain": {"connect_s": plain["connect_s"], **plain["queries"]},
                  "iceberg": {"connect_s": iceberg["connect_s"], **iceberg["queries"]},
                  "same_answers": same},
        "projected_page_read": projected, "small_appends": appends, "files": files,
    }


def render(r: dict) -> str:
    v = r["views"]
    lines = [
        f"N={r['events']:,} events in {r['tables']} event types, stored once each way",
        f"write: plain Parquet {r['write_s']['plain']} s, Iceberg {r['write_s']['iceberg']} s",
        f"{'lake views (connect + SQL, s)':32} {'plain':>8} {'iceberg':>8}",
        f"{'connect (Iceberg: scan to Arrow)':32} {v['plain']['connect_s']:8.3f} "
        f"{v['iceberg']['connect_s']:8.3f}",
    ]
    lines += [f"{name:32} {v['plain'][name]:8.3f} {v['iceberg'][name]:8.3f}" for name in QUERIES]
    p, a = r["projected_page_read"], r["small_appends"]
    lines += [
        f"answers identical: {v['same_answers'] and p['same_answer']}",
        f"projected page_read query (3 columns): plain {p['plain_s']} s, "
        f"Iceberg {p['iceberg_s']} s",
        f"small appends into Iceberg ({a['rows_per_commit']} rows each): median "
        f"{a['median_ms']} ms per commit over {a['commits']}, last {a['last_ms']} ms",
        "files: " + "; ".join(f"{k}: {json.dumps(f)}" for k, f in r["files"].items()),
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict | None:
    parser = argparse.ArgumentParser(prog="python -m infra.bench.iceberg_vs_parquet",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--commits", type=int, default=50, help="small appends to time")
    parser.add_argument("--workdir")
    parser.add_argument("--format", choices=("table", "json"), default="table")
    args = parser.parse_args(argv)
    try:
        import pyiceberg  # noqa: F401
    except ImportError:
        print('skipped: pyiceberg is not installed (pip install "pyiceberg[sql-sqlite,pyarrow]")')
        return None
    workdir = args.workdir or tempfile.mkdtemp(prefix="iceberg-bench-")
    Path(workdir).mkdir(parents=True, exist_ok=True)
    try:
        results = run(args.events, args.repeats, args.commits, workdir)
    finally:
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(results, indent=2) if args.format == "json" else render(results))
    return results


if __name__ == "__main__":
    main()
