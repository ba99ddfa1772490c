"""Read one sheet of a workbook: the unit the first worker did not read itself (sheets 2..n).

The same order as every read: skip a sheet whose text is stored, else read it in a worker
process (calamine, under a memory limit), store it, make the events durable, then mark the
unit done.
"""

from __future__ import annotations

import asyncio
import time

from extract.context import Delivery, HandlerContext
from extract.errors import TerminalError
from extract.formats.spreadsheet import READER, read_sheet
from extract.handlers.sources import local_copy, readable_key, source_format
from extract.handlers.split import sheet_limits
from extract.handlers.unit_claim import emit_unit_failed, unit_claimed
from extract.messages import ReadSheetMessage
from extract.readers.base import page_object
from extract.state import Job, Unit, UnitStatus
from lake.events import PageRead, UnitDone, UnitStarted
from lake.layout import page_key

__all__ = ["handle_sheet"]


async def handle_sheet(ctx: HandlerContext, message: ReadSheetMessage, delivery: Delivery) -> None:
    started = time.perf_counter()
    job = ctx.store.get_job(message.job_id)
    unit = ctx.store.get_unit(message.job_id, message.unit_id)
    if job is None or unit is None or unit.first_page is None:
        raise TerminalError(f"no sheet unit {message.job_id}/{message.unit_id}",
                            error_type="unknown_unit")
    if unit.status is UnitStatus.FAILED:  # its event may have been lost in a crash: again
        await emit_unit_failed(ctx, delivery, job.job_id, unit.unit_id)
    if job.status.terminal or unit.status.terminal:
        return
    async with unit_claimed(ctx, job.job_id, unit.unit_id, delivery) as ours:
        if ours:
            await _read_sheet_unit(ctx, job, unit, delivery, started)


async def _read_sheet_unit(ctx: HandlerContext, job: Job, unit: Unit, delivery: Delivery,
                           started: float) -> None:
    delivery.emit(UnitStarted, unit_id=unit.unit_id, kind=unit.kind)

    position = unit.first_page
    key = page_key(job.document_id, job.job_id, position)
    metadata = ctx.objects.head(key)
    skipped = 1
    if metadata is None:
        fmt = source_format(job)
        if fmt is None:
            raise TerminalError(f"job {job.job_id} has no detected format",
                                error_type="unknown_format")
        async with local_copy(ctx.objects, readable_key(ctx.objects, job)) as path:
            text = await ctx.cpu.run(read_sheet, path, fmt, position, sheet_limits(ctx),
                                     timeout_s=ctx.config.read_timeout_s)
        _, data, metadata = page_object(job.document_id, job.job_id, position, text.text,
                                        READER)
        await asyncio.to_thread(ctx.objects.put, key, data, metadata=metadata)
        skipped = 0
    delivery.emit(PageRead, unit_id=unit.unit_id, page_number=position,
                  reader=metadata.get("reader", READER), chars=int(metadata.get("chars", 0)),
                  object_key=key, sheet_name=unit.sheet_name,
                  duration_ms=None if skipped else (time.perf_counter() - started) * 1000)
    delivery.emit(UnitDone, unit_id=unit.unit_id, pages=1, pages_skipped=skipped,
                  duration_ms=(time.perf_counter() - started) * 1000)
    await delivery.commit()
    ctx.store.finish_unit(job.job_id, unit.unit_id)
    ctx.notify()
