"""Upload slots on the synthesized template, IAM enforced (``support.awsstack``): a presigned POST
can be used again until it expires (S3 has no conditional POST), so the slot is claimed instead.

The uploads bucket is versioned (the template's), the ingest function's conditional job write
pins the job to the version its event names, every step reads that version, and a second upload
to a claimed slot is refused: a final ``slot_reused`` failure in the lake's failures table and
its version deleted with the ingest function's own role. The first document's job, bytes and
pages are those of the first upload."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("aws_cdk", reason="the cdk extra is not installed (pip install -e '.[cdk]')")
pytest.importorskip("moto.server", reason="moto[server] is not installed")
httpx = pytest.importorskip("httpx")
pytest.importorskip("aws_lambda_powertools")

from support.awsstack import StackDeployment, synth  # noqa: E402
from support.pdfgen import make_pdf  # noqa: E402

FIRST = ["FIRST UPLOAD: the agreement the caller meant to send."]
SECOND = ["SECOND UPLOAD: other bytes sent to the same slot later."]


@pytest.fixture
def deployed(iam_moto):
    return StackDeployment(synth(), iam_moto)


def _post_slot(deployed: StackDeployment, name: str) -> dict:
    answer = deployed.invoke("presigner", {"body": json.dumps({
        "source_name": name, "content_type": "application/pdf"})})
    assert answer["statusCode"] == 201, answer
    slot = json.loads(answer["body"])
    assert slot["upload"]["method"] == "POST"
    return slot


def _post(slot: dict, data: bytes) -> None:
    """One upload through the slot's presigned POST form, as a browser sends it."""
    upload = slot["upload"]
    response = httpx.post(upload["url"], data=upload["fields"],
                          files={"file": ("ignored", data, "application/pdf")})
    assert response.status_code in (200, 201, 204), response.text  # S3 takes it again


def _jobs(deployed: StackDeployment) -> list:
    with deployed.running_as("poller"):
        from infra.aws.runtime import shared

        return shared().store.list_jobs()


def _versions(deployed: StackDeployment, key: str) -> list[bytes]:
    """Every stored version's bytes at ``key`` (as the deployer)."""
    s3 = deployed.client("s3")
    bucket = deployed.functions["ingest"].environment["DOCLAKE_UPLOADS_BUCKET"]
    listed = s3.list_object_versions(Bucket=bucket, Prefix=key)
    return [s3.get_object(Bucket=bucket, Key=key, VersionId=v["VersionId"])["Body"].read()
            for v in listed.get("Versions", []) if v["Key"] == key]


def _page(deployed: StackDeployment, job) -> str:
    return deployed.client("s3").get_object(
        Bucket=deployed.functions["read"].environment["DOCLAKE_RESULTS_BUCKET"],
        Key=f"pages/{job.document_id}/{job.job_id}/00001.md")["Body"].read().decode()


def _refusals(deployed: StackDeployment) -> list[dict]:
    from lake.catalog import query

    with deployed.as_deployer():
        return query(deployed.lake_uri(), "SELECT job_id, stage, failure_reason AS error_type, "
                     "final, message_id FROM failures WHERE failure_reason = 'slot_reused'"
                     ).to_pylist()


def test_a_second_post_to_a_slot_being_processed_is_refused_and_the_first_is_read(
        deployed, tmp_path):
    first = make_pdf(tmp_path / "first.pdf", FIRST).read_bytes()
    second = make_pdf(tmp_path / "second.pdf", SECOND).read_bytes()
    slot = _post_slot(deployed, "nda.pdf")
    _post(slot, first)
    assert deployed.drain("ingest") == (1, 0)  # the slot claimed: the job is planned
    (job,) = _jobs(deployed)
    key = f"uploads/{job.document_id}/{job.job_id}"

    _post(slot, second)  # the same POST form again, before the job has been split
    assert deployed.drain("ingest") == (1, 0)  # refused: acknowledged, not retried
    assert _versions(deployed, key) == [first]  # the second upload's bytes are gone

    deployed.run_until_still()
    (job,) = _jobs(deployed)
    assert (job.status.value, job.failure_reason) == ("succeeded", None)
    page = _page(deployed, job)
    assert "FIRST UPLOAD" in page and "SECOND UPLOAD" not in page
    assert job.object_key.startswith(f"{key}?versionId=")  # pinned to the first upload
    (refusal,) = _refusals(deployed)
    assert (refusal["job_id"], refusal["stage"], refusal["final"]) == (job.job_id, "ingest",
                                                                         True)

    # The refused upload's event again (EventBridge and SQS deliver at least once): its version
    # is gone, the slot claimed by another: refused again, nothing else changes.
    deployed.client("sqs").send_message(
        QueueUrl=deployed.queue_url(deployed.mapping_of("ingest").source_arn),
        MessageBody=json.dumps({"detail-type": "Object Created", "source": "aws.s3", "detail": {
            "bucket": {"name": deployed.functions["ingest"].environment[
                "DOCLAKE_UPLOADS_BUCKET"]},
            "object": {"key": key, "size": len(second),
                       "version-id": refusal["message_id"]}}}))
    assert deployed.drain("ingest") == (1, 0)
    assert [j.job_id for j in _jobs(deployed)] == [job.job_id]
    assert _versions(deployed, key) == [first]
    assert {r["message_id"] for r in _refusals(deployed)} == {refusal["message_id"]}


