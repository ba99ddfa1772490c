"""The whole AWS path in moto server mode on 127.0.0.1, with the Lambda handlers invoked
in-process: request a slot, upload with plain HTTP to the presigned URL, the S3 event reaches the
ingest queue through EventBridge, split, read, poll, index, fields, publish; the result JSON appears at
its address, the events are in the lake bucket and the lake's views read them; a message whose
worker keeps dying ends in the DLQ and fails its job."""

from __future__ import annotations

import asyncio
import json

import pytest
from support import awsmoto
from support.awsflow import INGEST_QUEUE, Deployment, FakeContext

httpx = pytest.importorskip("httpx")
pytest.importorskip("aws_lambda_powertools")


@pytest.fixture
def deployment(monkeypatch):
    awsmoto.endpoint()
    deployed = Deployment(max_receives=2)
    for name, value in deployed.env().items():
        monkeypatch.setenv(name, value)
    from infra.aws import runtime
    from infra.aws.lambdas import presigner

    runtime.shared.cache_clear()
    presigner._client = None
    yield deployed
    runtime.shared.cache_clear()


def _slot(name: str, method: str = "POST", size: int | None = None) -> dict:
    from infra.aws.lambdas import presigner

    answer = presigner.handler({"body": json.dumps({
        "source_name": name, "content_type": "application/pdf", "method": method,
        "size": size})})
    assert answer["statusCode"] == 201
    return json.loads(answer["body"])


def _upload(slot: dict, data: bytes) -> httpx.Response:
    upload = slot["upload"]
    if upload["method"] == "PUT":
        return httpx.put(upload["url"], content=data, headers=upload["headers"])
    return httpx.post(upload["url"], data=upload["fields"],
                      files={"file": ("ignored.pdf", data, "application/pdf")})


def _ingest(deployed: Deployment) -> int:
    from infra.aws.lambdas import ingest

    records, failed = deployed.invoke_queue(INGEST_QUEUE, ingest.handler)
    assert failed == 0
    return records


def _poll(runtime) -> None:
    from infra.aws.lambdas.poller import run_passes

    asyncio.run(run_passes(runtime, holder="test", loop_s=0, interval_s=0.01))


def _drive(deployed: Deployment, *, rounds: int = 8, skip_queue: str | None = None) -> None:
    """Play Lambda: drain the pipeline queues through the extraction handler, then a poller
    pass, until nothing moves."""
    from infra.aws.lambdas import extraction
    from infra.aws.runtime import shared

    for _ in range(rounds):
        moved = 0
        for queue in ("split", "read", "index", "fields"):
            if queue != skip_queue:
                moved += deployed.invoke_queue(queue, extraction.handler,
                                               context=FakeContext(function_name="extraction"))[0]
        _poll(shared())
        if not moved:
            return


def _publish(deployed: Deployment) -> int:
    from infra.aws.lambdas import publisher

    return publisher.handler({"Records": deployed.stream_records()},
                             FakeContext(function_name="publisher"))["published"]


def test_upload_slot_to_result_json_through_s3_eventbridge_sqs_and_the_handlers(
        deployment, pdf_factory):
    pdf = pdf_factory("nda.pdf", 7, word="confidential").read_bytes()
    slot = _slot("nda.pdf")
    assert httpx.get(slot["result_url"]).status_code in (403, 404)  # nothing published yet
    assert _upload(slot, pdf).status_code in (200, 201, 204)

    assert _ingest(deployment) == 1  # S3 -> EventBridge -> the ingest queue -> planned
    from infra.aws.runtime import shared

    runtime = shared()
    (job,) = runtime.store.list_jobs()
    assert (job.document_id, job.source_name, job.status.value) == (
        slot["document_id"], "nda.pdf", "queued")

    _drive(deployment)
    job = runtime.store.get_job(job.job_id)
    assert (job.status.value, job.pages, job.units, job.indexed_at is not None) == (
        "succeeded", 7, 2, True)
    assert runtime.objects.list(f"pages/{job.document_id}/{job.job_id}/") == [
        f"pages/{job.document_id}/{job.job_id}/{n:05d}.md" for n in range(1, 8)]

    assert _publish(deployment) == 1
    assert _publish(deployment) == 0  # a replayed stream batch publishes nothing twice
    result = httpx.get(slot["result_url"])
    assert result.status_code == 200
    body = result.json()
    assert (body["document_id"], body["status"], body["pages"]) == (
        slot["document_id"], "succeeded", 7)
    assert set(body) >= {"extracted_fields", "model_version", "token_usage", "processing_ms"}

    from lake.catalog import query

    lake = awsmoto.lake_uri(deployment.lake)
    rows = query(lake, "SELECT status, pages, units FROM jobs").to_pylist()
    assert rows == [{"status": "succeeded", "pages": 7, "units": 2}]
    pages = query(lake, "SELECT count(*) AS n FROM pages").to_pylist()
    assert pages == [{"n": 7}]
    # One invocation's batch of two read units went to the lake in one flush: one file per
    # event type and day, not one per message.
    keys = [k for k in _keys(deployment.s3, deployment.lake) if "event_type=page_read" in k]
    assert len(keys) == 1, keys


