"""Documents, jobs and units on SQLite, every change a conditional update in a transaction.

The ``WHERE status IN (...)`` clause is the condition DynamoDB's ``ConditionExpression`` plays on
AWS: a redelivered message that finds the work already done changes nothing and learns so from
the row count.

The store is in parts: the schema, its migrations and row mapping (``infra.local.jobstore_sql``),
the side records, passwords, lease and field claims (``infra.local.jobstore_claims``), and here
the documents, jobs and units.
"""

from __future__ import annotations

import socket
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from extract.ports import NewVersion
from extract.state import Document, Job, JobProgress, JobStatus, Unit, UnitStatus
from infra.local.jobstore_claims import SqliteClaims
from infra.local.jobstore_sql import (
    document_from_row,
    in_chunks,
    job_from_row,
    migrate,
    now_iso,
    unit_from_row,
)
from infra.local.sqlite import open_database, transaction
from lake.replay import JobState, ReplayState, UnitState

__all__ = ["SqliteJobStore"]


class SqliteJobStore(SqliteClaims):
    """Documents, jobs and units; passwords, the lease and field claims are ``SqliteClaims``'."""

    def __init__(self, path: Path):
        self._db = open_database(path)
        # A job's password, deleted when the job ends, must not linger in freed pages.
        self._db.execute("PRAGMA secure_delete = ON")
        migrate(self._db)
        self._host = socket.gethostname()

    # --- reading -------------------------------------------------------------------------------

    def get_document(self, document_id: str) -> Document | None:
        row = self._db.execute("SELECT * FROM documents WHERE document_id = ?",
                               (document_id,)).fetchone()
        return document_from_row(row) if row else None

    def get_job(self, job_id: str) -> Job | None:
        row = self._db.execute("SELECT * FROM jobs WHERE job_id = ?", (job_id,)).fetchone()
        return job_from_row(row) if row else None

    def get_unit(self, job_id: str, unit_id: str) -> Unit | None:
        row = self._db.execute("SELECT * FROM units WHERE job_id = ? AND unit_id = ?",
                               (job_id, unit_id)).fetchone()
        return unit_from_row(row) if row else None

    def list_units(self, job_id: str) -> list[Unit]:
        rows = self._db.execute("SELECT * FROM units WHERE job_id = ? ORDER BY unit_id",
                                (job_id,)).fetchall()
        return [unit_from_row(r) for r in rows]

    def list_jobs(self, job_ids: Sequence[str] | None = None) -> list[Job]:
        if job_ids is None:
            rows = self._db.execute("SELECT * FROM jobs ORDER BY created_at").fetchall()
        else:
            rows = []
            for chunk, marks in in_chunks(job_ids):
                rows += self._db.execute(f"SELECT * FROM jobs WHERE job_id IN ({marks})",
                                         chunk).fetchall()
        return [job_from_row(r) for r in rows]

    def unfinished_job_ids(self) -> set[str]:
        """Jobs not ended yet (queued or extracting): what a rerun finds mid-way, read before
        its workers start so its summary can tell "resumed" from "unchanged"."""
        ended = [s.value for s in JobStatus if s.terminal]
        rows = self._db.execute("SELECT job_id FROM jobs WHERE status NOT IN (?, ?)",
                                ended).fetchall()
        return {row[0] for row in rows}

    def find_document_by_sha256(self, sha256: str) -> tuple[Document, Job] | None:
        row = self._db.execute(
            "SELECT job_id FROM jobs WHERE sha256 = ? ORDER BY created_at DESC LIMIT 1",
            (sha256,),
        ).fetchone()
        if row is None:
            return None
        job = self.get_job(row["job_id"])
        assert job is not None
        document = self.get_document(job.document_id)
        assert document is not None
        return document, job

    def find_document_by_source(self, source_key: str) -> Document | None:
        row = self._db.execute("SELECT * FROM documents WHERE source_key = ?",
                               (source_key,)).fetchone()
        return document_from_row(row) if row else None

    # --- ingest --------------------------------------------------------------------------------

    def create_job(self, version: NewVersion) -> None:
        created = version.created_at.isoformat()
        with transaction(self._db) as db:
            db.execute(
                "INSERT INTO documents (document_id, source_name, source_key, sha256, bytes, "
                "version, latest_job_id, status, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, 'extracting', ?) "
                "ON CONFLICT (document_id) DO UPDATE SET source_name = excluded.source_name, "
                "sha256 = excluded.sha256, bytes = excluded.bytes, version = excluded.version, "
                "latest_job_id = excluded.latest_job_id, status = 'extracting'",
                (version.document_id, version.source_name, version.source_key, version.sha256,
                 version.bytes, version.version, version.job_id, created),
            )
            db.execute(
                "INSERT INTO jobs (job_id, document_id, status, object_key, source_name, sha256, "
                "created_at, updated_at, last_progress_at, source_path, run_choices) "
                "VALUES (?, ?, 'queued', ?, ?, ?, ?, ?, ?, ?, ?)",
                (version.job_id, version.document_id, version.object_key, version.source_name,
                 version.sha256, created, created, created, version.source_path,
                 version.run_choices),
            )

    # --- split and read ------------------------------------------------------------------------

    def add_units(self, job_id: str, units: Sequence[Unit], *, pages: int,
                  detected_format: str, done: Sequence[str] = (), attempt: int = 1) -> bool:
        now = now_iso()
        finished = set(done)
        with transaction(self._db) as db:
            cursor = db.execute(
                "UPDATE jobs SET pages = ?, units = ?, detected_format = ?, updated_at = ?, "
                "last_progress_at = ?, stalled_s = 0 "
                "WHERE job_id = ? AND units IS NULL AND status = 'queued'",
                (pages, len(units), detected_format, now, now, job_id),
            )
            if cursor.rowcount == 0:
                return False
            db.executemany(
                "INSERT INTO units (job_id, unit_id, kind, first_page, last_page, sheet_name, "
                "status, attempts, updated_at, sent_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(job_id, u.unit_id, u.kind, u.first_page, u.last_page, u.sheet_name,
                  *(("done", attempt, now, now) if u.unit_id in finished
                    else ("pending", 0, now, None)))
                 for u in units],
            )
        return True

    def set_job_error(self, job_id: str, error: str) -> bool:
        cursor = self._db.execute(
            "UPDATE jobs SET error = ?, updated_at = ? "
            "WHERE job_id = ? AND error IS NULL AND status IN ('queued', 'extracting')",
            (error, now_iso(), job_id),
        )
        return cursor.rowcount == 1

    def _unit_update(self, job_id: str, unit_id: str, assignments: str, params: tuple,
                     allowed: tuple[UnitStatus, ...]) -> bool:
        now = now_iso()
        marks = ",".join("?" * len(allowed))
        with transaction(self._db) as db:
            cursor = db.execute(
                f"UPDATE units SET {assignments}, updated_at = ? "
                f"WHERE job_id = ? AND unit_id = ? AND status IN ({marks})",
                (*params, now, job_id, unit_id, *allowed),
            )
            if cursor.rowcount == 0:
                return False
            db.execute("UPDATE jobs SET last_progress_at = ?, updated_at = ?, stalled_s = 0 "
                       "WHERE job_id = ?", (now, now, job_id))
        return True

    _OPEN = (UnitStatus.PENDING, UnitStatus.RUNNING)

    def start_unit(self, job_id: str, unit_id: str, attempt: int) -> bool:
        return self._unit_update(job_id, unit_id, "status = 'running', attempts = ?",
                                 (attempt,), self._OPEN)

    def finish_unit(self, job_id: str, unit_id: str) -> bool:
        return self._unit_update(job_id, unit_id, "status = 'done', owner = NULL, "
                                 "lease_until = NULL", (), self._OPEN)

    def fail_unit(self, job_id: str, unit_id: str, error_type: str, message: str) -> bool:
        return self._unit_update(job_id, unit_id, "status = 'failed', error_type = ?, error = ?, "
                                 "owner = NULL, lease_until = NULL",
                                 (error_type, message), self._OPEN)

    # --- poller and indexer --------------------------------------------------------------------

    def active_jobs(self) -> list[JobProgress]:
        return self._active("", ())[0]

    def active_jobs_changed(self, after: int | None, *,
                            unplanned_quiet_below_s: float | None = None
                            ) -> tuple[list[JobProgress], int]:
        """The active jobs changed since position ``after`` (every active job when None), and
        the position to ask from next time. The position is read first: a change committed in
        between has a later number, so the next pass reads it (perhaps twice, never not).
        ``unplanned_quiet_below_s``: leave out queued jobs with no units, no error and a stall
        clock at most this (``ChangeFeed``)."""
        where, args = "", ()
        if after is not None:
            where, args = " AND j.change_seq > ?", (after,)
        if unplanned_quiet_below_s is not None:
            where += (" AND NOT (j.status = 'queued' AND j.units IS NULL AND j.error IS NULL"
                      " AND j.stalled_s <= ?)")
            args = (*args, unplanned_quiet_below_s)
        return self._active(where, args)

    def change_position(self) -> int:
        """The number of the store's latest change to a job's progress or settlement: equal
        numbers, nothing a poller or a stop test looks at has changed in between."""
        return self._db.execute("SELECT coalesce(max(change_seq), 0) FROM jobs").fetchone()[0]

    def _active(self, where: str, args: tuple) -> tuple[list[JobProgress], int]:
        position = self.change_position()
        rows = self._db.execute(
            "SELECT j.*, "
            " (SELECT count(*) FROM units u WHERE u.job_id = j.job_id) AS planned,"
            " (SELECT count(*) FROM units u WHERE u.job_id = j.job_id AND u.status = 'done')"
            "   AS done,"
            " (SELECT count(*) FROM units u WHERE u.job_id = j.job_id AND u.status = 'failed')"
            "   AS failed,"
            " (SELECT count(*) FROM units u WHERE u.job_id = j.job_id AND u.status = 'running')"
            "   AS running,"
            " (SELECT u.error_type FROM units u WHERE u.job_id = j.job_id"
            "   AND u.status = 'failed' ORDER BY u.unit_id LIMIT 1) AS first_failure "
            "FROM jobs j WHERE j.status IN ('queued', 'extracting')" + where, args
        ).fetchall()
        progress = []
        for row in rows:
            data = dict(row)
            counts = {k: data.pop(k)
                      for k in ("planned", "done", "failed", "running", "first_failure")}
            job = job_from_row(data)  # type: ignore[arg-type]
            progress.append(JobProgress.model_construct(
                job=job, units_planned=counts["planned"], units_done=counts["done"],
                units_failed=counts["failed"], units_running=counts["running"],
                first_failure=counts["first_failure"]))
        return progress, position

    def schedule_retry(self, job_id: str, at: datetime) -> bool:
        cursor = self._db.execute(
            "UPDATE jobs SET retry_at = ? WHERE job_id = ? AND status IN ('queued', 'extracting') "
            "AND (retry_at IS NULL OR retry_at < ?)", (at.isoformat(), job_id, at.isoformat()))
        return cursor.rowcount == 1

    def add_stall(self, stalls: Sequence[tuple[str, float, datetime]]) -> int:
        stamp = now_iso()
        with transaction(self._db) as db:
            cursor = db.executemany(
                "UPDATE jobs SET stalled_s = stalled_s + ?, updated_at = ? "
                "WHERE job_id = ? AND last_progress_at = ? AND status IN ('queued', 'extracting')",
                [(seconds, stamp, job_id, since.isoformat()) for job_id, seconds, since in stalls],
            )
        return cursor.rowcount

    def transition_job(self, job_id: str, expected: JobStatus, new: JobStatus, *,
                       failure_reason: str | None = None, failure_detail: str | None = None,
                       at: datetime, unmoved_since: datetime | None = None) -> bool:
        stamp = at.isoformat()
        finished = stamp if new.terminal else None
        erased = 0
        unmoved, unmoved_args = "", ()
        if unmoved_since is not None:
            unmoved = " AND last_progress_at = ? AND (retry_at IS NULL OR retry_at <= ?)"
            unmoved_args = (unmoved_since.isoformat(), stamp)
        with transaction(self._db) as db:
            cursor = db.execute(
                "UPDATE jobs SET status = ?, failure_reason = ?, failure_detail = ?, "
                "finished_at = ?, updated_at = ? WHERE job_id = ? AND status = ?" + unmoved,
                (new.value, failure_reason, failure_detail, finished, stamp, job_id,
                 expected.value, *unmoved_args),
            )
            if cursor.rowcount == 0:
                return False
            if new.terminal:
                db.execute(
                    "UPDATE documents SET status = ? WHERE latest_job_id = ?",
                    (new.value, job_id),
                )
                erased = db.execute("DELETE FROM job_passwords WHERE job_id = ?",
                                    (job_id,)).rowcount
        if new.terminal and erased:
            # The WAL still holds the page the password was written on: fold it into the
            # database (where secure_delete zeroed it) and truncate the log. Best effort: a
            # long reader makes it partial, and the next erasure tries again.
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return True

    def jobs_to_index(self) -> list[Job]:
        rows = self._db.execute(
            "SELECT * FROM jobs WHERE status = 'succeeded' AND indexed_at IS NULL "
            "AND index_error IS NULL "
            "ORDER BY finished_at"
        ).fetchall()
        return [job_from_row(r) for r in rows]

    def mark_indexed(self, job_id: str, at: datetime) -> bool:
        cursor = self._db.execute(
            "UPDATE jobs SET indexed_at = ? WHERE job_id = ? AND indexed_at IS NULL",
            (at.isoformat(), job_id),
        )
        return cursor.rowcount == 1

    def mark_indexed_many(self, job_ids: Sequence[str], at: datetime) -> None:
        with transaction(self._db) as db:
            db.executemany("UPDATE jobs SET indexed_at = ? WHERE job_id = ? AND indexed_at IS NULL",
                           [(at.isoformat(), job_id) for job_id in job_ids])

    def mark_index_failed(self, job_id: str, error: str) -> bool:
        cursor = self._db.execute(
            "UPDATE jobs SET index_error = ? WHERE job_id = ? AND indexed_at IS NULL",
            (error, job_id),
        )
        return cursor.rowcount == 1

    def mark_status_events(self, jobs: Sequence[tuple[str, JobStatus]]) -> None:
        with transaction(self._db) as db:
            db.executemany("UPDATE jobs SET status_event = ? WHERE job_id = ? AND status = ?",
                           [(status.value, job_id, status.value) for job_id, status in jobs])

    def jobs_missing_status_event(self) -> list[Job]:
        rows = self._db.execute(
            "SELECT * FROM jobs WHERE status != 'queued' AND status_event IS NOT status "
            "ORDER BY updated_at"
        ).fetchall()
        return [job_from_row(r) for r in rows]

    def mark_index_sent(self, job_ids: Sequence[str]) -> None:
        now = now_iso()
        with transaction(self._db) as db:
            db.executemany("UPDATE jobs SET index_sent_at = ? WHERE job_id = ?",
                           [(now, job_id) for job_id in job_ids])

    def unsent_index_jobs(self) -> list[Job]:
        rows = self._db.execute(
            "SELECT * FROM jobs INDEXED BY jobs_index_unsent"
            " WHERE status = 'succeeded' AND indexed_at IS NULL "
            "AND index_error IS NULL AND index_sent_at IS NULL ORDER BY finished_at"
        ).fetchall()
        return [job_from_row(r) for r in rows]

    def mark_units_sent(self, job_id: str, unit_ids: Sequence[str]) -> None:
        now = now_iso()
        with transaction(self._db) as db:
            db.executemany("UPDATE units SET sent_at = ? WHERE job_id = ? AND unit_id = ?",
                           [(now, job_id, unit_id) for unit_id in unit_ids])

    def unsent_units(self, job_id: str) -> list[Unit]:
        rows = self._db.execute(
            "SELECT * FROM units WHERE job_id = ? AND status = 'pending' AND sent_at IS NULL "
            "ORDER BY unit_id", (job_id,)).fetchall()
        return [unit_from_row(r) for r in rows]

    def mark_split_sent(self, job_ids: Sequence[str]) -> None:
        now = now_iso()
        with transaction(self._db) as db:
            db.executemany("UPDATE jobs SET split_sent_at = ? WHERE job_id = ?",
                           [(now, job_id) for job_id in job_ids])

    def unsent_jobs(self) -> list[Job]:
        rows = self._db.execute(
            "SELECT * FROM jobs WHERE status = 'queued' AND split_sent_at IS NULL"
        ).fetchall()
        return [job_from_row(r) for r in rows]

    def settled_count(self, job_ids: Sequence[str]) -> int:
        """How many of these jobs are settled (``Job.settled``), counted in SQL: a run's stop
        test asks after every poll, and building every job to ask costs more than the poll."""
        settled = 0
        for chunk, marks in in_chunks(list(dict.fromkeys(job_ids))):
            settled += self._db.execute(
                f"SELECT count(*) FROM jobs WHERE job_id IN ({marks})"
                " AND (fields_strategy IS NULL OR fields_published_at IS NOT NULL)"
                " AND (status = 'failed' OR (status = 'succeeded'"
                "      AND (indexed_at IS NOT NULL OR index_error IS NOT NULL)))",
                chunk).fetchone()[0]
        return settled

    def settled_changed(self, after: int) -> tuple[list[str], int]:
        """Ids of the settled jobs (as ``settled_count`` counts) changed after position
        ``after``, and the position to ask from next time (read first, as in
        ``active_jobs_changed``): a run's stop test follows its jobs settling without counting
        them all after every poll."""
        position = self.change_position()
        rows = self._db.execute(
            "SELECT job_id FROM jobs INDEXED BY jobs_change_seq WHERE change_seq > ?"
            " AND (fields_strategy IS NULL OR fields_published_at IS NOT NULL)"
            " AND (status = 'failed' OR (status = 'succeeded'"
            "      AND (indexed_at IS NOT NULL OR index_error IS NOT NULL)))", (after,)).fetchall()
        return [r[0] for r in rows], position

    def page_progress(self, job_ids: Sequence[str]) -> tuple[int, int]:
        """(pages planned, pages in finished units) over some jobs: for a progress bar."""
        total = done = 0
        for chunk, marks in in_chunks(job_ids):
            row = self._db.execute(
                f"SELECT coalesce(sum(last_page - first_page + 1), 0),"
                f" coalesce(sum(CASE WHEN status = 'done' THEN last_page - first_page + 1 END), 0)"
                f" FROM units WHERE job_id IN ({marks})", chunk).fetchone()
            total += row[0]
            done += row[1]
        return total, done

    def snapshot(self) -> ReplayState:
        """Every job and unit in the shape ``lake.replay`` rebuilds from the events."""
        jobs = {
            r["job_id"]: JobState(r["job_id"], r["document_id"], r["status"], r["pages"],
                                  r["units"], r["failure_reason"])
            for r in self._db.execute("SELECT * FROM jobs")
        }
        units = {
            (r["job_id"], r["unit_id"]): UnitState(r["job_id"], r["unit_id"], r["status"],
                                                   r["first_page"], r["last_page"])
            for r in self._db.execute("SELECT * FROM units")
        }
        return ReplayState(jobs=jobs, units=units)

    def close(self) -> None:
        self._db.close()
