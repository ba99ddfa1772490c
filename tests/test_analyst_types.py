"""Types an analyst can sort and count on (issue 26, finding 4): a size bucket that sorts, and
how many values each result holds."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

from support.lakegen import succeeded_job, uuid7_at
from typer.testing import CliRunner

from infra.cli.main import app
from lake import events as ev
from lake.catalog import query
from lake.writer import ParquetEventWriter

ROOT = Path(__file__).resolve().parents[1]
FAST = {"DOCLAKE_EVENT_FLUSH_S": "0.02", "DOCLAKE_POLL_INTERVAL_S": "0.2", "DOCLAKE_CPU_WORKERS": "1"}


def test_page_buckets_sort_by_their_first_page(tmp_path):
    lake = str(tmp_path / "lake")
    start = datetime(2026, 3, 1, 9, tzinfo=UTC)
    events = []
    for n, pages in enumerate((150, 5, 30, 400, 70)):
        at = start + timedelta(minutes=n)
        events += succeeded_job(uuid7_at(at, 0), uuid7_at(at, 1), start=at, pages=pages)
    ParquetEventWriter.for_uri(lake).write(events)
    rows = query(lake, "SELECT page_bucket FROM job_latency GROUP BY page_bucket "
                       "ORDER BY min(page_bucket_min)").column("page_bucket").to_pylist()
    assert rows == ["1-20", "21-50", "51-100", "101-300", "over 300"]


def test_results_count_the_values_found(tmp_path, pdf_factory):
    docs = tmp_path / "docs"
    pdf_factory("nothing.pdf", 1, word="weather report")
    shutil.copy(sorted((ROOT / "examples").glob("*.pdf"))[0], docs / "nda.pdf")
    home = str(tmp_path / "home")
    assert CliRunner().invoke(app, ["run", str(docs), "--home", home, "--fields", "nda"],
                              env=FAST).exit_code == 0
    rows = json.loads(CliRunner().invoke(app, [
        "sql", "--home", home, "--format", "json",
        "SELECT d.source_name, r.values_found, (SELECT count(*) FROM result_fields f WHERE "
        "f.job_id = r.job_id AND f.strategy = r.strategy) AS rows_in_result_fields "
        "FROM results r JOIN documents d USING (document_id) ORDER BY 1"], env=FAST).output)
    found = {r["source_name"]: (r["values_found"], r["rows_in_result_fields"]) for r in rows}
    assert found["nothing.pdf"] == (0, 0)
    assert found["nda.pdf"][0] == found["nda.pdf"][1] > 0


# --- issue 26, item 4 (second part): dates, money, one timestamp type, honest durations -------

DAY = datetime(2026, 3, 2, 9, tzinfo=UTC)


def _call(job: str, doc: str, n: int, cost: float) -> ev.ModelCalled:
    return ev.ModelCalled(document_id=doc, job_id=job, call_id=f"call-{n}", purpose="read_page",
                          provider="gemini", model="gemini-2.5-flash", outcome="ok",
                          input_tokens=100, output_tokens=10, cost_usd=cost, page_number=n,
                          occurred_at=DAY + timedelta(seconds=5 + n))


def _result(job: str, doc: str, effective_date: str | None) -> ev.ResultPublished:
    return ev.ResultPublished(document_id=doc, job_id=job, status="succeeded", strategy="rules",
                              effective_date=effective_date, occurred_at=DAY)


def _lake_with_costs_and_dates(tmp_path) -> str:
    """Two jobs of one day: model calls costing 0.1 and 0.2 dollars (0.30000000000000004 as
    doubles), and results whose effective dates are ISO dates, a non-date text and nothing."""
    lake = str(tmp_path / "home" / "lake")
    events = []
    dates = ("2020-01-15", "1 January 2019", "2018-06-30", None, "2019-12-01", "2021-02-30")
    for n, effective in enumerate(dates):
        doc, job = uuid7_at(DAY, 2 * n + 1), uuid7_at(DAY, 2 * n + 2)
        events += succeeded_job(doc, job, start=DAY + timedelta(minutes=n), pages=2,
                                reader="gemini-2.5-flash")
        events.append(_result(job, doc, effective))
        if n == 0:
            events += [_call(job, doc, 1, 0.1), _call(job, doc, 2, 0.2)]
    ParquetEventWriter.for_uri(lake).write(events)
    return lake


def _sql(home: str, statement: str) -> list[dict]:
    result = CliRunner().invoke(app, ["sql", "--home", home, "--format", "json", statement])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_each_analyst_column_has_its_type_in_duckdb(tmp_path):
    lake = _lake_with_costs_and_dates(tmp_path)
    home = str(tmp_path / "home")
    typed = _sql(home, """
        SELECT (SELECT typeof(effective_date) FROM results LIMIT 1) AS effective_date,
               (SELECT typeof(effective_date_text) FROM results LIMIT 1) AS effective_date_text,
               (SELECT typeof(cost_usd) FROM model_calls LIMIT 1) AS call_cost,
               (SELECT typeof(cost_usd) FROM daily_costs LIMIT 1) AS daily_cost,
               (SELECT typeof(cost_per_1000_pages) FROM daily_costs LIMIT 1) AS per_1000,
               (SELECT typeof(created_at) FROM jobs LIMIT 1) AS created_at,
               (SELECT typeof(read_at) FROM pages LIMIT 1) AS read_at""")
    assert typed == [{"effective_date": "DATE", "effective_date_text": "VARCHAR",
                      "call_cost": "DECIMAL(18,10)", "daily_cost": "DECIMAL(18,10)",
                      "per_1000": "DECIMAL(18,10)", "created_at": "TIMESTAMP",
                      "read_at": "TIMESTAMP"}]
    # Every column of every analyst view: times are plain TIMESTAMP (UTC), money is DECIMAL.
    from lake.catalog import connect
    from lake.views import CONTRACT_TABLES, DERIVED_VIEWS

    with connect(lake) as session:
        for view in (*CONTRACT_TABLES, *DERIVED_VIEWS):
            for name, kind, *_ in session.sql(f"DESCRIBE {view}").fetchall():
                assert "TIME ZONE" not in kind, (view, name, kind)
                if "cost" in name or name.endswith("_usd"):
                    assert kind == "DECIMAL(18,10)", (view, name, kind)


def test_money_sums_are_exact(tmp_path):
    _lake_with_costs_and_dates(tmp_path)
    home = str(tmp_path / "home")
    rows = _sql(home, "SELECT sum(cost_usd) = 0.3 AS exact, CAST(sum(cost_usd) AS VARCHAR) AS "
                      "total FROM model_calls")
    assert rows == [{"exact": True, "total": "0.3000000000"}]
    (day,) = _sql(home, "SELECT CAST(cost_usd AS VARCHAR) AS cost, cost_usd = 0.3 AS exact "
                        "FROM daily_costs WHERE is_total")
    assert day == {"cost": "0.3000000000", "exact": True}
    models = _sql(home, "SELECT CAST(sum(cost_usd) AS VARCHAR) AS cost FROM daily_costs "
                        "WHERE NOT is_total")
    assert models == [{"cost": "0.3000000000"}]


def test_effective_dates_sort_and_subtract_as_dates(tmp_path):
    _lake_with_costs_and_dates(tmp_path)
    home = str(tmp_path / "home")
    rows = _sql(home, "SELECT CAST(effective_date AS VARCHAR) AS effective_date, "
                      "effective_date_text FROM results ORDER BY effective_date NULLS LAST, "
                      "effective_date_text NULLS LAST")
    assert rows == [
        {"effective_date": "2018-06-30", "effective_date_text": "2018-06-30"},
        {"effective_date": "2019-12-01", "effective_date_text": "2019-12-01"},
        {"effective_date": "2020-01-15", "effective_date_text": "2020-01-15"},
        # not dates: NULL, the published text kept beside it
        {"effective_date": None, "effective_date_text": "1 January 2019"},
        {"effective_date": None, "effective_date_text": "2021-02-30"},
        {"effective_date": None, "effective_date_text": None},
    ]
    (span,) = _sql(home, "SELECT max(effective_date) - min(effective_date) AS days, "
                         "count(effective_date) AS dated FROM results")
    assert span == {"days": 564, "dated": 3}


def test_times_are_utc_timestamps_whatever_the_session_zone(tmp_path):
    """Saved views (``lake views --out``) opened in a DuckDB set to another zone give the same
    UTC wall-clock times as ``doclake sql``."""
    import duckdb

    from lake.catalog import define_views

    lake = _lake_with_costs_and_dates(tmp_path)
    con = duckdb.connect()
    con.execute("SET TimeZone = 'Asia/Tokyo'")
    define_views(con, lake)
    tokyo = con.execute("SELECT min(created_at), typeof(min(created_at)) FROM jobs").fetchone()
    assert tokyo == (DAY.replace(tzinfo=None), "TIMESTAMP")
    (mine,) = _sql(str(tmp_path / "home"), "SELECT min(created_at) AS t FROM jobs")
    assert mine["t"].startswith("2026-03-02T09:00:00")


def test_glue_and_athena_types_equal_duckdb_types_for_every_column(tmp_path):
    from lake.athena import athena_views, hive_type, presto_type, view_columns, view_table_inputs
    from lake.catalog import connect
    from lake.glue import raw_table_inputs

    glue_raw = {name: {c["Name"]: c["Type"] for c in t["StorageDescriptor"]["Columns"]}
                for name, t in raw_table_inputs("bucket").items()}
    views = view_columns()  # raises on a zoned timestamp in any view
    with connect(str(tmp_path / "no-such-lake")) as session:
        for event_type in glue_raw:
            duck = session.sql(f"DESCRIBE internal.ev_{event_type.removeprefix('raw_')}"
                                       ).fetchall()
            for name, kind, *_ in duck:
                if name != "dt":  # the partition key, not a column (a DATE in both)
                    assert hive_type(presto_type(kind)) == glue_raw[event_type][name], \
                        (event_type, name, kind)
    glue_views = view_table_inputs("doclake")
    for name in athena_views():
        declared = {c["Name"]: c["Type"] for c in glue_views[name]["StorageDescriptor"]["Columns"]}
        assert declared == {col: hive_type(kind) for col, kind in views[name]}, name
    assert dict(views["jobs"])["created_at"] == "timestamp(3)"
    assert dict(views["model_calls"])["cost_usd"] == "decimal(18,10)"
    assert dict(views["results"])["effective_date"] == "date"
    athena = athena_views()
    assert "AT_TIMEZONE" not in " ".join(athena.values())  # Athena's timestamps are UTC already
    assert "TRY_CAST(r.effective_date AS DATE)" in athena["results"]


def test_no_column_is_another_one_under_a_second_name():
    from infra.cli.render.schema_doc import table

    failures = [c.name for c in table("failures").columns]
    costs = [c.name for c in table("daily_costs").columns]
    assert "failure_reason" in failures and "error_type" not in failures
    assert "dt" in costs and "day" not in costs
    result = CliRunner().invoke(app, ["schema", "daily_costs", "--format", "csv"])
    assert result.exit_code == 0 and "\nday," not in result.output


def test_text_layer_pages_are_timed_one_by_one(tmp_path, pdf_factory):
    """Each page of a text-layer unit has its own time (not the unit's split evenly), and
    together they fit within the unit's."""
    pdf_factory("five.pdf", 5)
    home = str(tmp_path / "home")
    assert CliRunner().invoke(app, ["run", str(tmp_path / "docs"), "--home", home, "--fields",
                                    "none"], env=FAST).exit_code == 0
    (unit,) = _sql(home, """
        SELECT count(*) AS pages, count(DISTINCT p.duration_ms) AS distinct_times,
               sum(p.duration_ms) <= max(u.duration_ms) AS within_unit, min(p.reader) AS reader
        FROM pages p JOIN units u USING (dt, job_id, unit_id)""")
    assert unit == {"pages": 5, "distinct_times": 5, "within_unit": True, "reader": "text"}
