"""The SQLite job store's tables, and the plumbing every part of the store shares: the schema
and its additive migrations, rows to records, and the helpers for timestamps and long ``IN``
lists.

Apart from the store (``infra.local.jobstore``) so that the store's methods read as the state
transitions they are, and so that its parts (``infra.local.jobstore_claims``) map rows the same
way.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime

from extract.state import Document, FieldClaim, Job, JobStatus, Unit

__all__ = ["SCHEMA", "ADDED_COLUMNS", "AFTER_MIGRATION", "SQL_IN_CHUNK", "in_chunks", "now_iso",
           "timestamp", "migrate", "job_from_row", "document_from_row", "unit_from_row", "claim_from_row"]

SCHEMA = """
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
-- A job's end sets its document's status (``transition_job``): without this index every job's
-- end read every document of the home (0.1 ms a job at 2,000 documents, 5 ms at 100,000).
CREATE INDEX IF NOT EXISTS documents_latest_job ON documents (latest_job_id);
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
  status_event TEXT,
  retry_at TEXT
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
ADDED_COLUMNS = {
    "jobs": {"index_sent_at": "TEXT", "stalled_s": "REAL NOT NULL DEFAULT 0",
             "failure_detail": "TEXT", "status_event": "TEXT", "fields_schema": "TEXT",
             "fields_strategy": "TEXT", "fields_sent_at": "TEXT", "fields_published_at": "TEXT",
             "source_path": "TEXT", "run_choices": "TEXT", "retry_at": "TEXT",
             "change_seq": "INTEGER NOT NULL DEFAULT 0"},
    "units": {"sent_at": "TEXT", "owner": "TEXT", "owner_host": "TEXT",
              "owner_pid": "INTEGER", "lease_until": "REAL"},
}
# Store-internal bookkeeping that the Job record does not carry.
_INTERNAL_JOB_COLUMNS = ("sha256", "split_sent_at", "index_sent_at", "status_event",
                         "fields_sent_at", "change_seq")

# After the columns exist (a migrated home gains them first). ``change_seq`` numbers the changes
# a poller decides on (units planned, a unit's progress, an error, a status): a trigger stamps the
# next number in the write's own transaction, so a poller that saw number N has seen every change
# numbered below it, and a woken pass reads only the jobs changed since its last one rather than
# every active job (``SqliteJobStore.active_jobs_changed``), and a run's stop test asks again only
# when the number has moved (``change_position``). The partial indexes keep the poller's
# outbox look-ups (status event, index and fields messages not yet confirmed) proportional to
# what is pending, not to every job the home holds. Those look-ups and a stop test's question
# name their index (``INDEXED BY``): without statistics SQLite's planner took ``jobs_status``
# instead and read every succeeded job, about a millisecond a pass at 2,000 jobs; a query that
# can no longer use its index now fails rather than slowing down unseen.
AFTER_MIGRATION = """
CREATE INDEX IF NOT EXISTS jobs_change_seq ON jobs (change_seq);
CREATE TRIGGER IF NOT EXISTS jobs_changed_on_update
AFTER UPDATE OF status, last_progress_at, error, units, indexed_at, index_error,
  fields_strategy, fields_published_at ON jobs
BEGIN
  UPDATE jobs SET change_seq = (SELECT coalesce(max(change_seq), 0) + 1 FROM jobs)
  WHERE job_id = NEW.job_id;
END;
CREATE TRIGGER IF NOT EXISTS jobs_changed_on_insert AFTER INSERT ON jobs
BEGIN
  UPDATE jobs SET change_seq = (SELECT coalesce(max(change_seq), 0) + 1 FROM jobs)
  WHERE job_id = NEW.job_id;
END;
CREATE INDEX IF NOT EXISTS jobs_status_event_due ON jobs (updated_at)
  WHERE status != 'queued' AND status_event IS NOT status;
CREATE INDEX IF NOT EXISTS jobs_index_unsent ON jobs (finished_at)
  WHERE status = 'succeeded' AND indexed_at IS NULL AND index_error IS NULL
  AND index_sent_at IS NULL;
CREATE INDEX IF NOT EXISTS jobs_fields_unsent ON jobs (finished_at)
  WHERE fields_strategy IS NOT NULL AND fields_sent_at IS NULL
  AND fields_published_at IS NULL;
"""



SQL_IN_CHUNK = 500
"""Ids bound in one ``IN (...)``: under SQLite's limit on host parameters (999 in old builds)."""


def in_chunks(ids: Sequence[str]) -> Iterator[tuple[list[str], str]]:
    """``ids`` in chunks of ``SQL_IN_CHUNK``, each with its ``?,?,...`` placeholders."""
    ids = list(ids)
    for start in range(0, len(ids), SQL_IN_CHUNK):
        chunk = ids[start:start + SQL_IN_CHUNK]
        yield chunk, ",".join("?" * len(chunk))


def now_iso() -> str:
    return datetime.now(UTC).isoformat()


def timestamp(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def migrate(db: sqlite3.Connection) -> None:
    """Create the tables, and add the columns a home made by an older build lacks."""
    db.executescript(SCHEMA)
    for table, columns in ADDED_COLUMNS.items():
        have = {row["name"] for row in db.execute(f"PRAGMA table_info({table})")}
        for name, kind in columns.items():
            if name not in have:
                db.execute(f"ALTER TABLE {table} ADD COLUMN {name} {kind}")
    db.executescript(AFTER_MIGRATION)


def job_from_row(row: sqlite3.Row) -> Job:
    data = dict(row)
    for name in _INTERNAL_JOB_COLUMNS:
        data.pop(name, None)
    for key in ("created_at", "updated_at", "last_progress_at", "finished_at", "indexed_at",
                "fields_published_at", "retry_at"):
        data[key] = timestamp(data.get(key))
    # Rows this store wrote, in the types it wrote: built without validation, which the
    # poller and a run's progress check would otherwise pay for every job on every pass.
    data["status"] = JobStatus(data["status"])
    return Job.model_construct(**data)

def document_from_row(row: sqlite3.Row) -> Document:
    data = dict(row)
    data.pop("status", None)
    data["created_at"] = timestamp(data["created_at"])
    return Document(**data)

def unit_from_row(row: sqlite3.Row) -> Unit:
    data = dict(row)
    for name in ("updated_at", "sent_at", "owner", "owner_host", "owner_pid", "lease_until"):
        data.pop(name, None)  # bookkeeping: the claim is the store's, not the Unit record's
    return Unit(**data)


def claim_from_row(row: sqlite3.Row) -> FieldClaim:
    data = dict(row)
    for key in ("claimed_at", "finished_at", "published_at"):
        data[key] = timestamp(data[key])
    return FieldClaim(**data)