NDA = ["NON-DISCLOSURE AGREEMENT made as of March 3, 2015",
       "This Agreement is governed by the laws of the State of New York.",
       "This Agreement shall remain in effect for two (2) years."]


def test_the_fields_stage_on_aws_publishes_extracted_fields_at_the_result_address(
        deployment, tmp_path, monkeypatch):
    """DOCLAKE_FIELDS_SCHEMA on the ingest function asks every upload for fields: the poller
    sends the fields message once the text is final, the extraction image's fields handler
    claims and settles the result in DynamoDB, and the publisher, fed the claim's stream
    record, writes the JSON and the lake's result events (the rules strategy: no network)."""
    from support.pdfgen import make_pdf

    monkeypatch.setenv("DOCLAKE_FIELDS_SCHEMA", "nda")
    monkeypatch.setenv("DOCLAKE_FIELDS_STRATEGY", "rules")
    pdf = make_pdf(tmp_path / "nda.pdf", NDA).read_bytes()
    slot = _slot("nda.pdf")
    _upload(slot, pdf)
    assert _ingest(deployment) == 1
    _drive(deployment)

    from infra.aws.runtime import shared

    runtime = shared()
    (job,) = runtime.store.list_jobs()
    claim = runtime.store.get_field_claim(job.job_id, "rules")
    assert (job.status.value, job.fields_schema, claim.status.value) == ("succeeded", "nda", "done")

    assert _publish(deployment) == 1  # the claim's record; the job's is left to the fields
    assert _publish(deployment) == 0  # a replayed stream batch publishes nothing twice
    assert runtime.store.get_field_claim(job.job_id, "rules").published_at is not None
    assert runtime.store.get_job(job.job_id).fields_published_at is not None

    body = httpx.get(slot["result_url"]).json()
    assert list(body)[:6] == ["document_id", "status", "extracted_fields", "model_version",
                              "token_usage", "processing_ms"]
    assert (body["document_id"], body["status"], body["strategy"], body["schema"]) == (
        slot["document_id"], "succeeded", "rules", "nda")
    fields = body["extracted_fields"]
    assert (fields["jurisdiction"], fields["term"], fields["effective_date"]) == (
        "New York", "2 years", "2015-03-03")
    assert body["model_version"].startswith("rules-")

    from lake.catalog import query

    lake = awsmoto.lake_uri(deployment.lake)
    assert query(lake, "SELECT status, jurisdiction, strategy FROM results").to_pylist() == [
        {"status": "succeeded", "jurisdiction": "New York", "strategy": "rules"}]
    rows = query(lake, "SELECT field, value, page_number FROM result_fields "
                       "ORDER BY field").to_pylist()
    assert [(r["field"], r["value"], r["page_number"]) for r in rows] == [
        ("effective_date", "2015-03-03", 1), ("jurisdiction", "New York", 2),
        ("term", "2 years", 3)]


def _keys(s3, bucket: str) -> list[str]:
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket)
    return sorted(o["Key"] for page in pages for o in page.get("Contents", []))


