"""Glue tables with partition projection, Athena views, and the catalog created in moto.

What this can show: the Glue definitions are accepted by the Glue API (moto server, over HTTP)
and read back intact; every Athena view parses in sqlglot's Trino grammar and, translated back
to DuckDB, returns exactly the rows of the DuckDB views. What it cannot show: Athena itself
running the SQL (moto records Athena queries without parsing or running them).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
import sqlglot
from sqlglot import exp
from sqlglot.errors import ErrorLevel
from support.presto_views import decode_presto_view

from lake import events as ev
from lake.athena import (
    TranspileError,
    athena_views,
    create_view_statements,
    hive_type,
    presto_type,
    to_trino,
    view_columns,
    view_table_input,
)
from lake.catalog import connect
from lake.events import EVENT_TYPES
from lake.glue import (
    DEFAULT_PROJECTION_START,
    database_input,
    lake_uri,
    projection_parameters,
    raw_table_input,
    raw_table_inputs,
)
from lake.schema import columns
from lake.views import CONTRACT_TABLES, DERIVED_VIEWS
from lake.writer import ParquetEventWriter

RAW_TABLES = {f"raw_{t}" for t in EVENT_TYPES}


# --- raw tables (pure) -------------------------------------------------------------------------


def test_every_event_type_gets_a_raw_table_with_the_schema_columns():
    tables = raw_table_inputs("doclake-lake", "prod")
    assert set(tables) == RAW_TABLES
    for event_type, cls in EVENT_TYPES.items():
        table = tables[f"raw_{event_type}"]
        got = [(c["Name"], c["Type"]) for c in table["StorageDescriptor"]["Columns"]]
        assert got == [(c.name, c.glue) for c in columns(cls)]
        assert "dt" not in {name for name, _ in got}, "a partition key must not repeat a column"
        assert table["PartitionKeys"] == [{"Name": "dt", "Type": "date"}]


def test_raw_table_points_at_the_writer_layout_and_projects_daily_partitions():
    table = raw_table_input("page_read", "doclake-lake", "/prod/", projection_start="2024-06-01")
    location = "s3://doclake-lake/prod/events/event_type=page_read/"
    assert table["StorageDescriptor"]["Location"] == location
    assert table["TableType"] == "EXTERNAL_TABLE"
    params = table["Parameters"]
    assert params["projection.enabled"] == "true"
    assert params["projection.dt.type"] == "date"
    assert params["projection.dt.format"] == "yyyy-MM-dd"
    assert params["projection.dt.range"] == "2024-06-01,NOW"
    assert params["projection.dt.interval"] == "1"
    assert params["projection.dt.interval.unit"] == "DAYS"
    assert params["storage.location.template"] == location + "dt=${dt}"
    assert params["schema_version"] == str(ev.SCHEMA_VERSION)
    serde = table["StorageDescriptor"]["SerdeInfo"]["SerializationLibrary"]
    assert serde.endswith("ParquetHiveSerDe")


def test_projection_template_matches_the_folder_the_writer_makes(tmp_path):
    """The writer's dt folder, substituted into the template, must be a real partition path."""
    when = datetime(2026, 3, 9, 23, 59, tzinfo=UTC)
    path, = ParquetEventWriter.for_uri(str(tmp_path)).write(
        [ev.JobCreated(job_id="j", document_id="d", occurred_at=when)])
    template = projection_parameters("s3://b/p/events/event_type=job_created/")
    folder = template["storage.location.template"].replace("${dt}", when.strftime("%Y-%m-%d"))
    assert path.startswith(str(tmp_path) + folder.removeprefix("s3://b/p") + "/")


def test_bad_inputs_are_refused_before_they_reach_glue():
    with pytest.raises(ValueError, match="YYYY-MM-DD"):
        raw_table_input("page_read", "doclake-lake", projection_start="01/06/2024")
    with pytest.raises(ValueError, match="bucket"):
        lake_uri("Not_A_Bucket")
    with pytest.raises(ValueError, match="identifier"):
        database_input("Doc-Lake")
    with pytest.raises(KeyError):
        raw_table_input("no_such_event", "doclake-lake")
    assert lake_uri("doclake-lake", "") == "s3://doclake-lake"


