"""Prepare and split: sniff the real format, count the pages, plan five-page units.

A redelivered split message finds the units already planned and only sends the messages never
confirmed sent (the first delivery may have died between planning and sending).
"""

from __future__ import annotations

from collections.abc import Sequence

from extract.context import Delivery, HandlerContext
from extract.errors import EmptyDocument, LimitExceeded, TerminalError, UnsupportedFormat
from extract.formats.pdf import count_pages
from extract.formats.sniff import Format, sniff
from extract.messages import READ_QUEUE, ReadUnitMessage, SplitMessage
from extract.state import Job, Unit
from lake.events import FormatDetected, JobSplit, UnitPlanned

SEND_BATCH = 10  # SQS's batch limit; the local queue keeps the same shape


def plan_pdf_units(pages: int, pages_per_unit: int) -> list[Unit]:
    """Consecutive runs of ``pages_per_unit`` pages; the last one may be shorter."""
    if pages_per_unit < 1:
        raise ValueError("pages_per_unit must be at least 1")
    units = []
    for index, first in enumerate(range(1, pages + 1, pages_per_unit), start=1):
        last = min(first + pages_per_unit - 1, pages)
        units.append(Unit(job_id="", unit_id=f"u{index:05d}", kind="pdf_pages",
                          first_page=first, last_page=last))
    return units


async def send_unit_messages(ctx: HandlerContext, job: Job, units: Sequence[Unit]) -> None:
    """Send, batch by batch, then flag each batch sent (the outbox rule: a redelivery or a
    crash re-sends only what was never confirmed, so no unit is read twice for it)."""
    for start in range(0, len(units), SEND_BATCH):
        batch = units[start:start + SEND_BATCH]
        bodies = [ReadUnitMessage(document_id=job.document_id, job_id=job.job_id,
                                  unit_id=u.unit_id).model_dump_json() for u in batch]
        ctx.queue.send_batch(READ_QUEUE, bodies, group=job.job_id)
        ctx.store.mark_units_sent(job.job_id, [u.unit_id for u in batch])


async def handle_split(ctx: HandlerContext, message: SplitMessage, delivery: Delivery) -> None:
    job = ctx.store.get_job(message.job_id)
    if job is None:
        raise TerminalError(f"no job {message.job_id}", error_type="unknown_job")
    if job.status.terminal or job.error:
        return
    if job.units is not None:
        # Planned by an earlier delivery that may have died before sending everything: send
        # only the units whose message was never confirmed sent.
        await send_unit_messages(ctx, job, ctx.store.unsent_units(job.job_id))
        return

    config = ctx.config
    with ctx.objects.local_path(job.object_key) as path:
        size = path.stat().st_size
        detected = sniff(path)
        delivery.emit(FormatDetected, detected_format=detected.value)
        if detected is Format.EMPTY:
            raise EmptyDocument("the file is empty (0 bytes)")
        if size > config.max_file_bytes:
            raise LimitExceeded(
                f"the file has {size} bytes, over the limit of {config.max_file_bytes}",
                error_type="file_too_large",
            )
        if detected is not Format.PDF:
            raise UnsupportedFormat(
                f"the content is {detected.value}, not PDF; this build reads PDF only"
            )
        pages = await ctx.cpu.run(count_pages, path, config.password_value,
                                  timeout_s=config.split_timeout_s)
    if pages > config.max_pages:
        raise LimitExceeded(f"{pages} pages, over the limit of {config.max_pages}",
                            error_type="too_many_pages")

    units = [u.model_copy(update={"job_id": job.job_id})
             for u in plan_pdf_units(pages, config.pages_per_unit)]
    delivery.emit(JobSplit, pages=pages, units=len(units), pages_per_unit=config.pages_per_unit)
    for unit in units:
        delivery.emit(UnitPlanned, unit_id=unit.unit_id, kind=unit.kind,
                      first_page=unit.first_page, last_page=unit.last_page)
    await delivery.commit()
    if ctx.store.add_units(job.job_id, units, pages=pages, detected_format=detected.value):
        await send_unit_messages(ctx, job, units)
    ctx.notify()
