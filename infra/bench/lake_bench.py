"""What small files cost the lake, and what compaction buys back.

    python -m infra.bench.lake_bench [--events 1000000] [--format table|json]

One run measures, each figure labelled with the number of events (N) it used:

(a) write: events per second through ``ParquetEventWriter`` in realistic flushes of about 50
    events (seven five-page units: unit_started, five page_read, unit_done; or sixteen jobs'
    status events), and one event per call;
(b) lake: a lake of ``--events`` events laid out exactly as those flushes leave it (one file per
    event type and UTC day per flush): file count, and the wall time of typical analyst queries
    through ``lake.catalog`` (connect, then SQL), before and after ``lake.compaction.compact``;
(c) small files: the same queries over ``--anchor-events`` events written one file per event,
    beside the same events in flushes and compacted, and a linear extrapolation of the
    one-file-per-event time to ``--events`` (an extrapolation, labelled so: a million files take
    longer to write than this benchmark's budget).

The lakes in (b) and (c) are written by ``infra.bench.lake_data.write_lake``: the same rows and the
same files the writer would make, without pydantic and fsync, because a million events through
pydantic would take most of the budget; the write figures in (a) are the real writer's.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from infra.bench.lake_data import build_stream, flush_events, iter_flushes, write_lake
from lake.catalog import connect
from lake.compaction import compact
from lake.writer import ParquetEventWriter

__all__ = ["QUERIES", "measure_write", "measure_batched_write", "PRUNING_QUERIES", "measure_dt_pruning",
           "measure_lake", "measure_small_files", "render", "main"]

QUERIES = {
    "pages_by_reader_day": """
        SELECT reader, CAST(read_at AS DATE) AS day, count(*) AS pages, sum(chars) AS chars
        FROM pages GROUP BY ALL ORDER BY ALL""",
    "job_latency_by_size": """
        SELECT page_bucket, status, count(*) AS jobs, median(seconds) AS p50_s,
               quantile_cont(seconds, 0.9) AS p90_s
        FROM job_latency GROUP BY ALL ORDER BY ALL""",
    "pages_by_job_status": """
        SELECT j.status, p.reader, count(*) AS pages, sum(p.chars) AS chars
        FROM pages AS p JOIN jobs AS j USING (job_id) GROUP BY ALL ORDER BY ALL""",
}


def _timed(action: Callable[[], object]) -> tuple[float, object]:
    started = time.perf_counter()
    result = action()
    return time.perf_counter() - started, result


def _files(root: str) -> tuple[int, int]:
    """(data files, bytes) under the lake's events folder."""
    count = size = 0
    for folder, _, names in os.walk(f"{root}/events"):
        for name in names:
            if name.endswith(".parquet") and not name.startswith("."):
                count += 1
                size += os.path.getsize(f"{folder}/{name}")
    return count, size


def _run_queries(root: str, repeats: int) -> dict:
    """What ``lake.catalog.query`` costs, in its two parts: ``connect`` (list the files, define
    and bind the views) and each query's SQL; ``query_s`` is their sum, as one call would take.
    Medians of ``repeats`` runs."""
    connects, sql_times = [], {name: [] for name in QUERIES}
    results = {}
    for _ in range(repeats):
        seconds, con = _timed(lambda: connect(root))
        connects.append(seconds)
        try:
            for name, sql in QUERIES.items():
                seconds, results[name] = _timed(lambda sql=sql, con=con: con.sql(sql).to_arrow_table())
                sql_times[name].append(seconds)
        finally:
            con.close()
    connect_s = statistics.median(connects)
    return {"connect_s": connect_s, "results": results,
            "queries": {name: {"sql_s": statistics.median(times),
                               "query_s": connect_s + statistics.median(times)}
                        for name, times in sql_times.items()}}


def measure_write(events: int, single_events: int, workdir: str) -> dict:
    """Events per second through the real writer: in the stream's ~50-event flushes, and one
    event per call (the small-files anchor's way of writing)."""
    batched = ParquetEventWriter.for_uri(f"{workdir}/write-batched")
    build = write = 0.0
    for pieces in iter_flushes(build_stream(events, seed=11)):
        seconds, batch = _timed(lambda pieces=pieces: flush_events(pieces))
        build += seconds
        write += _timed(lambda batch=batch: batched.write(batch))[0]
    single = ParquetEventWriter.for_uri(f"{workdir}/write-single")
    single_write = 0.0
    for pieces in iter_flushes(build_stream(single_events, seed=12)):
        for event in flush_events(pieces):
            single_write += _timed(lambda event=event: single.write([event]))[0]
    shutil.rmtree(f"{workdir}/write-batched")
    shutil.rmtree(f"{workdir}/write-single")
    stats = batched.stats
    return {"events": stats.events, "flushes": stats.flushes, "files": stats.files,
            "events_per_flush": round(stats.events / stats.flushes, 1),
            "write_seconds": round(write, 2), "events_per_s": round(stats.events / write),
            "files_per_s": round(stats.files / write),
            "model_build_us_per_event": round(build / stats.events * 1e6, 1),
            "one_per_call": {"events": single.stats.events,
                             "events_per_s": round(single.stats.events / single_write)}}