# --- view SQL (pure) ---------------------------------------------------------------------------


def test_views_cover_the_contract_in_dependency_order():
    views = athena_views()
    assert list(views) == [f"ev_{t}" for t in EVENT_TYPES] + ["events", *DERIVED_VIEWS]
    assert set(CONTRACT_TABLES) <= set(views)
    defined = set(RAW_TABLES)
    for name, sql in views.items():
        tree = sqlglot.parse_one(sql, read="trino")
        ctes = {cte.alias for cte in tree.find_all(exp.CTE)}
        used = {t.name for t in tree.find_all(exp.Table)} - ctes
        assert used <= defined, f"{name} reads {used - defined} before they exist"
        defined.add(name)


@pytest.mark.parametrize("name", list(athena_views()))
def test_every_view_parses_as_trino_without_duckdb_leftovers(name):
    sql = athena_views()[name]
    tree = sqlglot.parse_one(sql, read="trino", error_level=ErrorLevel.RAISE)
    assert tree.find(exp.Qualify) is None
    assert "QUALIFY" not in sql.upper()
    assert "TIME ZONE" not in sql.upper()
    assert "TIMESTAMPTZ" not in sql.upper()


def test_date_diff_in_milliseconds_is_plain_and_still_a_double():
    sql = athena_views()["job_latency"]
    assert "DATE_DIFF('millisecond', j.created_at, j.finished_at)" in sql
    assert "DATE_TRUNC" not in sql.upper()
    assert "CAST(DATE_DIFF('millisecond'" in sql, "bigint / 1000.0 would be a decimal in Trino"


def test_transpile_fixes_and_refusals():
    day = to_trino("SELECT date_diff('day', a, b) AS d, CAST(x AS TIMESTAMPTZ) AS t FROM s")
    assert "DATE_DIFF('day', DATE_TRUNC('day', a), DATE_TRUNC('day', b))" in day
    assert "CAST(x AS TIMESTAMP)" in day
    with pytest.raises(TranspileError, match="microsecond"):
        to_trino("SELECT date_diff('microsecond', a, b) FROM s")


def test_create_view_statements_parse_and_are_qualified():
    statements = create_view_statements("doclake")
    assert len(statements) == len(athena_views())
    for statement, name in zip(statements, athena_views(), strict=True):
        tree = sqlglot.parse_one(statement, read="trino", error_level=ErrorLevel.RAISE)
        assert isinstance(tree, exp.Create) and tree.args.get("replace")
        assert tree.this.sql() == f"doclake.{name}"


