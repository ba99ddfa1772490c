"""dt on every table: where events land, exact deduplication, pruning in DuckDB and in the
Athena SQL; and the two views analysts meet first for money and time (daily_costs, units)."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
import sqlglot
from sqlglot import exp
from support.lakegen import failed_job, succeeded_job, uuid7_at

from lake import events as ev
from lake.athena import athena_views
from lake.catalog import connect, query
from lake.layout import partition_date, uuid7_date
from lake.views import CONTRACT_TABLES
from lake.writer import ParquetEventWriter

DAYS = [datetime(2026, 3, d, 9, 0, tzinfo=UTC) for d in (1, 2, 3)]


def _job_ids(day: datetime, n: int) -> dict[str, str]:
    return {"doc": uuid7_at(day, 2 * n + 1), "job": uuid7_at(day, 2 * n + 2)}


def _calls(job: str, doc: str, day: datetime, pages: int, model: str) -> list[ev.Event]:
    return [ev.ModelCalled(job_id=job, document_id=doc, call_id=f"{job}-{p}", purpose="read",
                           provider="gemini", model=model, outcome="ok", input_tokens=1000,
                           output_tokens=500, cost_usd=0.002, page_number=p,
                           occurred_at=day + timedelta(seconds=4))
            for p in range(1, pages + 1)]


@pytest.fixture
def three_days(tmp_path: Path) -> str:
    """Per day: one succeeded job (7 pages, vision model), one failed job; one flush per day."""
    root = str(tmp_path / "lake")
    writer = ParquetEventWriter.for_uri(root)
    for day in DAYS:
        ok, ko = _job_ids(day, 0), _job_ids(day, 1)
        events = succeeded_job(ok["doc"], ok["job"], start=day, pages=7, reader="gemini")
        events += _calls(ok["job"], ok["doc"], day, 7, "gemini-3-flash")
        events.append(ev.ResultPublished(job_id=ok["job"], document_id=ok["doc"], status="ok",
                                         strategy="rules", occurred_at=day + timedelta(9)))
        events.append(ev.ResultFieldExtracted(job_id=ok["job"], document_id=ok["doc"],
                                              field="party", value="Nike, Inc.", strategy="rules",
                                              occurred_at=day + timedelta(9)))
        events += failed_job(ko["doc"], ko["job"], start=day)
        writer.write(events)
    return root


# --- where events land -------------------------------------------------------------------------


def test_an_event_lands_in_the_day_of_its_job_or_document_whatever_its_clock_says():
    job, doc = uuid7_at(DAYS[0], 1), uuid7_at(DAYS[1], 2)
    late = DAYS[2] + timedelta(hours=14)  # 23:00 on the 3rd
    assert uuid7_date(job) == "2026-03-01"
    assert uuid7_date("job1") is None and uuid7_date(None) is None
    assert uuid7_date("0190b7a2-7c3e-4d1a-8f00-000000000000") is None  # a UUIDv4
    assert partition_date("page_read", job, doc, late) == "2026-03-01"
    assert partition_date("document_registered", job, doc, late) == "2026-03-02"
    assert partition_date("failure", None, doc, late) == "2026-03-02"
    assert partition_date("expectation_checked", None, None, late) == "2026-03-03"


def test_a_redelivery_after_midnight_lands_beside_the_first_copy_and_shows_once(tmp_path):
    """The write-time clock would put the two copies in two partitions; the job id does not."""
    root = str(tmp_path)
    day = datetime(2026, 4, 30, 23, 59, 50, tzinfo=UTC)
    ids = {"document_id": uuid7_at(day, 1), "job_id": uuid7_at(day, 2)}
    page = ev.PageRead(**ids, page_number=1, reader="text", chars=5, occurred_at=day)
    writer = ParquetEventWriter.for_uri(root)
    writer.write([page])
    writer.write([page.model_copy(update={"occurred_at": day + timedelta(seconds=30),
                                          "attempt": 2})])
    folders = {p.parent.name for p in Path(root).rglob("*.parquet")}
    assert folders == {"dt=2026-04-30"}
    assert query(root, "SELECT count(*) AS n FROM raw_page_read").to_pylist() == [{"n": 2}]
    assert query(root, "SELECT dt, count(*) AS n FROM pages GROUP BY dt").to_pylist() == [
        {"dt": date(2026, 4, 30), "n": 1}]


# --- pruning -----------------------------------------------------------------------------------


def _scans(plan: str) -> list[tuple[int, int]]:
    """(files scanned, files listed) of every Parquet scan in a DuckDB EXPLAIN ANALYZE."""
    return [(int(a), int(b)) for a, b in re.findall(r"Scanning Files: (\d+)/(\d+)", plan)]


@pytest.mark.parametrize("table", CONTRACT_TABLES)
def test_a_dt_filter_reads_only_that_days_files_in_duckdb(three_days, table):
    with connect(three_days) as session:
        everything = session.table(f"SELECT count(*) AS n FROM {table}").to_pylist()[0]["n"]
        one_day = session.table(
            f"SELECT count(*) AS n FROM {table} WHERE dt = DATE '2026-03-02'").to_pylist()[0]["n"]
        plan = session.table(f"EXPLAIN ANALYZE SELECT count(*) FROM {table} "
                             "WHERE dt = DATE '2026-03-02'").column(1)[0].as_py()
    assert everything > 0 and one_day * 3 == everything  # three identical days
    scans = _scans(plan)
    assert scans, plan
    # one file per event type and day: every scan opens one file of the three it lists
    assert all(scanned <= 1 and listed == 3 for scanned, listed in scans), scans
    assert any(scanned == 1 for scanned, _ in scans)


def _profile_scans(session, sql: str, path: Path) -> list[dict]:
    """Every table scan of a query's DuckDB JSON profile: its extra info and rows returned."""
    import json

    session.prepare(sql)
    session.con.execute("SET enable_profiling = 'json'")
    session.con.execute(f"SET profiling_output = '{path}'")
    session.con.sql(sql).fetchall()
    session.con.execute("SET enable_profiling = 'no_output'")
    scans, todo = [], list(json.loads(path.read_text())["operator"])
    while todo:
        node = todo.pop()
        todo += node.get("children", [])
        if node.get("type") == "TABLE_SCAN":
            scans.append(node)
    return scans