def measure_batched_write(events: int, flush: int, workdir: str) -> dict:
    """The writer at ``flush`` events per write call (a busy group commit), with the time of each
    phase of a flush (``WriteStats.seconds``) and the file count. Events are built beforehand
    (not timed) from the same realistic stream, in stream order."""
    stream = [e for pieces in iter_flushes(build_stream(events, seed=21))
              for e in flush_events(pieces)]
    writer = ParquetEventWriter.for_uri(f"{workdir}/write-10k")
    writer.write(stream[:flush])  # warm-up: thread pool, caches, first folders (not counted)
    writer.stats = type(writer.stats)()
    started = time.perf_counter()
    for i in range(flush, len(stream), flush):
        writer.write(stream[i:i + flush])
    seconds = time.perf_counter() - started
    writer.close()
    shutil.rmtree(f"{workdir}/write-10k")
    stats = writer.stats
    phases = {name: round(value / stats.events * 1e6, 3) for name, value in stats.seconds.items()}
    return {"events": stats.events, "flush": flush, "flushes": stats.flushes,
            "files": stats.files, "seconds": round(seconds, 3),
            "events_per_s": round(stats.events / seconds),
            "us_per_event_by_phase": phases}


PRUNING_QUERIES = {
    "pages_by_reader": "SELECT reader, count(*) AS pages, sum(chars) AS chars FROM pages "
                       "{where} GROUP BY ALL ORDER BY ALL",
    "job_latency_by_size": "SELECT page_bucket, count(*) AS jobs, median(seconds) AS p50_s "
                           "FROM job_latency {where} GROUP BY ALL ORDER BY ALL",
    "daily_costs": "SELECT dt, model, pages, cost_usd FROM daily_costs {where} ORDER BY ALL",
}


def _rows_scanned(session, sql: str, path: str) -> int:
    """Rows the table scans of a query returned, from DuckDB's JSON profile."""
    session.prepare(sql)
    session.con.execute("SET enable_profiling = 'json'")
    session.con.execute(f"SET profiling_output = '{path}'")
    session.con.sql(sql).fetchall()
    session.con.execute("SET enable_profiling = 'no_output'")
    with open(path) as handle:
        todo, rows = list(json.load(handle)["operator"]), 0
    while todo:
        node = todo.pop()
        todo += node.get("children", [])
        rows += node["intermediate_rows"] if node.get("type") == "TABLE_SCAN" else 0
    return rows


def measure_dt_pruning(events: int, days: int, workdir: str, repeats: int) -> dict:
    """A compacted lake of ``days`` days: each query with a one-day ``dt`` filter against the
    same query over every day, SQL only (one warm session, medians of ``repeats``), and the
    files DuckDB's plan says it read."""
    root = f"{workdir}/pruning"
    stream = build_stream(events, days=days, seed=31)
    write_lake(root, stream)
    compact(root)
    files, size = _files(root)
    day = "2025-03-02"
    figures = {}
    with connect(root, confined=False) as session:  # profiling is a SET
        for name, sql in PRUNING_QUERIES.items():
            one = sql.format(where=f"WHERE dt = DATE '{day}'")
            every = sql.format(where="")
            session.table(one), session.table(every)  # warm: footers cached, views bound
            t_one = statistics.median(_timed(lambda q=one: session.table(q))[0]
                                      for _ in range(repeats))
            t_all = statistics.median(_timed(lambda q=every: session.table(q))[0]
                                      for _ in range(repeats))
            figures[name] = {
                "one_day_s": round(t_one, 4), "every_day_s": round(t_all, 4),
                "ratio": round(t_all / t_one, 1),
                "rows_scanned_one_day": _rows_scanned(session, one, f"{workdir}/profile.json"),
                "rows_scanned_every_day": _rows_scanned(session, every,
                                                        f"{workdir}/profile.json"),
            }
    shutil.rmtree(root)
    return {"events": stream.events, "days": days, "files": files, "mb": round(size / 1e6, 1),
            "day": day, "queries": figures}


