"""The job store's contract: every change is conditional and says whether it happened."""

from __future__ import annotations

import subprocess
import sys
import time

from extract.handlers.split import plan_pdf_units
from extract.ports import NewVersion
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


def test_the_poller_lease_has_one_holder_and_passes_on_when_its_holder_dies(tmp_path):
    store = new_store(tmp_path)
    assert store.acquire_lease("poller", "a", ttl_s=60) is True
    assert store.acquire_lease("poller", "b", ttl_s=60) is False  # a is alive and in time
    assert store.acquire_lease("poller", "a", ttl_s=60) is True  # renewal
    store.release_lease("poller", "a")
    assert store.acquire_lease("poller", "b", ttl_s=0.01) is True
    time.sleep(0.05)
    assert store.acquire_lease("poller", "a", ttl_s=60) is True  # b's lease expired

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    store._db.execute("UPDATE leases SET holder = 'dead', holder_pid = ?",
                      (int(dead.stdout),))
    assert store.acquire_lease("poller", "b", ttl_s=60) is True  # no wait after kill -9


def test_stall_is_added_only_while_the_job_has_not_moved(tmp_path):
    store = new_store(tmp_path)
    job = store.get_job("j")
    assert store.add_stall([("j", 2.0, job.last_progress_at)]) == 1
    assert store.get_job("j").stalled_s == 2.0
    store.add_units("j", units(7), pages=7, detected_format="pdf")  # progress
    assert store.get_job("j").stalled_s == 0.0
    assert store.add_stall([("j", 2.0, job.last_progress_at)]) == 0  # read before it moved
    assert store.get_job("j").stalled_s == 0.0


def test_an_older_home_gains_the_new_columns_on_open(tmp_path):
    import sqlite3

    path = tmp_path / "jobs.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE jobs (job_id TEXT PRIMARY KEY, document_id TEXT, status TEXT, "
                   "object_key TEXT, source_name TEXT, sha256 TEXT, created_at TEXT, "
                   "updated_at TEXT, last_progress_at TEXT, finished_at TEXT, pages INTEGER, "
                   "units INTEGER, detected_format TEXT, error TEXT, failure_reason TEXT, "
                   "indexed_at TEXT, index_error TEXT, split_sent_at TEXT)")
    store = SqliteJobStore(path)
    columns = {r["name"] for r in store._db.execute("PRAGMA table_info(jobs)")}
    assert {"stalled_s", "index_sent_at", "status_event", "failure_detail"} <= columns


def test_a_job_ending_reads_only_its_own_document(tmp_path):
    """The document's status follows its latest job's end through an index, not a read of every
    document the home holds (the cost of each job's end would grow with the home); a home made
    before the index gains it when it is opened."""
    import sqlite3

    store = new_store(tmp_path)
    plan = store._db.execute("EXPLAIN QUERY PLAN UPDATE documents SET status = ? "
                             "WHERE latest_job_id = ?", ("succeeded", "j")).fetchall()
    assert any("USING INDEX documents_latest_job" in row["detail"] for row in plan), plan
    store._db.close()
    with sqlite3.connect(tmp_path / "jobs.db") as db:
        db.execute("DROP INDEX documents_latest_job")
    reopened = SqliteJobStore(tmp_path / "jobs.db")
    names = {r["name"] for r in reopened._db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'documents'")}
    assert "documents_latest_job" in names
    assert reopened.transition_job("j", JobStatus.QUEUED, JobStatus.FAILED,
                                   failure_reason="corrupt", at=utc_now())
    assert reopened._db.execute("SELECT status FROM documents WHERE document_id = 'd'"
                                ).fetchone()[0] == "failed"


def test_the_outbox_look_ups_and_the_stop_test_read_only_their_own_index(tmp_path):
    """The poller's look-ups of index and fields messages not yet sent, and a run's stop test,
    read their partial or change-number index, never every job of a status: SQLite's planner,
    left to itself, read all succeeded jobs through ``jobs_status`` on every pass."""
    store = new_store(tmp_path)
    statements: list[str] = []
    store._db.set_trace_callback(statements.append)
    store.unsent_index_jobs()
    store.unsent_fields_jobs()
    store.settled_changed(0)
    store._db.set_trace_callback(None)
    expected = {"unsent_index": "jobs_index_unsent", "fields_unsent": "jobs_fields_unsent",
                "change_seq": "jobs_change_seq"}
    selects = [s for s in statements if s.lstrip().upper().startswith("SELECT")
               and "FROM jobs" in s and "max(change_seq)" not in s]
    assert len(selects) == 3, selects
    for statement in selects:
        plan = " ".join(row["detail"] for row in
                        store._db.execute(f"EXPLAIN QUERY PLAN {statement}"))
        assert "jobs_status " not in plan + " ", plan
        assert any(index in plan for index in expected.values()), plan


def test_a_field_claim_of_a_dead_process_on_this_host_is_taken_over_at_once(tmp_path):
    """After kill -9 the next fields delivery takes the dead worker's claim instead of raising
    claim_held until the message dead-letters; a live holder, or another host's, keeps it."""
    import os
    import socket

    store = new_store(tmp_path)
    host = socket.gethostname()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    claim = {"document_id": "d", "at": utc_now()}
    assert store.claim_fields("j", "rules", claimant=f"{host}:{int(dead.stdout)}/attempt-1",
                              **claim)
    assert store.claim_fields("j", "rules", claimant=f"{host}:{os.getpid()}/attempt-2", **claim)
    assert store.get_field_claim("j", "rules").claimant == f"{host}:{os.getpid()}/attempt-2"

    store.release_fields("j", "rules", f"{host}:{os.getpid()}/attempt-2")
    assert store.claim_fields("j", "rules", claimant=f"{host}:{os.getppid()}/attempt-1", **claim)
    assert not store.claim_fields("j", "rules", claimant=f"{host}:{os.getpid()}/attempt-2",
                                  **claim)  # the holder (our parent) is alive
    store.release_fields("j", "rules", f"{host}:{os.getppid()}/attempt-1")
    assert store.claim_fields("j", "rules", claimant=f"elsewhere:{int(dead.stdout)}/attempt-1",
                              **claim)
    assert not store.claim_fields("j", "rules", claimant=f"{host}:{os.getpid()}/attempt-2",
                                  **claim)  # another host's process: only its lease frees it
