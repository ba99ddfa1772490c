"""Documents, jobs and units on SQLite, every change a conditional update in a transaction.

The ``WHERE status IN (...)`` clause is the condition DynamoDB's ``ConditionExpression`` plays on
AWS: a redelivered message that finds the work already done changes nothing and learns so from
the row count.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

from extract.ports import NewVersion
from extract.state import (
    ClaimStatus,
    Document,
    FieldClaim,
    Job,
    JobProgress,
    JobStatus,
    Unit,
    UnitStatus,
)
from infra.local.processes import process_alive
from infra.local.sqlite import open_database, transaction
from lake.replay import JobState, ReplayState, UnitState

_SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
  document_id TEXT PRIMARY KEY,
  source_name TEXT NOT NULL,
  source_key TEXT NOT NULL,
  sha256 TEXT NOT NULL,
  bytes INTEGER NOT NULL,
  version INTEGER NOT NULL,
  latest_job_id TEXT NOT NULL,
  status TEXT NOT NULL,
  created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS documents_source ON documents (source_key);
CREATE INDEX IF NOT EXISTS documents_sha ON documents (sha256);
CREATE TABLE IF NOT EXISTS jobs (
  job_id TEXT PRIMARY KEY,
  document_id TEXT NOT NULL REFERENCES documents (document_id),
  status TEXT NOT NULL,
  object_key TEXT NOT NULL,
  source_name TEXT NOT NULL,
  sha256 TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  last_progress_at TEXT NOT NULL,
  finished_at TEXT,
  pages INTEGER,
  units INTEGER,
  detected_format TEXT,
  error TEXT,
  failure_reason TEXT,
  indexed_at TEXT,
  index_error TEXT,
  split_sent_at TEXT,
  index_sent_at TEXT,
  stalled_s REAL NOT NULL DEFAULT 0,
  failure_detail TEXT,
  status_event TEXT
);
CREATE INDEX IF NOT EXISTS jobs_status ON jobs (status);
CREATE INDEX IF NOT EXISTS jobs_sha ON jobs (sha256);
CREATE TABLE IF NOT EXISTS units (
  job_id TEXT NOT NULL REFERENCES jobs (job_id),
  unit_id TEXT NOT NULL,
  kind TEXT NOT NULL,
  first_page INTEGER,
  last_page INTEGER,
  sheet_name TEXT,
  status TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  error_type TEXT,
  error TEXT,
  updated_at TEXT NOT NULL,
  sent_at TEXT,
  PRIMARY KEY (job_id, unit_id)
);
CREATE TABLE IF NOT EXISTS field_claims (
  job_id TEXT NOT NULL,
  strategy TEXT NOT NULL,
  document_id TEXT NOT NULL,
  status TEXT NOT NULL,
  claimant TEXT,
  claimed_at TEXT,
  finished_at TEXT,
  result TEXT,
  published_at TEXT,
  PRIMARY KEY (job_id, strategy)
);
CREATE INDEX IF NOT EXISTS field_claims_unpublished ON field_claims (published_at, finished_at);
CREATE TABLE IF NOT EXISTS job_passwords (
  job_id TEXT PRIMARY KEY,
  password TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS leases (
  name TEXT PRIMARY KEY,
  holder TEXT NOT NULL,
  holder_host TEXT NOT NULL,
  holder_pid INTEGER NOT NULL,
  expires_at REAL NOT NULL
);
"""

# Columns added after the first release: a home created by an older build gains them on open.
_ADDED_COLUMNS = {
    "jobs": {"index_sent_at": "TEXT", "stalled_s": "REAL NOT NULL DEFAULT 0",
             "failure_detail": "TEXT", "status_event": "TEXT", "fields_schema": "TEXT",
             "fields_strategy": "TEXT", "fields_sent_at": "TEXT", "fields_published_at": "TEXT",
             "source_path": "TEXT"},
    "units": {"sent_at": "TEXT"},
}
# Store-internal bookkeeping that the Job record does not carry.
_INTERNAL_JOB_COLUMNS = ("sha256", "split_sent_at", "index_sent_at", "status_event",
                         "fields_sent_at")



SQL_IN_CHUNK = 500
"""Ids bound in one ``IN (...)``: under SQLite's limit on host parameters (999 in old builds)."""


