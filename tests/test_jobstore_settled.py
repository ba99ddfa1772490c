"""``SqliteJobStore.settled_count``: the run's stop test in SQL must agree with ``Job.settled``."""

from __future__ import annotations

from extract.handlers.split import plan_pdf_units
from extract.ports import NewVersion
from extract.state import ClaimStatus, JobStatus
from infra.local.jobstore import SqliteJobStore
from lake.events import utc_now


def _job(store: SqliteJobStore, job_id: str, status: JobStatus | None = None) -> None:
    store.create_job(NewVersion(document_id=f"d-{job_id}", job_id=job_id, source_name="a.pdf",
                                source_key="/a.pdf", sha256=job_id, bytes=10, version=1,
                                object_key=f"uploads/{job_id}", created_at=utc_now()))
    if status is None:
        return
    store.add_units(job_id, [u.model_copy(update={"job_id": job_id})
                             for u in plan_pdf_units(3, 5)], pages=3, detected_format="pdf")
    store.transition_job(job_id, JobStatus.QUEUED, status, at=utc_now())


def test_settled_count_agrees_with_job_settled_in_every_state(tmp_path):
    store = SqliteJobStore(tmp_path / "jobs.db")
    _job(store, "queued")
    _job(store, "failed", JobStatus.FAILED)
    _job(store, "succeeded-unindexed", JobStatus.SUCCEEDED)
    _job(store, "indexed", JobStatus.SUCCEEDED)
    store.mark_indexed("indexed", utc_now())
    _job(store, "index-failed", JobStatus.SUCCEEDED)
    store.mark_index_failed("index-failed", "too big")
    _job(store, "fields-waiting", JobStatus.SUCCEEDED)
    store.mark_indexed("fields-waiting", utc_now())
    _job(store, "fields-published", JobStatus.SUCCEEDED)
    store.mark_indexed("fields-published", utc_now())
    store.request_fields(["fields-waiting", "fields-published", "failed"], "nda", "rules")
    store.claim_fields("fields-published", "rules", document_id="d-fields-published",
                       claimant="w", at=utc_now())
    store.settle_fields("fields-published", "rules", document_id="d-fields-published",
                        status=ClaimStatus.DONE, result="{}", claimant="w", at=utc_now())
    store.mark_result_published("fields-published", "rules", utc_now())

    ids = ["queued", "failed", "succeeded-unindexed", "indexed", "index-failed",
           "fields-waiting", "fields-published"]
    expected = {job.job_id for job in store.list_jobs(ids) if job.settled}
    # A failed job asked for fields still waits for its (failed) result to be published.
    assert expected == {"indexed", "index-failed", "fields-published"}
    assert store.settled_count(ids) == 3
    assert store.settled_count([*ids, "indexed", "unknown"]) == 3  # repeats and strangers
    assert store.settled_count([]) == 0
    # More ids than one SQL IN (...) takes: counted over every chunk.
    many = [f"unknown-{n}" for n in range(1_200)] + ids
    assert store.settled_count(many) == 3
    assert {j.job_id for j in store.list_jobs(many)} == set(ids)


def test_settled_changed_reports_each_job_as_it_settles_and_agrees_with_job_settled(tmp_path):
    """The stop test that follows the store's change numbers sees the same settled jobs as
    ``Job.settled``, each once it settles, and nothing when nothing moved."""
    store = SqliteJobStore(tmp_path / "jobs.db")
    _job(store, "a", JobStatus.SUCCEEDED)
    _job(store, "b", JobStatus.FAILED)
    _job(store, "c")
    settled, position = store.settled_changed(0)
    assert settled == ["b"] == [j.job_id for j in store.list_jobs() if j.settled]
    assert store.settled_changed(position) == ([], position)  # nothing moved since
    store.mark_indexed("a", utc_now())
    settled, position = store.settled_changed(position)
    assert settled == ["a"]
    store.request_fields(["c"], "nda", "rules")  # a job asked for fields is not settled by that
    assert store.settled_changed(position)[0] == []