def _sample_events() -> list[ev.Event]:
    """Two days, three jobs ending three ways, a retried unit and redelivered duplicates."""
    day1 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)
    day2 = day1 + timedelta(days=1)
    at = lambda minutes, base=day1: base + timedelta(minutes=minutes)  # noqa: E731
    out: list[ev.Event] = []
    for n, (status, base) in enumerate([("succeeded", day1), ("failed", day1),
                                        ("extracting", day2)]):
        doc, job = f"doc{n}", f"job{n}"
        ids = {"document_id": doc, "job_id": job}
        out += [
            ev.DocumentRegistered(**ids, source_name=f"f{n}.pdf", sha256="ab" * 32, bytes=100 + n,
                                  occurred_at=at(0, base)),
            ev.JobCreated(**ids, occurred_at=at(0, base)),
            ev.FormatDetected(**ids, detected_format="pdf", occurred_at=at(1, base)),
            ev.JobSplit(**ids, pages=7, units=2, occurred_at=at(1, base)),
            ev.JobExtracting(**ids, occurred_at=at(2, base)),
        ]
        for unit, (first, last) in enumerate([(1, 5), (6, 7)]):
            uid = f"{job}-u{unit}"
            out.append(ev.UnitPlanned(**ids, unit_id=uid, kind="pdf_pages", first_page=first,
                                      last_page=last, occurred_at=at(1, base)))
            for attempt in (1, 2) if unit == 1 else (1,):
                out.append(ev.UnitStarted(**ids, unit_id=uid, attempt=attempt,
                                          occurred_at=at(2 + attempt, base)))
            for page in range(first, last + 1):
                read = ev.PageRead(**ids, unit_id=uid, page_number=page, reader="gemini",
                                   chars=1000 + page, occurred_at=at(5, base))
                out += [read, read] if page == 1 else [read]  # a redelivery
                out.append(ev.ModelCalled(**ids, call_id=f"{job}-c{page}", purpose="read",
                                          provider="google", model="gemini-flash",
                                          outcome="ok", input_tokens=500, output_tokens=200,
                                          latency_ms=2900.0, cost_usd=0.0018,
                                          occurred_at=at(5, base)))
            out.append(ev.UnitDone(**ids, unit_id=uid, pages=last - first + 1,
                                   occurred_at=at(6, base)))
        if status == "succeeded":
            out += [ev.JobSucceeded(**ids, pages=7, units=2, occurred_at=at(8, base)),
                    ev.DocumentIndexed(**ids, pages=7, chars=7000, occurred_at=at(9, base)),
                    ev.ResultPublished(**ids, status="succeeded", party=["Acme", "Beta"],
                                       strategy="single-pass", effective_date="2020-01-01",
                                       occurred_at=at(10, base)),
                    *(ev.ResultFieldExtracted(**ids, field="party", value=name, value_index=i,
                                              strategy="single-pass", page_number=1,
                                              char_offset=10 * i, occurred_at=at(10, base))
                      for i, name in enumerate(["Acme", "Beta"]))]
        elif status == "failed":
            out += [ev.UnitFailed(**ids, unit_id=f"{job}-u1", error_type="Timeout",
                                  message="slow", occurred_at=at(7, base)),
                    ev.FailureRecorded(**ids, unit_id=f"{job}-u1", stage="read",
                                       error_type="Timeout", message="slow", final=True,
                                       attempt=2, occurred_at=at(7, base)),
                    ev.JobFailed(**ids, failure_reason="unit failed", occurred_at=at(8, base))]
    out.append(ev.ExpectationChecked(run_id="r1", table_name="jobs", expectation="not_null",
                                     success=True, occurred_at=day2))
    # Evals: two label versions of doc0 (the later supersedes), one scoring run.
    for n, (labeller, minutes) in enumerate([("ann", 30), ("bob", 60)]):
        lid = f"label{n}"
        out += [ev.LabelRecorded(document_id="doc0", label_id=lid, labeller=labeller,
                                 labelled_at=at(minutes), fields_labelled=["party"],
                                 value_count=1, occurred_at=at(minutes)),
                ev.LabelValueRecorded(document_id="doc0", label_id=lid, field="party",
                                      value=["Acme", "Beta"][n], occurred_at=at(minutes))]
    out += [ev.EvalRunCompleted(eval_run_id="e1", documents=1, scored_results=1, groups=1,
                                precision=0.5, recall=1.0, f1=2 / 3, occurred_at=day2),
            ev.EvalScoreComputed(eval_run_id="e1", level="group", strategy="single-pass",
                                 field="party", precision=0.5, recall=1.0, f1=2 / 3, hits=1,
                                 predicted=2, expected=1, occurred_at=day2),
            # a weekly report's run, recorded twice the same day (the later one counts)
            *[ev.EvalRunCompleted(eval_run_id=rid, documents=1, scored_results=1, groups=1,
                                  week_start=datetime(2026, 4, 27, tzinfo=UTC), week_by="label",
                                  occurred_at=at(k, day2)) for k, rid in enumerate(("w1", "w2"))],
            *[ev.EvalScoreComputed(eval_run_id=rid, level=level, model_version="v1",
                                   strategy="rules", field="overall", precision=f1, recall=f1,
                                   f1=f1, hits=1, predicted=1, expected=1, f1_low=f1 / 2,
                                   f1_high=1.0, occurred_at=at(k, day2))
              for k, rid in enumerate(("w1", "w2"))
              for level, f1 in (("group", 0.5 + k / 4), ("weighted", 0.6))],
            ev.EvalOutcomeRecorded(eval_run_id="e1", document_id="doc0", job_id="job0",
                                   label_id="label1", strategy="single-pass", field="party",
                                   outcome="spurious", got="Acme", occurred_at=day2)]
    return out


