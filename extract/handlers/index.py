"""The indexer: a succeeded job's pages, merged in page order, become searchable.

Only the document's latest version is indexed; an older job finishing late never replaces a
newer one's text.
"""

from __future__ import annotations

import asyncio

from extract.context import Delivery, HandlerContext, release_slot
from extract.errors import TerminalError
from extract.messages import IndexMessage
from extract.ports import ObjectStore, SearchIndex
from extract.state import JobStatus
from lake.events import DocumentIndexed, utc_now
from lake.layout import page_number_of, pages_prefix

INDEX_TIMEOUT_S = 600.0


def index_stored_pages(index: SearchIndex, objects: ObjectStore, keys: list[str],
                       document_id: str, job_id: str, source_name: str) -> tuple[int, int]:
    """Read a job's stored pages and make them the document's searchable text; returns pages
    and characters indexed. Runs in a worker process or on a thread."""
    pages = sorted((page_number_of(key), objects.get(key).decode("utf-8"))
                   for key in keys)
    count = index.replace_document(document_id, job_id, source_name, iter(pages))
    return count, sum(len(text) for _, text in pages)


async def handle_index(ctx: HandlerContext, message: IndexMessage, delivery: Delivery) -> None:
    job = ctx.store.get_job(message.job_id)
    if job is None:
        raise TerminalError(f"no job {message.job_id}", error_type="unknown_job")
    if job.status is not JobStatus.SUCCEEDED or job.indexed_at is not None:
        return
    document = ctx.store.get_document(job.document_id)
    if ctx.index is None or document is None or document.latest_job_id != job.job_id:
        ctx.store.mark_indexed(job.job_id, utc_now())
        ctx.notify()
        return

    keys = ctx.objects.list(pages_prefix(job.document_id, job.job_id))
    if job.pages is not None and len(keys) != job.pages:
        raise TerminalError(f"{len(keys)} pages stored, {job.pages} expected",
                            error_type="missing_pages")
    # Tokenising a large document (a workbook of 250,000 rows takes seconds) must not hold the
    # event loop and every other message: in a worker process where the ports allow it (the
    # pages are read there too), else on a thread.
    if ctx.worker_index is not None and ctx.worker_objects is not None:
        count, chars = await ctx.cpu.run(
            index_stored_pages, ctx.worker_index, ctx.worker_objects, keys, job.document_id,
            job.job_id, job.source_name, timeout_s=max(ctx.config.read_timeout_s, INDEX_TIMEOUT_S))
    else:
        count, chars = await asyncio.to_thread(index_stored_pages, ctx.index, ctx.objects, keys,
                                               job.document_id, job.job_id, job.source_name)
    delivery.emit(DocumentIndexed, pages=count, chars=chars)
    release_slot()  # indexed: what is left only waits for the events' flush
    await delivery.commit()
    ctx.store.mark_indexed(job.job_id, utc_now())
    ctx.notify()
