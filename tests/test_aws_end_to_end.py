"""The AWS path end to end on the synthesized template with IAM enforced (``support.awsstack``):
what ``tests/test_aws_stack.py`` does not already pin. One lake file for a whole batch of read
units; the page each extracted field came from and the published flags on the claim and the job;
the limits the presigned POST policy carries; a poison message's job result (no fields asked)
with the DLQ left for the operator."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime

import pytest

pytest.importorskip("aws_cdk", reason="the cdk extra is not installed (pip install -e '.[cdk]')")
pytest.importorskip("moto.server", reason="moto[server] is not installed")
httpx = pytest.importorskip("httpx")
pytest.importorskip("aws_lambda_powertools")

from support.awsstack import StackDeployment, synth  # noqa: E402

NDA = ["NON-DISCLOSURE AGREEMENT made as of March 3, 2015",
       "This Agreement is governed by the laws of the State of New York.",
       "This Agreement shall remain in effect for two (2) years."]


def _slot(deployed: StackDeployment, name: str) -> dict:
    answer = deployed.invoke("presigner", {"body": json.dumps({
        "source_name": name, "content_type": "application/pdf"})})
    assert answer["statusCode"] == 201, answer
    return json.loads(answer["body"])


def _upload(slot: dict, data: bytes) -> None:
    upload = slot["upload"]
    response = httpx.post(upload["url"], data=upload["fields"],
                          files={"file": ("ignored.pdf", data, "application/pdf")})
    assert response.status_code in (200, 201, 204), response.text


def _bucket(deployed: StackDeployment, variable: str) -> str:
    return deployed.functions["read"].environment[variable].removeprefix("s3://")


def _keys(deployed: StackDeployment, bucket: str, prefix: str = "") -> list[str]:
    pages = deployed.client("s3").get_paginator("list_objects_v2").paginate(
        Bucket=bucket, Prefix=prefix)
    return sorted(o["Key"] for page in pages for o in page.get("Contents", []))


def _query(deployed: StackDeployment, sql: str) -> list[dict]:
    from lake.catalog import query

    with deployed.as_deployer():
        return query(deployed.lake_uri(), sql).to_pylist()


def test_one_read_invocation_writes_one_lake_file_for_its_batch_of_units(
        iam_moto, pdf_factory):
    """27 pages are six units: the split reads the text of the first four (20 pages) while it
    has the file open, and the last two go to the read queue, whose mapping's batch delivers
    both to one invocation; its events go to the lake in one flush: one file per event type
    and day, not one per message. No fields asked: the job's own result is published."""
    deployed = StackDeployment(synth(), iam_moto)
    slot = _slot(deployed, "nda.pdf")
    assert httpx.get(slot["result_url"]).status_code in (403, 404)  # nothing published yet
    _upload(slot, pdf_factory("nda.pdf", 27, word="confidential").read_bytes())
    assert deployed.drain("ingest") == (1, 0)
    assert deployed.mapping_of("read").batch_size >= 2
    deployed.run_until_still()

    with deployed.running_as("poller"):
        from infra.aws.runtime import shared

        (job,) = shared().store.list_jobs()
    assert (job.document_id, job.source_name) == (slot["document_id"], "nda.pdf")
    assert (job.status.value, job.pages, job.units, job.indexed_at is not None) == (
        "succeeded", 27, 6, True)
    prefix = f"pages/{job.document_id}/{job.job_id}/"
    assert _keys(deployed, _bucket(deployed, "DOCLAKE_RESULTS_BUCKET"), prefix) == [
        f"{prefix}{n:05d}.md" for n in range(1, 28)]
    reads = [i for i in deployed.invocations if i.function == "read"]
    assert len(reads) == 1, reads  # the two units left, in one batch

    assert deployed.publish() == 1
    body = httpx.get(slot["result_url"]).json()
    assert (body["document_id"], body["status"], body["pages"]) == (
        slot["document_id"], "succeeded", 27)
    assert set(body) >= {"extracted_fields", "model_version", "token_usage", "processing_ms"}

    assert _query(deployed, "SELECT status, pages, units FROM jobs") == [
        {"status": "succeeded", "pages": 27, "units": 6}]
    assert _query(deployed, "SELECT count(*) AS n FROM pages") == [{"n": 27}]
    lake = [k for k in _keys(deployed, _bucket(deployed, "DOCLAKE_LAKE_URI"))
            if "event_type=page_read" in k]
    assert len(lake) == 2, lake  # one from the split, one from the read batch's two units


