"""The claim: one worker at a time extracts a (job, strategy), and only it writes the result.

The rules, as the write-up runs them on DynamoDB (the SQLite store keeps the same contract, see
``JobStore.claim_fields`` in ``extract/ports.py``)::

    message --> claim (conditional put: no row yet)
                 |-- claimed by us --> extract --> settle done|failed (only if still ours)
                 |-- row is done/failed --> a redelivery: nothing to do, ack
                 |-- claimed longer ago than the lease --> taken over (conditional write)
                 '-- claimed by someone else --> ClaimHeld: back off, try again later

A worker that dies holding a claim leaves it; its lease is the fields stage's time limit
(``extract.delivery_limits``: no live delivery runs past it), after which the next delivery takes
it over and extracts. Only a message whose deliveries all end before that lands in the
dead-letter queue, whose handler settles the result as failed (``dead_letter``), conditional on
the row still being only claimed. An attempt that fails in a way a retry may fix, or is
cancelled, releases its own claim first.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from extract.errors import TransientError
from extract.fields.result import FieldResult, failed_result
from extract.ports import JobStore
from extract.state import ClaimStatus, FieldClaim

__all__ = ["ClaimHeld", "Claimed", "claim", "settle", "settle_failed_unclaimed"]


class ClaimHeld(TransientError):
    """Another worker holds the claim. Retried, and on exhaustion left to the dead-letter queue
    (never acknowledged on the last delivery, unlike other errors): that is where a dead
    worker's claim is settled."""

    error_type = "claim_held"


class Claimed:
    """What ``claim`` found: ours to work on, or already finished (a redelivery)."""

    def __init__(self, ours: bool, row: FieldClaim | None):
        self.ours = ours
        self.row = row


def claim(store: JobStore, *, job_id: str, document_id: str, strategy: str, claimant: str,
          at: datetime, lease_s: float | None = None) -> Claimed:
    """Take the claim, or learn the work is done; raises ``ClaimHeld`` if another holds it.
    A claim older than ``lease_s`` (the fields stage's time limit, past which its holder has
    been cut off) is taken over."""
    stale_before = at - timedelta(seconds=lease_s) if lease_s is not None else None
    if store.claim_fields(job_id, strategy, document_id=document_id, claimant=claimant, at=at,
                          stale_before=stale_before):
        return Claimed(True, None)
    row = store.get_field_claim(job_id, strategy)
    if row is None:  # released between our write and our read: the next delivery claims it
        raise ClaimHeld(f"the claim on {job_id}/{strategy} was released just now; retrying")
    if row.status.terminal:
        return Claimed(False, row)
    raise ClaimHeld(f"{job_id}/{strategy} is claimed by {row.claimant} since "
                    f"{row.claimed_at:%Y-%m-%dT%H:%M:%SZ}; not taken over")


def settle(store: JobStore, result: FieldResult, *, claimant: str | None, at: datetime) -> bool:
    """The terminal write; False when the row was not as expected (someone settled it first)."""
    status = ClaimStatus.FAILED if result.status == "failed" else ClaimStatus.DONE
    return store.settle_fields(result.job_id, result.strategy, document_id=result.document_id,
                               status=status, result=result.model_dump_json(),
                               claimant=claimant, at=at)


def settle_failed_unclaimed(store: JobStore, *, document_id: str, job_id: str, strategy: str,
                            schema_name: str, reason: str, message: str, at: datetime) -> bool:
    """A failed result where no live worker holds the claim: a dead letter, a failed job, a
    message that failed its last delivery. A row already done or failed is left alone."""
    result = failed_result(document_id=document_id, job_id=job_id, strategy=strategy,
                           schema_name=schema_name, reason=reason, message=message)
    return settle(store, result, claimant=None, at=at)
