"""Identical bytes that failed: taken again only when asked or when the reason may not recur."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from support.helpers import Harness

from extract.state import JobStatus
from ingest.planner import IngestOutcome


def _fail(harness: Harness, job_id: str, reason: str) -> None:
    store = harness.store
    assert store.transition_job(job_id, JobStatus.QUEUED, JobStatus.FAILED, failure_reason=reason,
                                at=datetime.now(UTC))


def test_failed_for_good_is_left_alone_unless_asked(tmp_path, pdf_factory):
    harness = Harness(tmp_path)
    path = pdf_factory("a.pdf", 1)
    first = harness.planner.ingest(path)
    _fail(harness, first.job_id, "corrupt")
    again = harness.planner.ingest(path)
    assert again.outcome is IngestOutcome.UNCHANGED and again.job_id == first.job_id

    objects_before = harness.objects.list("uploads/")
    retried = harness.planner.ingest_many([path], retry_failed=True)[0]
    assert retried.outcome is not IngestOutcome.UNCHANGED and retried.job_id != first.job_id
    assert retried.document_id == first.document_id
    # The retry reads the copy already stored: no second copy of the same bytes.
    assert harness.objects.list("uploads/") == objects_before
    assert (harness.store.get_job(retried.job_id).object_key
            == harness.store.get_job(first.job_id).object_key)


@pytest.mark.parametrize("reason", ["timeout", "dead_letter", "no_progress"])
def test_a_reason_that_may_not_recur_is_retried_by_itself(tmp_path, pdf_factory, reason):
    harness = Harness(tmp_path)
    path = pdf_factory("a.pdf", 1)
    first = harness.planner.ingest(path)
    _fail(harness, first.job_id, reason)
    again = harness.planner.ingest(path)
    assert again.outcome is not IngestOutcome.UNCHANGED and again.job_id != first.job_id