def _rounded(rows: list[tuple]) -> list[tuple]:
    """Float sums depend on summation order, which differs between two runs of one query."""
    return [tuple(round(v, 9) if isinstance(v, float) else v for v in row) for row in rows]


def test_athena_sql_returns_the_same_rows_as_the_duckdb_views(tmp_path):
    """Translate every Athena view back to DuckDB and compare rows with the original views.

    This catches a transpile that parses but changes meaning (the QUALIFY rewrite, the
    date_diff fix); it cannot catch a function that behaves differently in Trino itself.
    """
    ParquetEventWriter.for_uri(str(tmp_path)).write(_sample_events())
    views = athena_views()
    con = connect(str(tmp_path))
    con.execute("CREATE SCHEMA athena")
    # The raw tables as Athena reads them: timestamps plain, in UTC; dt a DATE (the Glue key).
    for event_type, cls in EVENT_TYPES.items():
        cols = ", ".join(f"{c.name} AT TIME ZONE 'UTC' AS {c.name}" if c.duckdb == "TIMESTAMPTZ"
                         else c.name for c in columns(cls))
        con.execute(f"CREATE VIEW athena.raw_{event_type} AS "
                    f"SELECT {cols}, dt FROM raw_{event_type}")
    raw_tables = {f"raw_{t}" for t in EVENT_TYPES}
    for name, sql in views.items():
        tree = sqlglot.parse_one(sql, read="trino")
        ctes = {cte.alias for cte in tree.find_all(exp.CTE)}
        for table in tree.find_all(exp.Table):
            if (table.name in views or table.name in raw_tables) and table.name not in ctes:
                table.set("db", exp.to_identifier("athena"))
        con.execute(f"CREATE VIEW athena.{name} AS {tree.sql(dialect='duckdb')}")
    for name in views:
        schema = "internal" if name.startswith("ev_") else "main"  # lake.catalog.INTERNAL_SCHEMA
        original = _rounded(con.sql(f"SELECT * FROM {schema}.{name} ORDER BY ALL").fetchall())
        translated = _rounded(con.sql(f"SELECT * FROM athena.{name} ORDER BY ALL").fetchall())
        assert original, f"the sample leaves {name} empty, so the comparison proves nothing"
        assert translated == original, name
    statuses = dict(con.sql("SELECT job_id, status FROM athena.jobs").fetchall())
    assert statuses == {"job0": "succeeded", "job1": "failed", "job2": "extracting"}
    assert con.execute("SELECT count(*) FROM athena.pages").fetchone()[0] == 21  # duplicates gone


# --- view columns and Glue view definitions (pure) ---------------------------------------------


def test_view_columns_match_the_schema_and_the_raw_table_types():
    cols = view_columns()
    assert set(cols) == set(athena_views())
    for event_type, cls in EVENT_TYPES.items():
        expected = [(c.name, presto_type(c.duckdb)) for c in columns(cls)]
        assert cols[f"ev_{event_type}"] == [*expected, ("dt", "date")]
        for c in columns(cls):  # what Glue declares for raw_<type> is what the view reads
            assert hive_type(presto_type(c.duckdb)) == c.glue
    assert dict(cols["jobs"])["created_at"] == "timestamp(3)"
    assert dict(cols["results"])["party"] == "array(varchar)"
    assert dict(cols["daily_costs"])["cost_usd"] == "decimal(18,10)"
    assert dict(cols["job_latency"])["seconds"] == "double"
    for table in CONTRACT_TABLES:  # every contract table carries its partition, as a DATE
        assert dict(cols[table])["dt"] == "date", table


def test_type_mapping_refuses_what_it_does_not_know():
    assert presto_type("DECIMAL(18,3)") == "decimal(18,3)"
    assert presto_type("HUGEINT") == "bigint"
    with pytest.raises(TypeError):
        presto_type("STRUCT(a INTEGER)")
    with pytest.raises(TypeError):
        hive_type("map(varchar,varchar)")