@pytest.mark.parametrize("table", ["pages", "jobs", "daily_costs"])
def test_past_many_files_a_dt_filter_is_pushed_into_the_arrow_datasets(three_days, table,
                                                                       monkeypatch, tmp_path):
    """Beyond NATIVE_MAX_FILES a type is an Arrow dataset: the profile shows the dt filter
    pushed into every scan, which then returns only that day's rows."""
    from lake import catalog

    monkeypatch.setattr(catalog, "NATIVE_MAX_FILES", 0)
    with connect(three_days, confined=False) as session:  # profiling is a SET
        scans = _profile_scans(session, f"SELECT count(*) FROM {table} "
                                        "WHERE dt = DATE '2026-03-02'", tmp_path / "p.json")
        most = max(session.table(f"SELECT count(*) FROM raw_{t} WHERE dt = DATE '2026-03-02'")
                   .column(0)[0].as_py() for t in ev.EVENT_TYPES)
    assert scans
    for scan in scans:
        info = scan["extra_info"]
        assert "ARROW" in info.get("Function", "").upper(), info
        assert "dt" in str(info.get("Filters")) and "2026-03-02" in str(info["Filters"]), info
        assert scan["intermediate_rows"] <= most, scan  # one day's rows, not three days'


def test_without_the_filter_every_file_is_read(three_days):
    with connect(three_days) as session:
        plan = session.table("EXPLAIN ANALYZE SELECT count(*) FROM jobs").column(1)[0].as_py()
    assert all(scanned == listed == 3 for scanned, listed in _scans(plan))