def test_two_uploads_before_the_first_event_is_handled_leave_one_claimed_version(
        deployed, tmp_path):
    """Both POSTs land before the ingest function runs: the first event handled claims the slot
    with its version, the other is refused and deleted, and the pages read are the bytes left
    at the key (whichever upload that was), never a mix."""
    uploads = {make_pdf(tmp_path / f"{n}.pdf", text).read_bytes(): text[0].split(":")[0]
               for n, text in (("first", FIRST), ("second", SECOND))}
    slot = _post_slot(deployed, "twice.pdf")
    for data in uploads:
        _post(slot, data)
    assert deployed.drain("ingest", batches=2) == (2, 0)
    (job,) = _jobs(deployed)
    (kept,) = _versions(deployed, f"uploads/{job.document_id}/{job.job_id}")
    deployed.run_until_still()
    (job,) = _jobs(deployed)
    assert job.status.value == "succeeded"
    page = _page(deployed, job)
    assert [label for label in uploads.values() if label in page] == [uploads[kept]]
    assert len(_refusals(deployed)) == 1


def test_without_its_delete_grant_the_refused_upload_stays_but_is_never_read(iam_moto, tmp_path):
    """The refused version is deleted with the ingest function's role, by the stack's grant on
    ``uploads/*`` (without it: AccessDenied, the record goes back to its queue). What the job
    reads does not depend on it: the pinned version."""
    import copy

    template = copy.deepcopy(synth())
    for resource in template["Resources"].values():
        if resource["Type"] == "AWS::IAM::Policy":
            statements = resource["Properties"]["PolicyDocument"]["Statement"]
            statements[:] = [s for s in statements if not (
                "Uploads" in json.dumps(s["Resource"]) and "s3:DeleteObject" in json.dumps(
                    s["Action"]))]
    deployed = StackDeployment(template, iam_moto)
    slot = _post_slot(deployed, "nda.pdf")
    first = make_pdf(tmp_path / "first.pdf", FIRST).read_bytes()
    _post(slot, first)
    assert deployed.drain("ingest") == (1, 0)
    _post(slot, make_pdf(tmp_path / "second.pdf", SECOND).read_bytes())
    assert deployed.drain("ingest") == (1, 1)  # the delete denied: retried, then the DLQ
    deployed.run_until_still()
    (job,) = _jobs(deployed)
    assert len(_versions(deployed, f"uploads/{job.document_id}/{job.job_id}")) == 2
    assert job.status.value == "succeeded" and "FIRST UPLOAD" in _page(deployed, job)


class _ReadBeforeTheOtherClaim:
    """A job store whose first ``get_job`` answers from before another event's claim lands:
    the two events of one slot both read "no job" and both write."""

    def __init__(self, store, other_claim):
        self._store = store
        self._other_claim = other_claim

    def get_job(self, job_id):
        job = self._store.get_job(job_id)
        if self._other_claim is not None:
            claim, self._other_claim = self._other_claim, None
            claim()
        return job

    def __getattr__(self, name):
        return getattr(self._store, name)


class _Sent:
    def __init__(self):
        self.messages = []

    def send(self, queue: str, body: str, **kwargs) -> None:
        self.messages.append((queue, body))


def test_two_events_racing_for_one_slot_are_decided_by_the_conditional_job_write():
    """Both events read no job; the DynamoDB store's conditional write lets one create it, and
    the other is refused (``SlotTaken``, nothing written for it), not a crash and not a second
    plan of the slot."""
    from support.awsmoto import dynamo_job_store

    from ingest.uploads import SlotTaken, Upload, new_slot, plan_upload

    store, queue, events = dynamo_job_store(None), _Sent(), []
    slot = new_slot()

    def upload(version: str) -> Upload:
        return Upload(slot=slot, source_name="nda.pdf", source_key=f"s3://b/{slot.object_key}",
                      fingerprint=f"etag:{version}", bytes=10, object_version=version)

    racing = _ReadBeforeTheOtherClaim(store, lambda: plan_upload(store, queue, events.extend,
                                                                 upload("v1")))
    with pytest.raises(SlotTaken) as taken:
        plan_upload(racing, queue, events.extend, upload("v2"))
    assert taken.value.claimed_key == f"{slot.object_key}?versionId=v1"
    assert store.get_job(slot.job_id).object_key == f"{slot.object_key}?versionId=v1"
    assert [q for q, _ in queue.messages] == ["split"]
    assert plan_upload(store, queue, events.extend, upload("v1")) is False  # a redelivery


def test_a_pinned_key_reads_its_version_whatever_is_put_at_the_key_later(tmp_path):
    from support.awsmoto import bucket, client

    from infra.aws.s3 import S3ObjectStore
    from lake.layout import pinned_key

    s3 = client("s3")
    name = bucket()
    s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
    store = S3ObjectStore(s3, name)
    first = s3.put_object(Bucket=name, Key="uploads/d/j", Body=b"first",
                          Metadata={"source-name": "a.pdf"})["VersionId"]
    s3.put_object(Bucket=name, Key="uploads/d/j", Body=b"second bytes")
    key = pinned_key("uploads/d/j", first)
    assert store.get(key) == b"first"
    assert store.head(key) == {"source-name": "a.pdf"}
    with store.local_path(key) as path:
        assert path.read_bytes() == b"first"
    assert store.get("uploads/d/j") == b"second bytes"
    with pytest.raises(ValueError, match="read-only"):
        store.put(key, b"x")