def test_view_table_input_carries_a_decodable_presto_view():
    cols = [("job_id", "varchar"), ("created_at", "timestamp(3)")]
    table = view_table_input("jobs", "SELECT 1", cols, "doclake", owner="deployer")
    assert table["TableType"] == "VIRTUAL_VIEW"
    assert table["ViewExpandedText"] == "/* Presto View */"
    assert table["Parameters"]["presto_view"] == "true"
    assert re.fullmatch(r"/\* Presto View: [A-Za-z0-9+/=]+ \*/", table["ViewOriginalText"])
    blob = decode_presto_view(table["ViewOriginalText"])
    assert blob["originalSql"] == "SELECT 1"
    assert (blob["catalog"], blob["schema"], blob["owner"]) == ("awsdatacatalog", "doclake",
                                                               "deployer")
    assert blob["columns"] == [{"name": "job_id", "type": "varchar"},
                               {"name": "created_at", "type": "timestamp(3)"}]
    assert table["StorageDescriptor"]["Columns"] == [
        {"Name": "job_id", "Type": "string"}, {"Name": "created_at", "Type": "timestamp"}]


# --- the catalog in moto -----------------------------------------------------------------------




def _client(service: str, endpoint: str):
    import boto3

    return boto3.client(service, endpoint_url=endpoint, region_name="us-east-1",
                        aws_access_key_id="testing", aws_secret_access_key="testing")


@pytest.fixture
def glue(moto_endpoint, monkeypatch):
    # awswrangler makes its own clients from a session: the default chain's credentials
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    return _client("glue", moto_endpoint)


def _all_tables(glue, database: str) -> dict[str, dict]:
    pages = glue.get_paginator("get_tables").paginate(DatabaseName=database)
    return {t["Name"]: t for page in pages for t in page["TableList"]}


def test_create_catalog_writes_database_tables_and_views(glue):
    from infra.aws.glue_catalog import create_catalog

    changes = create_catalog(glue, "lake_a", "doclake-lake", "prod",
                             projection_start="2026-01-01")
    views = athena_views()
    assert changes.created == ["lake_a", *(f"raw_{t}" for t in EVENT_TYPES), *views]
    assert glue.get_database(Name="lake_a")["Database"]["Parameters"]["schema_version"] == "1"
    assert set(_all_tables(glue, "lake_a")) == RAW_TABLES | set(views)

    raw = glue.get_table(DatabaseName="lake_a", Name="raw_model_call")["Table"]
    assert raw["PartitionKeys"] == [{"Name": "dt", "Type": "date"}]
    assert raw["Parameters"]["projection.dt.range"] == "2026-01-01,NOW"
    assert raw["Parameters"]["storage.location.template"] == (
        "s3://doclake-lake/prod/events/event_type=model_call/dt=${dt}")
    assert [c["Name"] for c in raw["StorageDescriptor"]["Columns"]] == [
        c.name for c in columns(ev.ModelCalled)]

    view = glue.get_table(DatabaseName="lake_a", Name="jobs")["Table"]
    assert view["TableType"] == "VIRTUAL_VIEW"
    blob = decode_presto_view(view["ViewOriginalText"])
    assert blob["originalSql"] == views["jobs"]
    assert blob["schema"] == "lake_a"
    assert [c["name"] for c in blob["columns"]] == [
        "job_id", "document_id", "source_name", "source_path", "status", "created_at",
        "finished_at", "pages", "units", "failure_reason", "dt"]