def _column(node: exp.Expression) -> str | None:
    return node.name if isinstance(node, exp.Column) else None


@pytest.mark.parametrize("name", ["ev_page_read", *CONTRACT_TABLES])
def test_the_athena_views_keep_dt_where_trino_can_push_a_filter_through(name):
    """Trino pushes a conjunct below a window only when it is over the partition-by symbols
    (PredicatePushDown.visitWindow), and across a join through an equality of the join keys.
    So, in the transpiled SQL: every window partitions by dt, every join equates dt, every
    grouping includes dt, and dt is never computed from anything but the partition column."""
    tree = sqlglot.parse_one(athena_views()[name], read="trino")
    for window in tree.find_all(exp.Window):
        assert "dt" in [_column(e) for e in window.args.get("partition_by") or []], window.sql()
    for join in tree.find_all(exp.Join):
        condition = join.args.get("on")
        pairs = [(_column(eq.this), _column(eq.expression))
                 for eq in (condition.find_all(exp.EQ) if condition else [])]
        assert ("dt", "dt") in pairs, join.sql("trino")
    for group in tree.find_all(exp.Group):
        assert "dt" in [_column(e) for e in group.expressions], group.sql("trino")
    for alias in tree.find_all(exp.Alias):
        if alias.alias == "dt":
            source = alias.this
            if isinstance(source, exp.Cast):
                source = source.this
            assert _column(source) == "dt", alias.sql("trino")
    assert "dt" in [s.alias_or_name for s in tree.selects]


def test_the_ev_view_passes_the_date_partition_key_through_uncast():
    """Glue declares dt a DATE (lake.glue.PARTITION_TYPE): no cast stands between a view's
    filter and the key, so the filter is a range partition projection can use."""
    from lake.glue import PARTITION_TYPE, raw_table_input

    sql = athena_views()["ev_job_created"]
    assert "CAST(dt" not in sql and "PARTITION BY dt, event_id" in sql
    assert raw_table_input("job_created", "bucket")["PartitionKeys"] == [
        {"Name": "dt", "Type": PARTITION_TYPE}] and PARTITION_TYPE == "date"


# --- daily_costs ---------------------------------------------------------------------------------


def test_daily_costs_is_one_row_per_day_and_model_and_a_total(three_days):
    rows = query(three_days, "SELECT * FROM daily_costs WHERE dt = DATE '2026-03-02' "
                             "ORDER BY is_total, model").to_pylist()
    by_model = {r["model"]: r for r in rows}
    assert set(by_model) == {"gemini-3-flash", "total"}, rows  # the failed job read no page
    model = by_model["gemini-3-flash"]
    # the pages' reader says "gemini", the calls say "gemini-3-flash": still one row
    assert (model["pages"], model["model_calls"], model["input_tokens"],
            model["output_tokens"]) == (7, 7, 7000, 3500)
    # issue 26: money is DECIMAL (exact), and dt is the day (no second `day` column)
    assert model["cost_usd"] == Decimal("0.014")
    assert model["cost_per_1000_pages"] == Decimal("2.0")
    assert model["dt"] == date(2026, 3, 2) and not model["is_total"]
    total = by_model["total"]
    assert total["is_total"] and total["pages"] == 7 and total["cost_usd"] == Decimal("0.014")


