"""A read's claim on its unit: one owner at a time, under a lease it renews while it reads.

Two messages for one unit arise from a split that died between ``send_batch`` and
``mark_units_sent`` and from at-least-once delivery; both used to read (and pay for) every page.
The read now claims its unit by a conditional write (``JobStore.claim_unit``) before it opens the
file; a second delivery that finds the unit held under a live lease raises ``UnitBusy``, and its
message backs off (never failing the unit: the holder finishes or fails it). The holder renews
the lease every third of it while it reads, so only a reader that died (or hung past the lease)
loses the unit to the next delivery.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator

from extract.context import Delivery, HandlerContext
from extract.errors import UnitBusy
from extract.state import UnitClaim, UnitStatus
from lake.events import UnitFailed

__all__ = ["log", "unit_claimed", "emit_unit_failed"]

log = logging.getLogger(__name__)


@contextlib.asynccontextmanager
async def unit_claimed(ctx: HandlerContext, job_id: str, unit_id: str,
                       delivery: Delivery) -> AsyncIterator[bool]:
    """Claim the unit and hold it while the body runs; yields False when the unit is closed
    already (nothing to do). Raises ``UnitBusy`` while another owner's lease is live."""
    lease_s = ctx.config.unit_lease_s
    owner = f"{ctx.worker}/{uuid.uuid4().hex[:12]}"
    claim = ctx.store.claim_unit(job_id, unit_id, delivery.attempt, owner, lease_s)
    if claim is UnitClaim.HELD:
        raise UnitBusy(f"unit {job_id}/{unit_id} is being read by another delivery; backing off")
    if claim is UnitClaim.CLOSED:
        yield False
        return
    renewal = asyncio.create_task(_renew(ctx, job_id, unit_id, owner, lease_s))
    try:
        yield True
    except BaseException:
        # A failed or cancelled read lets go at once (the unit is pending again): its retry, or
        # another process, must not wait out the lease of a reader that has stopped, and a unit
        # waiting out its retry backoff is not a stalled job.
        with contextlib.suppress(Exception):
            ctx.store.release_unit(job_id, unit_id, owner)
        raise
    finally:
        renewal.cancel()


async def _renew(ctx: HandlerContext, job_id: str, unit_id: str, owner: str,
                 lease_s: float) -> None:
    while True:
        await asyncio.sleep(lease_s / 3)
        try:
            if not await asyncio.to_thread(ctx.store.renew_unit, job_id, unit_id, owner, lease_s):
                return  # finished, failed or taken over: nothing left to hold
        except Exception:  # the next renewal tries again; the lease has two more thirds
            log.exception("could not renew the lease on unit %s/%s", job_id, unit_id)


async def emit_unit_failed(ctx: HandlerContext, delivery: Delivery, job_id: str,
                           unit_id: str) -> None:
    """The ``unit_failed`` event of a unit the store has failed, built from the store's record
    (the same event id every time, so a repair after a crash is a duplicate, not a new row)."""
    unit = ctx.store.get_unit(job_id, unit_id)
    if unit is None or unit.status is not UnitStatus.FAILED:
        return
    delivery.emit(UnitFailed, unit_id=unit_id, error_type=unit.error_type or "failed",
                  message=unit.error or "")
    await delivery.commit()
