"""An S3 lake, written and queried from DuckDB through pyarrow's S3 filesystem, on a moto server.

Nothing here downloads a DuckDB extension: the catalog registers Arrow datasets over pyarrow's
S3 filesystem. The endpoint comes from the environment, as it would on a laptop pointed at
MinIO or LocalStack.
"""

from __future__ import annotations

import re
import uuid
from datetime import UTC, date, datetime, timedelta

import pyarrow.parquet as pq
import pytest
from support.lakegen import uuid7_at

from lake import events as ev
from lake.catalog import query
from lake.s3 import open_s3, s3_endpoint, split_s3_uri
from lake.writer import ParquetEventWriter

ENDPOINT_VARIABLES = ("DOCLAKE_S3_ENDPOINT", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")




@pytest.fixture
def aws_env(monkeypatch, moto_endpoint):
    """Fake credentials and a clean slate: no profile or endpoint leaks in from the shell."""
    for name in (*ENDPOINT_VARIABLES, "AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    return monkeypatch


@pytest.fixture
def s3(aws_env, moto_endpoint):
    import boto3

    return boto3.client("s3", endpoint_url=moto_endpoint)


@pytest.fixture
def bucket(s3):
    name = f"lake-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=name)
    return name


def _keys(s3, bucket: str) -> list[str]:
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket)
    return sorted(o["Key"] for page in pages for o in page.get("Contents", []))


def _one_job(day: datetime) -> list[ev.Event]:
    ids = {"document_id": uuid7_at(day, 1), "job_id": uuid7_at(day, 2)}
    at = lambda minutes: day + timedelta(minutes=minutes)  # noqa: E731
    pages = [ev.PageRead(**ids, unit_id="u1", page_number=n, reader="text", chars=10 * n,
                         occurred_at=at(2)) for n in (1, 2, 3)]
    return [
        ev.DocumentRegistered(**ids, source_name="a.pdf", sha256="cd" * 32, bytes=321,
                              occurred_at=at(0)),
        ev.JobCreated(**ids, occurred_at=at(0)),
        ev.JobSplit(**ids, pages=3, units=1, occurred_at=at(1)),
        ev.UnitPlanned(**ids, unit_id="u1", kind="pdf_pages", first_page=1, last_page=3,
                       occurred_at=at(1)),
        *pages,
        ev.UnitDone(**ids, unit_id="u1", pages=3, occurred_at=at(3)),
        # the poller finishes the job just after midnight UTC: a second dt partition
        ev.JobSucceeded(**ids, pages=3, units=1, occurred_at=day.replace(hour=0) + timedelta(1)),
    ]


def test_events_round_trip_through_an_s3_lake_with_the_endpoint_from_env(aws_env, s3, bucket,
                                                                          moto_endpoint):
    """``AWS_ENDPOINT_URL`` alone must carry both the writer and ``lake.catalog.query``.

    If this fails on another pyarrow build, that build ignores the variable: use
    ``lake.s3.open_s3`` (explicit ``endpoint_override``) in ``lake.files.open_lake``.
    """
    aws_env.setenv("AWS_ENDPOINT_URL", moto_endpoint)
    uri = f"s3://{bucket}/prod"
    day = datetime(2026, 4, 30, 22, 0, tzinfo=UTC)
    writer = ParquetEventWriter.for_uri(uri)
    writer.write(_one_job(day))
    writer.write([_one_job(day)[4]])  # page 1 redelivered: a second file, the same event id

    keys = _keys(s3, bucket)
    layout = re.compile(r"prod/events/event_type=[a-z_]+/dt=\d{4}-\d{2}-\d{2}/part-[-0-9a-f]+"
                        r"\.parquet")
    assert keys and all(layout.fullmatch(k) for k in keys), keys
    # finished after midnight, but a job's events all live in the job's day (its UUIDv7's)
    assert {k.split("/")[3] for k in keys} == {"dt=2026-04-30"}
    assert sum("event_type=page_read" in k for k in keys) == 2

    jobs = query(uri, "SELECT job_id, status, pages, units, finished_at, dt FROM jobs").to_pylist()
    assert jobs == [{"job_id": uuid7_at(day, 2), "status": "succeeded", "pages": 3, "units": 1,
                     "finished_at": datetime(2026, 5, 1, 0, 0),  # TIMESTAMP in UTC (issue 26)
                     "dt": date(2026, 4, 30)}]
    pages = query(uri, "SELECT page_number, chars FROM pages ORDER BY page_number").to_pylist()
    assert pages == [{"page_number": n, "chars": 10 * n} for n in (1, 2, 3)]
    raw = query(uri, "SELECT count(*) AS n FROM raw_page_read").to_pylist()
    assert raw == [{"n": 4}], "the duplicate is in the raw table and only removed by ev_*"
    docs = query(uri, "SELECT source_name, bytes FROM documents").to_pylist()
    assert docs == [{"source_name": "a.pdf", "bytes": 321}]


def test_open_s3_reaches_the_endpoint_when_pyarrow_would_not_look(aws_env, s3, bucket,
                                                                 moto_endpoint):
    """Only ``DOCLAKE_S3_ENDPOINT`` is set, which no AWS SDK reads: the helper must pass it on."""
    aws_env.setenv("DOCLAKE_S3_ENDPOINT", moto_endpoint)
    filesystem, root = open_s3(f"s3://{bucket}/lake/")
    assert root == f"{bucket}/lake"
    day = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
    paths = ParquetEventWriter(filesystem, root).write(_one_job(day))
    assert sorted(p.removeprefix(f"{bucket}/") for p in paths) == _keys(s3, bucket)
    table = pq.read_table(
        next(p for p in paths if "event_type=job_split" in p), filesystem=filesystem)
    assert table.to_pylist()[0]["pages"] == 3


def test_endpoint_precedence_and_uri_checks():
    env = {"AWS_ENDPOINT_URL": "http://global:1", "AWS_ENDPOINT_URL_S3": "http://s3only:2"}
    assert s3_endpoint(env) == "http://s3only:2"
    assert s3_endpoint({**env, "DOCLAKE_S3_ENDPOINT": "http://ours:3"}) == "http://ours:3"
    assert s3_endpoint({"AWS_ENDPOINT_URL": "http://global:1"}) == "http://global:1"
    assert s3_endpoint({}) is None
    assert split_s3_uri("s3://bucket/a/b/") == ("bucket", "a/b")
    assert split_s3_uri("s3://bucket") == ("bucket", "")
    with pytest.raises(ValueError):
        split_s3_uri("/local/folder")