def _query_figures(before: dict, after: dict) -> dict:
    return {name: {"before_s": round(before["queries"][name]["query_s"], 3),
                   "after_s": round(after["queries"][name]["query_s"], 3),
                   "before_sql_only_s": round(before["queries"][name]["sql_s"], 3),
                   "after_sql_only_s": round(after["queries"][name]["sql_s"], 3),
                   "ratio": round(before["queries"][name]["query_s"]
                                  / after["queries"][name]["query_s"], 1)}
            for name in QUERIES}


def measure_lake(events: int, workdir: str, repeats: int) -> dict:
    """The big lake: file count and query times before and after compaction."""
    root = f"{workdir}/lake"
    stream = build_stream(events)
    build_s, _ = _timed(lambda: write_lake(root, stream))
    files_before, bytes_before = _files(root)
    before = _run_queries(root, 1)
    compaction_s, report = _timed(lambda: compact(root))
    files_after, bytes_after = _files(root)
    after = _run_queries(root, repeats)
    same = all(before["results"][n].equals(after["results"][n]) for n in QUERIES)
    shutil.rmtree(root)
    return {
        "events": stream.events, "build_seconds": round(build_s, 1),
        "files_before": files_before, "files_after": files_after,
        "mb_before": round(bytes_before / 1e6, 1), "mb_after": round(bytes_after / 1e6, 1),
        "connect_before_s": round(before["connect_s"], 3),
        "connect_after_s": round(after["connect_s"], 3),
        "compaction": {"seconds": round(compaction_s, 1), "partitions": len(report.partitions),
                       "rows_before": report.rows_before, "rows_after": report.rows_after,
                       "duplicates_dropped": report.duplicates_dropped,
                       "same_answers": same},
        "queries": _query_figures(before, after),
    }


def measure_small_files(events: int, extrapolate_to: int, workdir: str, repeats: int) -> dict:
    """The same events one file per event, in ~50-event flushes, and compacted."""
    single, batched = f"{workdir}/single", f"{workdir}/batched"
    stream = build_stream(events, seed=13)
    write_lake(single, stream, one_per_event=True)
    write_lake(batched, stream)
    files = {"one_file_per_event": _files(single)[0], "flushes_of_50": _files(batched)[0]}
    one = _run_queries(single, 1)
    shutil.rmtree(single)
    flushed = _run_queries(batched, repeats)
    compact(batched)
    files["compacted"] = _files(batched)[0]
    compacted = _run_queries(batched, repeats)
    shutil.rmtree(batched)
    scale = files["one_file_per_event"] and extrapolate_to / stream.events
    layouts = {"one_file_per_event": one, "flushes_of_50": flushed, "compacted": compacted}
    return {
        "events": stream.events, "extrapolated_to_events": extrapolate_to, "files": files,
        "connect_s": {k: round(v["connect_s"], 3) for k, v in layouts.items()},
        "queries": {name: {**{f"{k}_s": round(v["queries"][name]["query_s"], 3)
                              for k, v in layouts.items()},
                           "one_file_per_event_extrapolated_s": round(
                               one["queries"][name]["query_s"] * scale, 1)}
                    for name in QUERIES},
    }