def test_create_catalog_is_idempotent_and_repairs_drift_only_when_asked(glue):
    from infra.aws.glue_catalog import create_catalog

    create_catalog(glue, "lake_b", "doclake-lake", "prod")
    again = create_catalog(glue, "lake_b", "doclake-lake", "prod")
    assert again.created == [] and again.updated == []
    assert len(again.unchanged) == 1 + len(RAW_TABLES) + len(athena_views())
    versions = glue.get_table_versions(DatabaseName="lake_b", TableName="raw_page_read")
    assert len(versions["TableVersions"]) == 1, "an unchanged table must not get a new version"

    drifted = raw_table_input("page_read", "doclake-lake", "prod", projection_start="2030-01-01")
    glue.update_table(DatabaseName="lake_b", TableInput=drifted)
    kept = create_catalog(glue, "lake_b", "doclake-lake", "prod", replace=False)
    assert kept.updated == []
    table = glue.get_table(DatabaseName="lake_b", Name="raw_page_read")["Table"]
    assert table["Parameters"]["projection.dt.range"] == "2030-01-01,NOW"

    fixed = create_catalog(glue, "lake_b", "doclake-lake", "prod")
    assert fixed.updated == ["raw_page_read"]
    table = glue.get_table(DatabaseName="lake_b", Name="raw_page_read")["Table"]
    assert table["Parameters"]["projection.dt.range"] == f"{DEFAULT_PROJECTION_START},NOW"


def test_views_through_athena_send_every_statement_in_order(glue, moto_endpoint):
    """Only the API plumbing: moto accepts any SQL and reports success without running it."""
    from infra.aws.glue_catalog import create_catalog

    athena = _client("athena", moto_endpoint)
    changes = create_catalog(glue, "lake_c", "doclake-lake", "prod", athena_client=athena,
                             athena_output_location="s3://doclake-results/athena/")
    assert set(_all_tables(glue, "lake_c")) == RAW_TABLES  # views are Athena's job here
    sent = [athena.get_query_execution(QueryExecutionId=i)["QueryExecution"]
            for i in changes.athena_queries]
    assert [q["Query"] for q in sent] == create_view_statements("lake_c")
    assert sent[0]["QueryExecutionContext"]["Database"] == "lake_c"


class _FakeAthena:
    """An Athena client whose queries report the given states, one per poll."""

    def __init__(self, states):
        self.states = list(states)
        self.started = []

    def start_query_execution(self, **request):
        self.started.append(request)
        return {"QueryExecutionId": f"q{len(self.started)}"}

    def get_query_execution(self, QueryExecutionId):  # noqa: N803 - boto3's spelling
        state = self.states.pop(0) if self.states else "RUNNING"
        return {"QueryExecution": {"Status": {"State": state, "StateChangeReason": "boom"}}}


def test_athena_failure_and_timeout_stop_the_run():
    pytest.importorskip("botocore", reason="boto3 is not installed (pip install -e '.[aws]')")
    from infra.aws.glue_catalog import AthenaQueryFailed, create_views_with_athena

    failing = _FakeAthena(["RUNNING", "FAILED"])
    reason = r"view lake.ev_document_registered \(q1\) ended FAILED: boom"
    with pytest.raises(AthenaQueryFailed, match=reason):
        create_views_with_athena(failing, "lake", sleep=lambda s: None)
    assert len(failing.started) == 1, "a later view must not be sent after a failure"

    now = [0.0]
    stuck = _FakeAthena([])
    with pytest.raises(AthenaQueryFailed, match="still RUNNING"):
        create_views_with_athena(stuck, "lake", timeout_s=5, sleep=lambda s: now.__setitem__(
            0, now[0] + s), clock=lambda: now[0])


