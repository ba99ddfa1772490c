"""The job store's contract: every change is conditional and says whether it happened."""

from __future__ import annotations

from extract.ports import NewVersion
from extract.split import plan_pdf_units
from extract.state import JobStatus, UnitStatus
from infra.local.jobstore import SqliteJobStore
from lake.events import utc_now


def new_store(tmp_path) -> SqliteJobStore:
    store = SqliteJobStore(tmp_path / "jobs.db")
    store.create_job(NewVersion(document_id="d", job_id="j", source_name="a.pdf",
                                source_key="/a.pdf", sha256="s", bytes=10, version=1,
                                object_key="uploads/d/j", created_at=utc_now()))
    return store


def units(count_pages: int):
    return [u.model_copy(update={"job_id": "j"}) for u in plan_pdf_units(count_pages, 5)]


def test_units_are_planned_once(tmp_path):
    store = new_store(tmp_path)
    assert store.add_units("j", units(7), pages=7, detected_format="pdf") is True
    assert store.add_units("j", units(12), pages=12, detected_format="pdf") is False
    job = store.get_job("j")
    assert (job.pages, job.units) == (7, 2)
    assert [u.unit_id for u in store.list_units("j")] == ["u00001", "u00002"]


def test_unit_transitions_are_conditional(tmp_path):
    store = new_store(tmp_path)
    store.add_units("j", units(7), pages=7, detected_format="pdf")
    assert store.start_unit("j", "u00001", 1) and store.start_unit("j", "u00001", 2)
    assert store.get_unit("j", "u00001").attempts == 2
    assert store.finish_unit("j", "u00001") is True
    assert store.finish_unit("j", "u00001") is False
    assert store.start_unit("j", "u00001", 3) is False
    assert store.fail_unit("j", "u00001", "corrupt", "x") is False
    assert store.get_unit("j", "u00001").status is UnitStatus.DONE
    assert store.fail_unit("j", "u00002", "corrupt", "bad page") is True
    assert store.finish_unit("j", "u00002") is False
    assert store.start_unit("j", "nope", 1) is False


def test_job_transitions_happen_only_from_the_expected_status(tmp_path):
    store = new_store(tmp_path)
    at = utc_now()
    assert store.transition_job("j", JobStatus.EXTRACTING, JobStatus.SUCCEEDED, at=at) is False
    assert store.transition_job("j", JobStatus.QUEUED, JobStatus.EXTRACTING, at=at) is True
    assert store.get_job("j").finished_at is None
    assert store.transition_job("j", JobStatus.EXTRACTING, JobStatus.FAILED,
                                failure_reason="corrupt", at=at) is True
    assert store.transition_job("j", JobStatus.EXTRACTING, JobStatus.SUCCEEDED, at=at) is False
    job = store.get_job("j")
    assert (job.status, job.failure_reason, job.finished_at) == (JobStatus.FAILED, "corrupt", at)
    assert store.active_jobs() == []
    status = store._db.execute("SELECT status FROM documents").fetchone()[0]
    assert status == "failed"


def test_active_jobs_count_units_and_name_the_first_failure(tmp_path):
    store = new_store(tmp_path)
    store.add_units("j", units(12), pages=12, detected_format="pdf")
    store.finish_unit("j", "u00001")
    store.fail_unit("j", "u00003", "encrypted", "x")
    store.fail_unit("j", "u00002", "corrupt", "y")
    (progress,) = store.active_jobs()
    assert (progress.units_planned, progress.units_done, progress.units_failed) == (3, 1, 2)
    assert progress.first_failure == "corrupt"


def test_a_job_error_is_noted_once_and_only_while_active(tmp_path):
    store = new_store(tmp_path)
    assert store.set_job_error("j", "empty_file") is True
    assert store.set_job_error("j", "corrupt") is False
    assert store.get_job("j").error == "empty_file"
