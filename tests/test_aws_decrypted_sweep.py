"""The AWS twin of the local recovery's stale-copy sweep: decrypted copies (plaintext of a
password-protected upload) whose job has ended, or is gone, are removed from S3; a running job's
copy stays. Against moto's S3 and DynamoDB, the adapters the poller uses."""

from __future__ import annotations

import pytest

pytest.importorskip("boto3", reason="boto3 is not installed (pip install -e '.[aws]')")

from support import awsmoto  # noqa: E402

from extract.poller import remove_stale_decrypted  # noqa: E402
from extract.ports import NewVersion  # noqa: E402
from extract.state import JobStatus  # noqa: E402
from lake.events import utc_now  # noqa: E402


def _job(store, job_id: str) -> None:
    store.create_job(NewVersion(document_id="d", job_id=job_id, source_name="a.docx",
                                source_key="/a.docx", sha256=job_id, bytes=10, version=1,
                                object_key=f"uploads/d/{job_id}", created_at=utc_now()))


def test_the_sweep_removes_copies_of_ended_and_unknown_jobs_and_keeps_running_ones(tmp_path):
    objects = awsmoto.s3_object_store(tmp_path)
    store = awsmoto.dynamo_job_store(tmp_path)
    _job(store, "running")
    _job(store, "ended")
    assert store.transition_job("ended", JobStatus.QUEUED, JobStatus.FAILED,
                                failure_reason="crashes_parser", at=utc_now())
    for job in ("running", "ended", "gone"):
        objects.put(f"decrypted/d/{job}", b"plaintext")
    objects.put("pages/d/running/1.txt", b"page")  # not a decrypted copy: never touched

    assert remove_stale_decrypted(objects, store) == 2
    assert sorted(objects.list("decrypted/")) == ["decrypted/d/running"]
    assert objects.list("pages/") == ["pages/d/running/1.txt"]
    assert remove_stale_decrypted(objects, store) == 0  # nothing left to remove
