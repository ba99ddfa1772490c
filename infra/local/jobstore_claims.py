"""The SQLite job store's side records: a job's own password, the poller's lease, and field
extraction requests, claims and their publication. Each lives in a table of its own (or in the
``fields_*`` columns only it writes), apart from the job and unit transitions in
``infra.local.jobstore``; ``SqliteJobStore`` inherits them.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Sequence
from datetime import datetime

from extract.context import worker_process
from extract.processes import process_alive
from extract.state import ClaimStatus, FieldClaim, Job, UnitClaim
from infra.local.jobstore_sql import claim_from_row, in_chunks, job_from_row, now_iso
from infra.local.sqlite import transaction

__all__ = ["SqliteClaims"]


class SqliteClaims:
    """Passwords, the lease and field claims, on the store's connection."""

    _db: sqlite3.Connection
    _host: str

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

    def erase_passwords(self) -> int:
        """On start, before anything is ingested: erase every password left in the store. Any
        there belongs to a run that ended without finishing its jobs (kill -9, a power cut,
        Ctrl-C), and a password must not outlive the run that was given it. Those jobs, if
        they still need it, fail ``encrypted``; ``run ... --retry-failed`` with the password
        takes them again. The WAL is folded in and truncated so the bytes go too. Nothing is
        erased while another live process holds a lease here (a run still working its jobs)."""
        if self._lease_held_elsewhere():
            return 0
        with transaction(self._db) as db:
            erased = db.execute("DELETE FROM job_passwords").rowcount
        self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return erased

    def job_password(self, job_id: str) -> str | None:
        row = self._db.execute(
            "SELECT p.password FROM job_passwords p JOIN jobs j USING (job_id) "
            "WHERE p.job_id = ? AND j.status IN ('queued', 'extracting')", (job_id,)).fetchone()
        return row["password"] if row else None

    # --- a read's claim on its unit --------------------------------------------------------------

    def claim_unit(self, job_id: str, unit_id: str, attempt: int, owner: str,
                   lease_s: float) -> UnitClaim:
        """One transaction (``BEGIN IMMEDIATE``: the check and the write are one). On this host
        an owner whose process has died loses the unit at once, so a resume after ``kill -9``
        does not wait out the lease."""
        now = time.time()
        with transaction(self._db) as db:
            row = db.execute("SELECT status, owner, owner_host, owner_pid, lease_until FROM units "
                             "WHERE job_id = ? AND unit_id = ?", (job_id, unit_id)).fetchone()
            if row is None or row["status"] in ("done", "failed"):
                return UnitClaim.CLOSED
            if (row["status"] == "running" and row["owner"] not in (None, owner)
                    and (row["lease_until"] or 0) > now
                    and (row["owner_host"] != self._host or process_alive(row["owner_pid"]))):
                return UnitClaim.HELD
            stamp = now_iso()
            db.execute("UPDATE units SET status = 'running', attempts = ?, owner = ?, "
                       "owner_host = ?, owner_pid = ?, lease_until = ?, updated_at = ? "
                       "WHERE job_id = ? AND unit_id = ?",
                       (attempt, owner, self._host, os.getpid(), now + lease_s, stamp, job_id,
                        unit_id))
            db.execute("UPDATE jobs SET last_progress_at = ?, updated_at = ?, stalled_s = 0 "
                       "WHERE job_id = ?", (stamp, stamp, job_id))
        return UnitClaim.CLAIMED

    def renew_unit(self, job_id: str, unit_id: str, owner: str, lease_s: float) -> bool:
        return self._db.execute(
            "UPDATE units SET lease_until = ? WHERE job_id = ? AND unit_id = ? AND owner = ? "
            "AND status = 'running'", (time.time() + lease_s, job_id, unit_id, owner)).rowcount > 0

    def release_unit(self, job_id: str, unit_id: str, owner: str) -> bool:
        stamp = now_iso()
        with transaction(self._db) as db:
            released = db.execute(
                "UPDATE units SET status = 'pending', owner = NULL, lease_until = NULL, "
                "updated_at = ? WHERE job_id = ? AND unit_id = ? AND owner = ? "
                "AND status = 'running'", (stamp, job_id, unit_id, owner)).rowcount > 0
            if released:
                db.execute("UPDATE jobs SET last_progress_at = ?, updated_at = ?, stalled_s = 0 "
                           "WHERE job_id = ?", (stamp, stamp, job_id))
        return released

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

    def _lease_held_elsewhere(self) -> bool:
        """Whether a live process other than this one holds any lease on this store."""
        now = time.time()
        for row in self._db.execute("SELECT * FROM leases WHERE expires_at > ?", (now,)):
            if row["holder_host"] != self._host:
                return True
            if row["holder_pid"] != os.getpid() and process_alive(row["holder_pid"]):
                return True
        return False

    def release_lease(self, name: str, holder: str) -> None:
        self._db.execute("DELETE FROM leases WHERE name = ? AND holder = ?", (name, holder))

    # --- fields: request, claim, result, publication ---------------------------------------------

    def request_fields(self, job_ids: Sequence[str], schema: str, strategy: str) -> int:
        changed = 0
        with transaction(self._db) as db:
            for chunk, marks in in_chunks(job_ids):
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
            "SELECT * FROM jobs INDEXED BY jobs_fields_unsent"
            " WHERE fields_strategy IS NOT NULL AND fields_sent_at IS NULL "
            "AND fields_published_at IS NULL AND status IN ('succeeded', 'failed') "
            "ORDER BY finished_at"
        ).fetchall()
        return [job_from_row(r) for r in rows]

    def mark_fields_sent(self, job_ids: Sequence[str]) -> None:
        now = now_iso()
        with transaction(self._db) as db:
            db.executemany("UPDATE jobs SET fields_sent_at = ? WHERE job_id = ?",
                           [(now, job_id) for job_id in job_ids])

    def claim_fields(self, job_id: str, strategy: str, *, document_id: str, claimant: str,
                     at: datetime, stale_before: datetime | None = None) -> bool:
        """As the port says, and one thing more on this host: a claim whose holder's process
        has died is taken over at once, as a unit's is (``claim_unit``). Waiting out the lease
        instead spent every delivery of the fields message on ``claim_held`` after a
        ``kill -9``, and the document's fields ended dead-lettered."""
        # ISO timestamps in UTC compare as strings; with no cutoff, '' takes over nothing.
        cutoff = stale_before.isoformat() if stale_before is not None else ""
        with transaction(self._db) as db:
            row = db.execute("SELECT status, claimant FROM field_claims WHERE job_id = ? AND "
                             "strategy = ?", (job_id, strategy)).fetchone()
            if row is not None and row["status"] == "claimed" and self._holder_died(row["claimant"]):
                cutoff = "9999"  # later than any claim: the dead holder's is taken over
            cursor = db.execute(
                "INSERT INTO field_claims (job_id, strategy, document_id, status, claimant, "
                "claimed_at) VALUES (?, ?, ?, 'claimed', ?, ?) ON CONFLICT (job_id, strategy) "
                "DO UPDATE SET claimant = excluded.claimant, claimed_at = excluded.claimed_at "
                "WHERE field_claims.status = 'claimed' AND field_claims.claimed_at < ?",
                (job_id, strategy, document_id, claimant, at.isoformat(), cutoff))
        return cursor.rowcount == 1

    def _holder_died(self, claimant: str | None) -> bool:
        """Whether ``claimant`` names a process of this host that is no longer running."""
        process = worker_process(claimant or "")
        if process is None or process[0] != self._host or process[1] == os.getpid():
            return False
        return not process_alive(process[1])

    def get_field_claim(self, job_id: str, strategy: str) -> FieldClaim | None:
        row = self._db.execute("SELECT * FROM field_claims WHERE job_id = ? AND strategy = ?",
                               (job_id, strategy)).fetchone()
        return claim_from_row(row) if row else None

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
        return [claim_from_row(r) for r in rows]

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
