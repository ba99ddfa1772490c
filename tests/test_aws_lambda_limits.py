"""Lambda's own limits in the design (issue 22), through the AWS handlers against moto: a dead
letter fails its job once, a batch's units share one download of their source, the retry
schedule and the functions' timeouts as the synthesized template sets them."""

from __future__ import annotations

import asyncio

import pytest
from support import awsmoto
from support.awsflow import INGEST_QUEUE, Deployment, FakeContext

pytest.importorskip("aws_lambda_powertools")


@pytest.fixture
def deployment(monkeypatch):
    awsmoto.endpoint()
    deployed = Deployment(max_receives=2)
    for name, value in deployed.env().items():
        monkeypatch.setenv(name, value)
    from infra.aws import runtime

    runtime.shared.cache_clear()
    yield deployed
    runtime.shared.cache_clear()


def _upload(deployed: Deployment, name: str, data: bytes) -> None:
    """An upload as the presigned POST leaves it, then the ingest function's batch."""
    from infra.aws.lambdas import ingest

    deployed.s3.put_object(Bucket=deployed.uploads, Key=f"uploads/{awsmoto.unique('d')}/{name}",
                           Body=data)
    records, failed = deployed.invoke_queue(INGEST_QUEUE, ingest.handler)
    assert (records, failed) == (1, 0)


def _poll(runtime) -> None:
    from infra.aws.lambdas.poller import run_passes

    asyncio.run(run_passes(runtime, holder="test", loop_s=0, interval_s=0.01))


def _invoke(deployed: Deployment, queue: str, **context) -> tuple[int, int]:
    from infra.aws.lambdas import extraction

    return deployed.invoke_queue(queue, extraction.handler,
                                 context=FakeContext(function_name="extraction", **context))


def test_a_dead_letter_fails_its_job_once_however_often_the_poller_sees_it(
        deployment, pdf_factory, monkeypatch):
    """The DLQ keeps the message for people; every pass that sees it again (here: each pass,
    its hiding time set to nothing) records nothing more than the first did."""
    from infra.aws.lambdas import poller
    from infra.aws.runtime import shared
    from lake.catalog import query

    _upload(deployment, "poison.pdf", pdf_factory("poison.pdf", 3).read_bytes())
    assert _invoke(deployment, "split")[0] == 1
    for _ in range(deployment.max_receives):  # the read worker dies on every delivery
        deployment.receive("read", visibility_s=0)
    assert deployment.receive("read") == []  # redriven to the DLQ

    monkeypatch.setattr(poller, "MAX_VISIBILITY_S", 0)  # the message is back at every pass
    runtime = shared()
    for _ in range(4):
        _poll(runtime)
    (job,) = runtime.store.list_jobs()
    assert (job.status.value, job.failure_reason) == ("failed", "dead_letter")
    lake = awsmoto.lake_uri(deployment.lake)
    rows = query(lake, "SELECT unit_id, final FROM failures "
                       "WHERE error_type = 'dead_letter'").to_pylist()
    assert rows == [{"unit_id": "u00001", "final": True}], rows


def test_the_units_of_one_batch_share_one_download_of_their_source(deployment, pdf_factory):
    """Three read units of one document in one SQS batch: the upload is fetched from S3 once,
    and no copy is left in /tmp when the invocation ends."""
    from infra.aws.runtime import shared

    _upload(deployment, "long.pdf", pdf_factory("long.pdf", 15).read_bytes())
    assert _invoke(deployment, "split") == (1, 0)
    runtime = shared()
    (job,) = runtime.store.list_jobs()
    assert job.units == 3
    fetched: list[str] = []
    runtime.s3.meta.events.register(
        "provide-client-params.s3.GetObject",
        lambda params, **_: fetched.append(params["Key"]))
    import tempfile
    from pathlib import Path

    before = set(Path(tempfile.gettempdir()).glob("doclake-*"))
    assert _invoke(deployment, "read") == (3, 0)
    assert fetched.count(job.object_key) == 1, fetched
    assert set(Path(tempfile.gettempdir()).glob("doclake-*")) <= before
    _poll(runtime)
    assert runtime.store.get_job(job.job_id).status.value == "succeeded"