def test_the_aws_catalog_command_creates_the_catalog(moto_endpoint, glue):
    from typer.testing import CliRunner

    from infra.cli.main import app

    env = {"AWS_ENDPOINT_URL": moto_endpoint, "AWS_ACCESS_KEY_ID": "testing",
           "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}
    result = CliRunner().invoke(app, ["aws", "catalog", "--bucket", "cli-lake", "--database",
                                      "cli_db", "--prefix", "p"], env=env)
    assert result.exit_code == 0, result.output
    assert "in cli_db" in result.output
    tables = _all_tables(glue, "cli_db")
    assert RAW_TABLES | {"jobs", "pages", "failures"} <= set(tables)
    assert tables["raw_job_created"]["StorageDescriptor"]["Location"] == (
        "s3://cli-lake/p/events/event_type=job_created/")


def test_raw_tables_and_database_are_written_by_awswrangler_with_projection(glue, monkeypatch):
    """The database and every raw table go through wr.catalog (create_database,
    create_parquet_table with partition projection and a storage location template); what Glue
    holds afterwards is exactly the hand definition of lake.glue, interval unit included."""
    wr = pytest.importorskip("awswrangler")

    from infra.aws.glue_catalog import _contains, create_catalog, wrangler_table_arguments

    calls = {"database": [], "table": []}
    real_db, real_table = wr.catalog.create_database, wr.catalog.create_parquet_table
    monkeypatch.setattr(wr.catalog, "create_database", lambda name, **kw: (
        calls["database"].append(name), real_db(name, **kw))[1])
    monkeypatch.setattr(wr.catalog, "create_parquet_table", lambda **kw: (
        calls["table"].append(kw), real_table(**kw))[1])

    changes = create_catalog(glue, "lake_w", "doclake-lake", "prod", projection_start="2026-02-01")
    assert calls["database"] == ["lake_w"]
    assert sorted(c["table"] for c in calls["table"]) == sorted(RAW_TABLES)
    settings = next(c for c in calls["table"] if c["table"] == "raw_page_read")[
        "athena_partition_projection_settings"]
    assert settings == {
        "projection_types": {"dt": "date"}, "projection_ranges": {"dt": "2026-02-01,NOW"},
        "projection_formats": {"dt": "yyyy-MM-dd"}, "projection_intervals": {"dt": "1"},
        "projection_storage_location_template":
            "s3://doclake-lake/prod/events/event_type=page_read/dt=${dt}"}
    assert wr.config.glue_endpoint_url is None  # the endpoint was only lent for the call
    assert changes.created[:2] == ["lake_w", "raw_" + next(iter(EVENT_TYPES))]

    for event_type in EVENT_TYPES:
        wanted = raw_table_input(event_type, "doclake-lake", "prod", projection_start="2026-02-01")
        table = glue.get_table(DatabaseName="lake_w", Name=wanted["Name"])["Table"]
        assert _contains(table, wanted), wanted["Name"]
        assert table["Parameters"]["projection.dt.interval.unit"] == "DAYS"
        assert table["Parameters"]["projection.enabled"] == "true"
    # awswrangler has no interval-unit setting: the one projection key passed as a parameter
    args = wrangler_table_arguments(raw_table_input("page_read", "b-lake", ""))
    assert args["parameters"]["projection.dt.interval.unit"] == "DAYS"
    assert not any(k.startswith("projection.") and k != "projection.dt.interval.unit"
                   for k in args["parameters"])


def test_a_database_the_stack_made_keeps_its_raw_tables_to_the_stack(glue):
    """Finding 7: one owner. The CDK stack marks its database; ``create_catalog`` (``doclake
    aws catalog``) then writes only the views and never a raw table the template also defines."""
    from infra.aws.glue_catalog import OWNER_PARAMETER, create_catalog

    glue.create_database(DatabaseInput={"Name": "stack_db", "Parameters": {
        OWNER_PARAMETER: "cloudformation"}})
    changes = create_catalog(glue, "stack_db", "doclake-lake")
    tables = _all_tables(glue, "stack_db")
    assert changes.owned_by_stack
    assert not RAW_TABLES & set(tables)
    assert {"jobs", "pages", "failures"} <= set(tables)


def test_the_catalog_command_prints_its_definitions_without_calling_aws():
    import json

    from typer.testing import CliRunner

    from infra.cli.main import app

    env = {"AWS_ENDPOINT_URL": "http://127.0.0.1:9", "AWS_ACCESS_KEY_ID": "",
           "AWS_DEFAULT_REGION": ""}  # nothing listens there: a call would fail
    result = CliRunner().invoke(app, ["aws", "catalog", "--bucket", "print-lake", "--print"], env=env)
    assert result.exit_code == 0, result.output
    blob, views = result.output.split("\nCREATE", 1)
    definitions = json.loads(blob)
    assert set(definitions["raw_tables"]) >= RAW_TABLES
    assert definitions["raw_tables"]["raw_job_created"]["StorageDescriptor"]["Location"] == (
        "s3://print-lake/events/event_type=job_created/")
    assert "VIEW" in views.split("\n", 1)[0]
