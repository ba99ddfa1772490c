"""Read one unit: for each page, skip it if its Markdown is stored, else read and store it.

The order is the one that makes every page paid for once: read, then storage (the page's
Markdown, with its reader and size as object metadata), then the events, then the database marks
the unit done. A delivery that dies anywhere in between is redone from the stored pages.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time

from extract.context import Delivery, HandlerContext, ReadScope, release_slot
from extract.errors import TerminalError
from extract.handlers.sources import local_copy, pdf_key
from extract.handlers.split import job_context
from extract.handlers.stored_pages import stored_pages
from extract.handlers.unit_claim import emit_unit_failed, unit_claimed
from extract.messages import ReadUnitMessage
from extract.readers import PageText
from extract.readers.base import page_object
from extract.state import Job, Unit, UnitStatus
from lake.events import PageRead, UnitDone, UnitStarted
from lake.layout import page_key

__all__ = ["handle_read"]


def _store_pages(ctx: HandlerContext, document_id: str, job_id: str,
                 pages: list[PageText]) -> None:
    ctx.objects.put_many([page_object(document_id, job_id, page.number, page.text, page.reader)
                          for page in pages])


async def handle_read(ctx: HandlerContext, message: ReadUnitMessage, delivery: Delivery) -> None:
    started = time.perf_counter()
    job = ctx.store.get_job(message.job_id)
    unit = ctx.store.get_unit(message.job_id, message.unit_id)
    if job is None or unit is None:
        raise TerminalError(f"no unit {message.job_id}/{message.unit_id}", error_type="unknown_unit")
    if unit.status is UnitStatus.FAILED:  # its event may have been lost in a crash: again
        await emit_unit_failed(ctx, delivery, job.job_id, unit.unit_id)
    if job.status.terminal or unit.status.terminal:
        return
    async with unit_claimed(ctx, job.job_id, unit.unit_id, delivery) as ours:
        if ours:
            await _read_unit(ctx, job, unit, delivery, started)


async def _read_unit(ctx: HandlerContext, job: Job, unit: Unit, delivery: Delivery,
                     started: float) -> None:
    delivery.emit(UnitStarted, unit_id=unit.unit_id, kind=unit.kind)

    missing: list[int] = []
    stored = await stored_pages(ctx.objects, job.document_id, job.job_id, unit.page_numbers)
    for number in unit.page_numbers:
        metadata = stored.get(number)
        if metadata is None:
            missing.append(number)
            continue
        # Stored by an earlier delivery: re-emit its event (same id), do not read it again.
        delivery.emit(PageRead, unit_id=unit.unit_id, page_number=number,
                      reader=metadata.get("reader", "unknown"),
                      chars=int(metadata.get("chars", 0)),
                      object_key=page_key(job.document_id, job.job_id, number))

    if missing:
        saved: dict[int, PageText] = {}

        async def save_page(page: PageText) -> None:
            # A reader that pays per page (a model) stores each page as soon as it is read.
            await asyncio.to_thread(_store_pages, ctx, job.document_id, job.job_id, [page])
            saved[page.number] = page

        # The job's own reader and models (its run's choices), and the document's own password
        # (kept by ingest) before the run's --password.
        unit_ctx = dataclasses.replace(job_context(ctx, job),
                                       scope=ReadScope(delivery, unit.unit_id, save_page,
                                                       answered=release_slot))
        chain = unit_ctx.reader_chain()
        async with local_copy(ctx.objects, pdf_key(job)) as path:
            pages = await chain.read(unit_ctx, path, missing)
        # Off the event loop: the puts are durable (fsync), and other units go on meanwhile.
        rest = [page for page in pages
                if saved.get(page.number) is not page and not page.stored]
        if rest:
            await asyncio.to_thread(_store_pages, ctx, job.document_id, job.job_id, rest)
        for page in pages:
            delivery.emit(PageRead, unit_id=unit.unit_id, page_number=page.number,
                          reader=page.reader, chars=len(page.text),
                          object_key=page_key(job.document_id, job.job_id, page.number),
                          duration_ms=page.duration_ms)

    pages = len(unit.page_numbers)
    delivery.emit(UnitDone, unit_id=unit.unit_id, pages=pages, pages_skipped=pages - len(missing),
                  duration_ms=(time.perf_counter() - started) * 1000)
    # The pages are stored: the wait for the events' flush need not hold a reader's slot (the
    # unit is marked done, and its message acknowledged, only after the flush, as before).
    release_slot()
    await delivery.commit()
    ctx.store.finish_unit(job.job_id, unit.unit_id)
    ctx.notify()