def render(results: dict) -> str:
    """The results as a plain-text report; every figure names the N it was measured at."""
    w, lake, small = results["write"], results["lake"], results["small_files"]
    single = w["one_per_call"]
    big, prune = results["batched_write"], results["dt_pruning"]
    phases = ", ".join(f"{k} {v}" for k, v in big["us_per_event_by_phase"].items())
    lines = [
        f"(a') write in large flushes: N={big['events']:,} in {big['flushes']} flushes of "
        f"{big['flush']:,} ({big['files']} files): {big['events_per_s']:,} events/s",
        f"    us per event by phase: {phases}",
        f"(d) dt pruning: a compacted lake of N={prune['events']:,} events over "
        f"{prune['days']} days ({prune['files']:,} files, {prune['mb']} MB); SQL alone, "
        f"one day ({prune['day']}) against every day",
    ]
    for name, q in prune["queries"].items():
        lines.append(f"    {name:24} {q['one_day_s']:8.4f} s {q['every_day_s']:8.4f} s "
                     f"{q['ratio']:7.1f}x   rows scanned {q['rows_scanned_one_day']:,} / "
                     f"{q['rows_scanned_every_day']:,}")
    lines += [
        "",
        f"(a) write through ParquetEventWriter (write calls only; building the pydantic events "
        f"adds {w['model_build_us_per_event']} us/event)",
        f"    N={w['events']:,}: {w['flushes']:,} flushes of ~{w['events_per_flush']} events, "
        f"{w['files']:,} files: {w['events_per_s']:,} events/s, {w['files_per_s']:,} files/s",
        f"    N={single['events']:,}, one event per call: {single['events_per_s']:,} events/s",
        "",
        f"(b) lake of N={lake['events']:,} events written in ~50-event flushes "
        f"(built in {lake['build_seconds']} s)",
        f"    files: {lake['files_before']:,} before, {lake['files_after']:,} after compaction "
        f"({lake['mb_before']} MB -> {lake['mb_after']} MB)",
        f"    rows in the compacted partitions: {lake['compaction']['rows_before']:,} before, "
        f"{lake['compaction']['rows_after']:,} after",
        f"    compaction: {lake['compaction']['seconds']} s, "
        f"{lake['compaction']['partitions']} partitions, "
        f"{lake['compaction']['duplicates_dropped']} duplicates dropped, answers "
        f"{'identical' if lake['compaction']['same_answers'] else 'DIFFERENT'} before and after",
        "    query time = lake.catalog.query wall time = connect (list files, define views) + SQL",
        f"    {'connect':24} {lake['connect_before_s']:9.3f} {lake['connect_after_s']:9.3f}",
        f"    {'query':24} {'before':>9} {'after':>9} {'ratio':>7}   (SQL alone: before, after)",
    ]
    for name, q in lake["queries"].items():
        lines.append(f"    {name:24} {q['before_s']:9.3f} {q['after_s']:9.3f} {q['ratio']:6.1f}x"
                     f"   ({q['before_sql_only_s']:.3f}, {q['after_sql_only_s']:.3f})")
    n, big, files = small["events"], small["extrapolated_to_events"], small["files"]
    lines += [
        "",
        f"(c) small files: the same N={n:,} events as one file per event "
        f"({files['one_file_per_event']:,} files), in ~50-event flushes "
        f"({files['flushes_of_50']:,}), and compacted ({files['compacted']:,})",
        f"    {'query (catalog.query s)':24} {'1/event':>9} {'flush50':>9} {'compact':>9}"
        f"   1/event extrapolated to N={big:,}",
    ]
    connect_s = small["connect_s"]
    lines.append(f"    {'connect':24} {connect_s['one_file_per_event']:9.3f} "
                 f"{connect_s['flushes_of_50']:9.3f} {connect_s['compacted']:9.3f}")
    for name, q in small["queries"].items():
        lines.append(f"    {name:24} {q['one_file_per_event_s']:9.3f} {q['flushes_of_50_s']:9.3f} "
                     f"{q['compacted_s']:9.3f}   {q['one_file_per_event_extrapolated_s']:.1f}")
    lines.append(f"    extrapolated, not measured: linear in files, x{big / n:,.0f} "
                 f"(N={n:,} -> N={big:,})")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(prog="python -m infra.bench.lake_bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000, help="events in the big lake")
    parser.add_argument("--write-events", type=int, default=50_000,
                        help="events pushed through the real writer in ~50-event flushes")
    parser.add_argument("--single-write-events", type=int, default=2_000,
                        help="events pushed through the real writer one per call")
    parser.add_argument("--batched-events", type=int, default=200_000,
                        help="events pushed through the real writer in large flushes")
    parser.add_argument("--flush", type=int, default=10_000, help="events per large flush")
    parser.add_argument("--pruning-events", type=int, default=1_000_000,
                        help="events in the many-day lake of the dt-pruning figures")
    parser.add_argument("--pruning-days", type=int, default=365)
    parser.add_argument("--anchor-events", type=int, default=20_000,
                        help="events written one file per event for (c)")
    parser.add_argument("--repeats", type=int, default=3,
                        help="runs per query once the lake is compacted (median kept)")
    parser.add_argument("--workdir", help="scratch folder (default: a temporary one)")
    parser.add_argument("--format", choices=("table", "json"), default="table")
    args = parser.parse_args(argv)

    workdir = args.workdir or tempfile.mkdtemp(prefix="lake-bench-")
    Path(workdir).mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    try:
        results = {
            "write": measure_write(args.write_events, args.single_write_events, workdir),
            "batched_write": measure_batched_write(args.batched_events, args.flush, workdir),
            "dt_pruning": measure_dt_pruning(args.pruning_events, args.pruning_days, workdir,
                                             args.repeats),
            "lake": measure_lake(args.events, workdir, args.repeats),
            "small_files": measure_small_files(args.anchor_events, args.events, workdir,
                                               args.repeats),
        }
    finally:
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    results["total_seconds"] = round(time.perf_counter() - started, 1)
    results["cpus"] = os.cpu_count()
    if args.format == "json":
        print(json.dumps(results, indent=2))
    else:
        print(render(results))
        print(f"\ntotal {results['total_seconds']} s on {results['cpus']} CPUs")
    return results


if __name__ == "__main__":
    main()