def _in_chunks(ids: Sequence[str]) -> Iterator[tuple[list[str], str]]:
    """``ids`` in chunks of ``SQL_IN_CHUNK``, each with its ``?,?,...`` placeholders."""
    ids = list(ids)
    for start in range(0, len(ids), SQL_IN_CHUNK):
        chunk = ids[start:start + SQL_IN_CHUNK]
        yield chunk, ",".join("?" * len(chunk))


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _ts(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


class SqliteJobStore:
    def __init__(self, path: Path):
        self._db = open_database(path)
        # A job's password, deleted when the job ends, must not linger in freed pages.
        self._db.execute("PRAGMA secure_delete = ON")
        self._db.executescript(_SCHEMA)
        self._migrate()
        self._host = socket.gethostname()

    def _migrate(self) -> None:
        for table, columns in _ADDED_COLUMNS.items():
            have = {row["name"] for row in self._db.execute(f"PRAGMA table_info({table})")}
            for name, kind in columns.items():
                if name not in have:
                    self._db.execute(f"ALTER TABLE {table} ADD COLUMN {name} {kind}")

    # --- reading -------------------------------------------------------------------------------

    @staticmethod
    def _job(row: sqlite3.Row) -> Job:
        data = dict(row)
        for name in _INTERNAL_JOB_COLUMNS:
            data.pop(name, None)
        for key in ("created_at", "updated_at", "last_progress_at", "finished_at", "indexed_at",
                    "fields_published_at"):
            data[key] = _ts(data.get(key))
        # Rows this store wrote, in the types it wrote: built without validation, which the
        # poller and a run's progress check would otherwise pay for every job on every pass.
        data["status"] = JobStatus(data["status"])
        return Job.model_construct(**data)

    @staticmethod
    def _document(row: sqlite3.Row) -> Document:
        data = dict(row)
        data.pop("status", None)
        data["created_at"] = _ts(data["created_at"])
        return Document(**data)

    @staticmethod
    def _unit(row: sqlite3.Row) -> Unit:
        data = dict(row)
        data.pop("updated_at", None)
        data.pop("sent_at", None)
        return Unit(**data)

    def get_document(self, document_id: str) -> Document | None:
        row = self._db.execute("SELECT * FROM documents WHERE document_id = ?",
                               (document_id,)).fetchone()
        return self._document(row) if row else None

    def get_job(self, job_id: str) -> Job | None:
        row = self._db.execute("SELECT * FROM jobs WHERE job_id = ?", (job_id,)).fetchone()
        return self._job(row) if row else None

    def get_unit(self, job_id: str, unit_id: str) -> Unit | None:
        row = self._db.execute("SELECT * FROM units WHERE job_id = ? AND unit_id = ?",
                               (job_id, unit_id)).fetchone()
        return self._unit(row) if row else None

    def list_units(self, job_id: str) -> list[Unit]:
        rows = self._db.execute("SELECT * FROM units WHERE job_id = ? ORDER BY unit_id",
                                (job_id,)).fetchall()
        return [self._unit(r) for r in rows]

    def list_jobs(self, job_ids: Sequence[str] | None = None) -> list[Job]:
        if job_ids is None:
            rows = self._db.execute("SELECT * FROM jobs ORDER BY created_at").fetchall()
        else:
            rows = []
            for chunk, marks in _in_chunks(job_ids):
                rows += self._db.execute(f"SELECT * FROM jobs WHERE job_id IN ({marks})",
                                         chunk).fetchall()
        return [self._job(r) for r in rows]

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
        return self._document(row) if row else None

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
                "created_at, updated_at, last_progress_at, source_path) "
                "VALUES (?, ?, 'queued', ?, ?, ?, ?, ?, ?, ?)",
                (version.job_id, version.document_id, version.object_key, version.source_name,
                 version.sha256, created, created, created, version.source_path),
            )

    # --- a job's own password (a table of its own: never in a Job, a snapshot or an event) -------

    def set_job_password(self, job_id: str, password: str) -> bool:
        with transaction(self._db) as db:
            live = db.execute(
                "SELECT 1 FROM jobs WHERE job_id = ? AND status IN ('queued', 'extracting')",
                (job_id,)).fetchone()
            if live is None:
                return False
            db.execute("INSERT INTO job_passwords (job_id, password) VALUES (?, ?) "
                       "ON CONFLICT (job_id) DO UPDATE SET password = excluded.password",
                       (job_id, password))
        return True

    def job_password(self, job_id: str) -> str | None:
        row = self._db.execute(
            "SELECT p.password FROM job_passwords p JOIN jobs j USING (job_id) "
            "WHERE p.job_id = ? AND j.status IN ('queued', 'extracting')", (job_id,)).fetchone()
        return row["password"] if row else None

    # --- split and read ------------------------------------------------------------------------

    def add_units(self, job_id: str, units: Sequence[Unit], *, pages: int,
                  detected_format: str) -> bool:
        now = _now()
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
                "status, updated_at) VALUES (?, ?, ?, ?, ?, ?, 'pending', ?)",
                [(job_id, u.unit_id, u.kind, u.first_page, u.last_page, u.sheet_name, now)
                 for u in units],
            )
        return True

    def set_job_error(self, job_id: str, error: str) -> bool:
        cursor = self._db.execute(
            "UPDATE jobs SET error = ?, updated_at = ? "
            "WHERE job_id = ? AND error IS NULL AND status IN ('queued', 'extracting')",
            (error, _now(), job_id),
        )
        return cursor.rowcount == 1

    def _unit_update(self, job_id: str, unit_id: str, assignments: str, params: tuple,
                     allowed: tuple[UnitStatus, ...]) -> bool:
        now = _now()
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
        return self._unit_update(job_id, unit_id, "status = 'done'", (), self._OPEN)

    def fail_unit(self, job_id: str, unit_id: str, error_type: str, message: str) -> bool:
        return self._unit_update(job_id, unit_id, "status = 'failed', error_type = ?, error = ?",
                                 (error_type, message), self._OPEN)

    # --- poller and indexer --------------------------------------------------------------------

    def active_jobs(self) -> list[JobProgress]:
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
            "FROM jobs j WHERE j.status IN ('queued', 'extracting')"
        ).fetchall()
        progress = []
        for row in rows:
            data = dict(row)
            counts = {k: data.pop(k)
                      for k in ("planned", "done", "failed", "running", "first_failure")}
            job = self._job(data)  # type: ignore[arg-type]
            progress.append(JobProgress(job=job, units_planned=counts["planned"],
                                        units_done=counts["done"], units_failed=counts["failed"],
                                        units_running=counts["running"],
                                        first_failure=counts["first_failure"]))
        return progress

    def add_stall(self, stalls: Sequence[tuple[str, float, datetime]]) -> int:
        stamp = _now()
        with transaction(self._db) as db:
            cursor = db.executemany(
                "UPDATE jobs SET stalled_s = stalled_s + ?, updated_at = ? "
                "WHERE job_id = ? AND last_progress_at = ? AND status IN ('queued', 'extracting')",
                [(seconds, stamp, job_id, since.isoformat()) for job_id, seconds, since in stalls],
            )
        return cursor.rowcount

    def transition_job(self, job_id: str, expected: JobStatus, new: JobStatus, *,
                       failure_reason: str | None = None, failure_detail: str | None = None,
                       at: datetime) -> bool:
        stamp = at.isoformat()
        finished = stamp if new.terminal else None
        erased = 0
        with transaction(self._db) as db:
            cursor = db.execute(
                "UPDATE jobs SET status = ?, failure_reason = ?, failure_detail = ?, "
                "finished_at = ?, updated_at = ? WHERE job_id = ? AND status = ?",
                (new.value, failure_reason, failure_detail, finished, stamp, job_id,
                 expected.value),
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
        return [self._job(r) for r in rows]

    def mark_indexed(self, job_id: str, at: datetime) -> bool:
        cursor = self._db.execute(
            "UPDATE jobs SET indexed_at = ? WHERE job_id = ? AND indexed_at IS NULL",
            (at.isoformat(), job_id),
        )
        return cursor.rowcount == 1

    def mark_index_failed(self, job_id: str, error: str) -> bool:
        cursor = self._db.execute(
            "UPDATE jobs SET index_error = ? WHERE job_id = ? AND indexed_at IS NULL",
            (error, job_id),
        )
        return cursor.rowcount == 1

    def mark_status_event(self, job_id: str, status: JobStatus) -> None:
        self._db.execute("UPDATE jobs SET status_event = ? WHERE job_id = ? AND status = ?",
                         (status.value, job_id, status.value))

    def jobs_missing_status_event(self) -> list[Job]:
        rows = self._db.execute(
            "SELECT * FROM jobs WHERE status != 'queued' AND status_event IS NOT status "
            "ORDER BY updated_at"
        ).fetchall()
        return [self._job(r) for r in rows]

    def mark_index_sent(self, job_ids: Sequence[str]) -> None:
        now = _now()
        with transaction(self._db) as db:
            db.executemany("UPDATE jobs SET index_sent_at = ? WHERE job_id = ?",
                           [(now, job_id) for job_id in job_ids])

    def unsent_index_jobs(self) -> list[Job]:
        rows = self._db.execute(
            "SELECT * FROM jobs WHERE status = 'succeeded' AND indexed_at IS NULL "
            "AND index_error IS NULL AND index_sent_at IS NULL ORDER BY finished_at"
        ).fetchall()
        return [self._job(r) for r in rows]

    def mark_units_sent(self, job_id: str, unit_ids: Sequence[str]) -> None:
        now = _now()
        with transaction(self._db) as db:
            db.executemany("UPDATE units SET sent_at = ? WHERE job_id = ? AND unit_id = ?",
                           [(now, job_id, unit_id) for unit_id in unit_ids])

    def unsent_units(self, job_id: str) -> list[Unit]:
        rows = self._db.execute(
            "SELECT * FROM units WHERE job_id = ? AND status = 'pending' AND sent_at IS NULL "
            "ORDER BY unit_id", (job_id,)).fetchall()
        return [self._unit(r) for r in rows]

    # --- the poller's lease --------------------------------------------------------------------

    def acquire_lease(self, name: str, holder: str, ttl_s: float) -> bool:
        """Take or renew ``name`` for ``holder``; False while another live holder has it.

        A lease expires ``ttl_s`` after its last renewal; on this host, a holder whose process
        has died loses it at once (no wait after ``kill -9``).
        """
        now = time.time()
        with transaction(self._db) as db:
            row = db.execute("SELECT * FROM leases WHERE name = ?", (name,)).fetchone()
            if row is not None and row["holder"] != holder and row["expires_at"] > now:
                alive = row["holder_host"] != self._host or process_alive(row["holder_pid"])
                if alive:
                    return False
            db.execute(
                "INSERT INTO leases (name, holder, holder_host, holder_pid, expires_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, "
                "holder_host = excluded.holder_host, holder_pid = excluded.holder_pid, "
                "expires_at = excluded.expires_at",
                (name, holder, self._host, os.getpid(), now + ttl_s),
            )
        return True

    def release_lease(self, name: str, holder: str) -> None:
        self._db.execute("DELETE FROM leases WHERE name = ? AND holder = ?", (name, holder))

    def mark_split_sent(self, job_ids: Sequence[str]) -> None:
        now = _now()
        with transaction(self._db) as db:
            db.executemany("UPDATE jobs SET split_sent_at = ? WHERE job_id = ?",
                           [(now, job_id) for job_id in job_ids])

    def unsent_jobs(self) -> list[Job]:
        rows = self._db.execute(
            "SELECT * FROM jobs WHERE status = 'queued' AND split_sent_at IS NULL"
        ).fetchall()
        return [self._job(r) for r in rows]

    # --- fields: request, claim, result, publication ---------------------------------------------

    def request_fields(self, job_ids: Sequence[str], schema: str, strategy: str) -> int:
        changed = 0
        with transaction(self._db) as db:
            for chunk, marks in _in_chunks(job_ids):
                changed += db.execute(
                    "UPDATE jobs SET fields_schema = ?, fields_strategy = ?, fields_sent_at = NULL, "
                    "fields_published_at = (SELECT c.published_at FROM field_claims c "
                    "  WHERE c.job_id = jobs.job_id AND c.strategy = ?) "
                    f"WHERE job_id IN ({marks}) "
                    "AND (fields_schema IS NOT ? OR fields_strategy IS NOT ?)",
                    (schema, strategy, strategy, *chunk, schema, strategy)).rowcount
        return changed

    def unsent_fields_jobs(self) -> list[Job]:
        rows = self._db.execute(
            "SELECT * FROM jobs WHERE fields_strategy IS NOT NULL AND fields_sent_at IS NULL "
            "AND fields_published_at IS NULL AND status IN ('succeeded', 'failed') "
            "ORDER BY finished_at"
        ).fetchall()
        return [self._job(r) for r in rows]

    def mark_fields_sent(self, job_ids: Sequence[str]) -> None:
        now = _now()
        with transaction(self._db) as db:
            db.executemany("UPDATE jobs SET fields_sent_at = ? WHERE job_id = ?",
                           [(now, job_id) for job_id in job_ids])

    @staticmethod
    def _claim(row: sqlite3.Row) -> FieldClaim:
        data = dict(row)
        for key in ("claimed_at", "finished_at", "published_at"):
            data[key] = _ts(data[key])
        return FieldClaim(**data)

    def claim_fields(self, job_id: str, strategy: str, *, document_id: str, claimant: str,
                     at: datetime) -> bool:
        cursor = self._db.execute(
            "INSERT INTO field_claims (job_id, strategy, document_id, status, claimant, claimed_at) "
            "VALUES (?, ?, ?, 'claimed', ?, ?) ON CONFLICT (job_id, strategy) DO NOTHING",
            (job_id, strategy, document_id, claimant, at.isoformat()))
        return cursor.rowcount == 1

    def get_field_claim(self, job_id: str, strategy: str) -> FieldClaim | None:
        row = self._db.execute("SELECT * FROM field_claims WHERE job_id = ? AND strategy = ?",
                               (job_id, strategy)).fetchone()
        return self._claim(row) if row else None

    def release_fields(self, job_id: str, strategy: str, claimant: str) -> bool:
        cursor = self._db.execute(
            "DELETE FROM field_claims WHERE job_id = ? AND strategy = ? AND status = 'claimed' "
            "AND claimant = ?", (job_id, strategy, claimant))
        return cursor.rowcount == 1

    def settle_fields(self, job_id: str, strategy: str, *, document_id: str,
                      status: ClaimStatus, result: str, claimant: str | None,
                      at: datetime) -> bool:
        if not status.terminal:
            raise ValueError(f"settle_fields needs a terminal status, not {status}")
        stamp = at.isoformat()
        if claimant is not None:
            cursor = self._db.execute(
                "UPDATE field_claims SET status = ?, result = ?, finished_at = ? "
                "WHERE job_id = ? AND strategy = ? AND status = 'claimed' AND claimant = ?",
                (status.value, result, stamp, job_id, strategy, claimant))
        else:
            cursor = self._db.execute(
                "INSERT INTO field_claims (job_id, strategy, document_id, status, result, "
                "finished_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (job_id, strategy) DO UPDATE "
                "SET status = excluded.status, result = excluded.result, "
                "finished_at = excluded.finished_at WHERE field_claims.status = 'claimed'",
                (job_id, strategy, document_id, status.value, result, stamp))
        return cursor.rowcount == 1

    def unpublished_results(self, limit: int = 100) -> list[FieldClaim]:
        rows = self._db.execute(
            "SELECT * FROM field_claims WHERE published_at IS NULL AND status != 'claimed' "
            "ORDER BY finished_at LIMIT ?", (limit,)).fetchall()
        return [self._claim(r) for r in rows]

    def mark_result_published(self, job_id: str, strategy: str, at: datetime) -> bool:
        stamp = at.isoformat()
        with transaction(self._db) as db:
            cursor = db.execute(
                "UPDATE field_claims SET published_at = ? WHERE job_id = ? AND strategy = ? "
                "AND published_at IS NULL AND status != 'claimed'", (stamp, job_id, strategy))
            if cursor.rowcount == 0:
                return False
            db.execute("UPDATE jobs SET fields_published_at = ? WHERE job_id = ? "
                       "AND fields_strategy = ? AND fields_published_at IS NULL",
                       (stamp, job_id, strategy))
        return True

    def fields_pending(self) -> int:
        row = self._db.execute(
            "SELECT count(*) FROM jobs WHERE fields_strategy IS NOT NULL "
            "AND fields_published_at IS NULL AND status IN ('succeeded', 'failed')").fetchone()
        return int(row[0])

    def settled_count(self, job_ids: Sequence[str]) -> int:
        """How many of these jobs are settled (``Job.settled``), counted in SQL: a run's stop
        test asks after every poll, and building every job to ask costs more than the poll."""
        settled = 0
        for chunk, marks in _in_chunks(list(dict.fromkeys(job_ids))):
            settled += self._db.execute(
                f"SELECT count(*) FROM jobs WHERE job_id IN ({marks})"
                " AND (fields_strategy IS NULL OR fields_published_at IS NOT NULL)"
                " AND (status = 'failed' OR (status = 'succeeded'"
                "      AND (indexed_at IS NOT NULL OR index_error IS NOT NULL)))",
                chunk).fetchone()[0]
        return settled

    def page_progress(self, job_ids: Sequence[str]) -> tuple[int, int]:
        """(pages planned, pages in finished units) over some jobs: for a progress bar."""
        total = done = 0
        for chunk, marks in _in_chunks(job_ids):
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