def test_a_fallback_page_counts_for_the_model_that_read_it_and_costs_are_kept(tmp_path):
    root = str(tmp_path)
    day = DAYS[0]
    ids = _job_ids(day, 0)
    events = succeeded_job(ids["doc"], ids["job"], start=day, pages=3, reader="text")
    common = {"job_id": ids["job"], "document_id": ids["doc"], "purpose": "read",
              "provider": "gemini", "occurred_at": day + timedelta(seconds=4)}
    events += [
        ev.ModelCalled(**common, call_id="c1", model="primary", outcome="timeout",
                       input_tokens=900, output_tokens=0, cost_usd=0.001, page_number=1),
        ev.ModelCalled(**common, call_id="c2", model="fallback", outcome="ok",
                       input_tokens=900, output_tokens=300, cost_usd=0.003, page_number=1),
        ev.ModelCalled(**common, call_id="c3", model="extractor", outcome="ok",
                       input_tokens=5000, output_tokens=100, cost_usd=0.01),  # fields: no page
    ]
    ParquetEventWriter.for_uri(root).write(events)
    rows = {r["model"]: r for r in query(root, "SELECT * FROM daily_costs").to_pylist()}
    assert {m: (r["pages"], r["model_calls"]) for m, r in rows.items()} == {
        "text": (2, 0), "primary": (0, 1), "fallback": (1, 1), "extractor": (0, 1),
        "total": (3, 3)}
    assert rows["fallback"]["cost_per_1000_pages"] == Decimal("3.0")
    assert rows["primary"]["cost_per_1000_pages"] is None
    assert rows["text"]["cost_usd"] == 0
    assert rows["total"]["cost_usd"] == Decimal("0.014")  # issue 26: DECIMAL, exact
    assert float(rows["total"]["cost_per_1000_pages"]) == pytest.approx(0.014 / 3 * 1000)
    assert sum(r["cost_usd"] for r in rows.values() if not r["is_total"]) == \
        rows["total"]["cost_usd"]


# --- units ---------------------------------------------------------------------------------------


def test_units_carry_their_start_end_duration_and_skipped_pages(tmp_path):
    root = str(tmp_path)
    day = DAYS[0]
    ids = {"document_id": uuid7_at(day, 1), "job_id": uuid7_at(day, 2)}
    at = lambda s: day + timedelta(seconds=s)  # noqa: E731
    unit = {**ids, "unit_id": "u0"}
    ParquetEventWriter.for_uri(root).write([
        ev.UnitPlanned(**unit, kind="pdf", first_page=1, last_page=5, occurred_at=at(0)),
        ev.UnitPlanned(**ids, unit_id="u1", kind="pdf", first_page=6, last_page=9,
                       occurred_at=at(0)),
        ev.UnitPlanned(**ids, unit_id="u2", kind="pdf", first_page=10, last_page=10,
                       occurred_at=at(0)),
        ev.UnitStarted(**unit, attempt=1, occurred_at=at(1)),
        ev.UnitStarted(**unit, attempt=2, occurred_at=at(40)),
        ev.UnitDone(**unit, pages=5, pages_skipped=2, duration_ms=1234.5, occurred_at=at(42)),
        ev.UnitStarted(**ids, unit_id="u1", attempt=1, occurred_at=at(1)),
        ev.UnitFailed(**ids, unit_id="u1", attempt=1, error_type="Timeout", message="slow",
                      occurred_at=at(3.25)),
    ])
    at = lambda s: (day + timedelta(seconds=s)).replace(tzinfo=None)  # noqa: E731  (views: UTC TIMESTAMP)
    rows = {r["unit_id"]: r for r in query(
        root, "SELECT unit_id, status, attempts, started_at, finished_at, duration_ms, "
              "pages_skipped FROM units").to_pylist()}
    assert rows["u0"] == {"unit_id": "u0", "status": "done", "attempts": 2,
                          "started_at": at(1), "finished_at": at(42), "duration_ms": 1234.5,
                          "pages_skipped": 2}
    assert rows["u1"]["status"] == "failed" and rows["u1"]["duration_ms"] == 2250.0
    assert rows["u1"]["finished_at"] == at(3.25)
    assert rows["u2"] == {"unit_id": "u2", "status": "pending", "attempts": 0,
                          "started_at": None, "finished_at": None, "duration_ms": None,
                          "pages_skipped": None}