def test_published_fields_name_their_pages_and_mark_the_claim_and_the_job_published(
        iam_moto, tmp_path):
    """``-c fields_schema=nda`` (the rules strategy: no network): the claim's stream record
    publishes the fields JSON, marks the claim and the job published, and the lake's
    result_fields say which page each value was read from."""
    from support.pdfgen import make_pdf

    # The poller's outbox pass (``test_aws_stack``) waits out a grace this test never reaches,
    # however slow the machine: the stream's record is what publishes here.
    deployed = StackDeployment(synth((("fields_schema", "nda"),)), iam_moto,
                               environment={"DOCLAKE_PUBLISH_GRACE_S": "86400"})
    slot = _slot(deployed, "nda.pdf")
    _upload(slot, make_pdf(tmp_path / "nda.pdf", NDA).read_bytes())
    deployed.drain("ingest")
    deployed.run_until_still()

    def state():
        with deployed.running_as("poller"):
            from infra.aws.runtime import shared

            store = shared().store
            (job,) = store.list_jobs()
            return job, store.get_field_claim(job.job_id, "rules")

    job, claim = state()
    assert (job.status.value, job.fields_schema, claim.status.value) == ("succeeded", "nda", "done")
    assert (claim.published_at, job.fields_published_at) == (None, None)
    assert deployed.publish() == 1  # the claim's record; the job's is left to the fields
    job, claim = state()
    assert claim.published_at is not None and job.fields_published_at is not None

    body = httpx.get(slot["result_url"]).json()
    assert list(body)[:6] == ["document_id", "status", "extracted_fields", "model_version",
                              "token_usage", "processing_ms"]
    assert (body["document_id"], body["status"], body["strategy"], body["schema"]) == (
        slot["document_id"], "succeeded", "rules", "nda")
    fields = body["extracted_fields"]
    assert (fields["jurisdiction"], fields["term"], fields["effective_date"]) == (
        "New York", "2 years", "2015-03-03")
    assert body["model_version"].startswith("rules-")

    assert _query(deployed, "SELECT status, jurisdiction, strategy FROM results") == [
        {"status": "succeeded", "jurisdiction": "New York", "strategy": "rules"}]
    rows = _query(deployed, "SELECT field, value, page_number FROM result_fields ORDER BY field")
    assert [(r["field"], r["value"], r["page_number"]) for r in rows] == [
        ("effective_date", "2015-03-03", 1), ("jurisdiction", "New York", 2),
        ("term", "2 years", 3)]


def test_the_post_policy_carries_one_key_the_size_range_the_type_and_the_expiry(iam_moto):
    """The POST policy S3 enforces, signed by the presigner with the template's settings
    (``-c upload_expiry_s=600``). moto accepts the policy without enforcing it, so its content
    is what is checked; an expiry over S3's bound is refused at start."""
    deployed = StackDeployment(synth((("upload_expiry_s", "600"),)), iam_moto)
    assert deployed.functions["presigner"].environment["DOCLAKE_UPLOAD_EXPIRY_S"] == "600"
    post = _slot(deployed, "big.pdf")
    policy = json.loads(base64.b64decode(post["upload"]["fields"]["policy"]))
    conditions = policy["conditions"]
    assert ["content-length-range", 1, 512 * 1024 * 1024] in conditions
    assert {"Content-Type": "application/pdf"} in conditions
    assert {"key": f"uploads/{post['document_id']}/" + post["upload"]["fields"]["key"].split(
        "/")[-1]} in conditions
    expires = datetime.strptime(policy["expiration"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    assert 590 <= (expires - datetime.now(UTC)).total_seconds() <= 600

    from infra.aws.lambdas import presigner

    with pytest.raises(ValueError, match="1..900"):
        presigner.settings({"DOCLAKE_UPLOAD_EXPIRY_S": "3600"})


def test_a_poison_message_fails_its_job_whose_result_says_dead_letter(iam_moto, pdf_factory):
    """No fields asked: the job's own result is published, with the DLQ's reason. The dead
    message stays in the DLQ for the operator (hidden once the poller has read it), and the
    read queue's depth counts it. 23 pages: the split reads the first 20 (four units), so one
    read message is left, for pages 21 to 23."""
    deployed = StackDeployment(synth(), iam_moto)
    slot = _slot(deployed, "poison.pdf")
    _upload(slot, pdf_factory("poison.pdf", 23).read_bytes())
    deployed.drain("ingest")
    deployed.drain("split")

    redrive = deployed.dies_on_every_delivery("read")
    admin = deployed.client("sqs")
    dlq = deployed.queue_url(redrive["deadLetterTargetArn"])
    assert len(admin.receive_message(QueueUrl=dlq, VisibilityTimeout=0)["Messages"]) == 1

    deployed.poll()  # the DLQ pass fails the unit...
    deployed.poll()  # ...and the next pass the job
    with deployed.running_as("poller"):
        from infra.aws.runtime import shared

        runtime = shared()
        (job,) = runtime.store.list_jobs()
        dead = runtime.queue.depth("read").dead_letter
    assert (job.status.value, job.failure_reason) == ("failed", "dead_letter")
    assert admin.receive_message(QueueUrl=dlq).get("Messages", []) == []  # kept, hidden
    assert dead == 1

    assert deployed.publish() == 1
    result = httpx.get(slot["result_url"]).json()
    assert (result["status"], result["failure_reason"]) == ("failed", "dead_letter")