def test_presigned_put_for_one_key_and_the_post_policy_limits(deployment, pdf_factory, monkeypatch):
    pdf = pdf_factory("letter.pdf", 1).read_bytes()
    slot = _slot("letter.pdf", method="PUT", size=len(pdf))
    assert _upload(slot, pdf).status_code == 200
    assert _ingest(deployment) == 1
    from infra.aws.runtime import shared

    (job,) = shared().store.list_jobs()
    assert (job.document_id, job.source_name) == (slot["document_id"], "letter.pdf")

    # The POST policy S3 enforces: one key, a size range, the content type, within the expiry.
    # moto accepts the policy without enforcing it, so its content is what is checked here.
    import base64
    from datetime import UTC, datetime

    monkeypatch.setenv("DOCLAKE_UPLOAD_EXPIRY_S", "600")
    from infra.aws.lambdas import presigner

    post = _slot("big.pdf")
    policy = json.loads(base64.b64decode(post["upload"]["fields"]["policy"]))
    conditions = policy["conditions"]
    assert ["content-length-range", 1, 512 * 1024 * 1024] in conditions
    assert {"Content-Type": "application/pdf"} in conditions
    assert {"key": f"uploads/{post['document_id']}/" + post["upload"]["fields"]["key"].split(
        "/")[-1]} in conditions
    expires = datetime.strptime(policy["expiration"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    assert 590 <= (expires - datetime.now(UTC)).total_seconds() <= 600
    monkeypatch.setenv("DOCLAKE_UPLOAD_EXPIRY_S", "3600")
    with pytest.raises(ValueError, match="at most|1..900"):
        presigner.settings()


def test_a_message_whose_worker_keeps_dying_ends_in_the_dlq_and_fails_its_job(
        deployment, pdf_factory):
    pdf = pdf_factory("poison.pdf", 3).read_bytes()
    slot = _slot("poison.pdf")
    _upload(slot, pdf)
    _ingest(deployment)
    _drive(deployment, rounds=1, skip_queue="read")  # split; the unit's message waits

    # The read worker dies (timeout, out of memory) on every delivery: never an answer.
    for _ in range(deployment.max_receives):
        (message,) = deployment.receive("read", visibility_s=0)
    assert deployment.receive("read") == []  # the next receive redrove it to the DLQ
    assert len(deployment.receive("read-dlq", visibility_s=0)) == 1

    from infra.aws.runtime import shared

    runtime = shared()
    _poll(runtime)  # the DLQ pass fails the unit, the next pass the job
    _poll(runtime)
    (job,) = runtime.store.list_jobs()
    assert (job.status.value, job.failure_reason) == ("failed", "dead_letter")
    assert len(deployment.receive("read-dlq")) == 0  # still there, hidden for the operator
    assert runtime.queue.depth("read").dead_letter == 1

    assert _publish(deployment) == 1
    result = httpx.get(slot["result_url"]).json()
    assert (result["status"], result["failure_reason"]) == ("failed", "dead_letter")


def test_a_failed_job_that_asked_for_fields_publishes_a_failed_fields_result(
        deployment, pdf_factory, monkeypatch):
    monkeypatch.setenv("DOCLAKE_FIELDS_SCHEMA", "nda")
    slot = _slot("poison.pdf")
    _upload(slot, pdf_factory("poison.pdf", 3).read_bytes())
    _ingest(deployment)
    _drive(deployment, rounds=1, skip_queue="read")
    for _ in range(deployment.max_receives):
        deployment.receive("read", visibility_s=0)
    assert deployment.receive("read") == []  # redriven to the DLQ

    from infra.aws.runtime import shared

    runtime = shared()
    _poll(runtime)  # the DLQ pass fails the unit, the next pass the job
    _poll(runtime)
    _drive(deployment, rounds=2, skip_queue="read")  # the fields message of a failed job
    (job,) = runtime.store.list_jobs()
    assert (job.status.value, job.failure_reason) == ("failed", "dead_letter")
    assert _publish(deployment) == 1  # the failed fields result, not the job's status
    body = httpx.get(slot["result_url"]).json()
    assert (body["status"], body["extracted_fields"], body["error"]["reason"]) == (
        "failed", None, "job_failed")
