"""The indexer: a succeeded job's pages, merged in page order, become searchable.

Only the document's latest version is indexed; an older job finishing late never replaces a
newer one's text.

Index messages received together (a poll pass sends those of every job it finished) may be
handled together (``index_together``): one worker call and one transaction of the index for
their jobs, one commit of their events, instead of one of each a document. A job with many pages
is left to a call of its own, so that small documents never wait behind a large one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import NamedTuple

from extract.context import Delivery, HandlerContext, commit_together, release_slot
from extract.errors import TerminalError
from extract.messages import IndexMessage
from extract.ports import ObjectStore, SearchIndex
from extract.state import JobStatus
from lake.events import DocumentIndexed, utc_now
from lake.layout import page_number_of, pages_prefix

__all__ = ["INDEX_TIMEOUT_S", "MAX_PAGES_TOGETHER", "StoredJob", "ListedJob", "Lost", "index_stored_jobs",
           "index_listed_jobs", "handle_index", "index_together"]

INDEX_TIMEOUT_S = 600.0
MAX_PAGES_TOGETHER = 200
"""The most pages of a job indexed together with others; a job with more is indexed on its own
(a workbook's sheets of 250,000 rows take seconds to tokenise), so that small documents never
wait behind it."""

StoredJob = tuple[list[str], str, str, str]
"""A job's page keys, its document id, its id and its source name: what indexing it reads."""
ListedJob = tuple[int | None, str, str, str]
"""A job whose page keys are listed where it is indexed: the pages it read (None: not known),
its document id, its id and its source name."""


class Lost(NamedTuple):
    """A job not indexed: the pages found stored are not as many as it read (a page lost)."""

    stored: int


def index_stored_jobs(index: SearchIndex, objects: ObjectStore,
                      jobs: Sequence[StoredJob]) -> list[tuple[int, int]]:
    """Read each job's stored pages and make them its document's searchable text, in one
    transaction of the index: all of them searchable, or (an error) none; returns pages and
    characters of each, in order. Runs in a worker process or on a thread."""
    documents = [(document_id, job_id, source_name,
                  sorted((page_number_of(key), objects.get(key).decode("utf-8"))
                         for key in keys))
                 for keys, document_id, job_id, source_name in jobs]
    counts = index.replace_documents(documents)
    return [(count, sum(len(text) for _, text in pages))
            for count, (_, _, _, pages) in zip(counts, documents, strict=True)]


def index_listed_jobs(index: SearchIndex, objects: ObjectStore,
                      jobs: Sequence[ListedJob]) -> list[tuple[int, int] | Lost]:
    """``index_stored_jobs`` for jobs whose pages are listed here, where they are read (a worker
    process), not by the main process: a job with a page lost (not as many stored as it read)
    is left out, ``Lost``, for its message to fail ``missing_pages``; the others are indexed in
    one transaction."""
    listed: list[StoredJob | Lost] = []
    for pages, document_id, job_id, source_name in jobs:
        keys = objects.list(pages_prefix(document_id, job_id))
        listed.append((keys, document_id, job_id, source_name)
                      if pages is None or len(keys) == pages else Lost(len(keys)))
    complete = [job for job in listed if not isinstance(job, Lost)]
    counts = iter(index_stored_jobs(index, objects, complete) if complete else [])
    return [job if isinstance(job, Lost) else next(counts) for job in listed]


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

    [result] = await _index(ctx, [(job.pages, job.document_id, job.job_id, job.source_name)])
    if isinstance(result, Lost):
        raise TerminalError(f"{result.stored} pages stored, {job.pages} expected",
                            error_type="missing_pages")
    count, chars = result
    delivery.emit(DocumentIndexed, pages=count, chars=chars)
    release_slot()  # indexed: what is left only waits for the events' flush
    await delivery.commit()
    ctx.store.mark_indexed(job.job_id, utc_now())
    ctx.notify()


async def index_together(ctx: HandlerContext,
                         deliveries: Sequence[tuple[IndexMessage, Delivery]]
                         ) -> list[IndexMessage]:
    """Handle several index messages as one: the jobs that need indexing in one call, their
    ``document_indexed`` events in one commit, then each marked indexed. Returns the messages
    left for ``handle_index`` one at a time: an unknown job, a job with pages missing (each
    fails there with its reason) or with too many pages to share a call. An error raises before
    any job is marked, so the caller may hand every message to ``handle_index`` again."""
    jobs = {job.job_id: job for job in ctx.store.list_jobs([m.job_id for m, _ in deliveries])}
    alone: list[IndexMessage] = []
    settled: list[str] = []  # nothing to index (not the latest version, or no index)
    indexing: list[tuple[IndexMessage, Delivery, ListedJob]] = []
    seen: set[str] = set()
    for message, delivery in deliveries:
        job = jobs.get(message.job_id)
        if job is None or job.pages is None or job.pages > MAX_PAGES_TOGETHER:
            alone.append(message)
            continue
        if job.status is not JobStatus.SUCCEEDED or job.indexed_at is not None or \
                job.job_id in seen:  # a duplicate of a message in hand: that one indexes it
            continue
        seen.add(job.job_id)
        document = ctx.store.get_document(job.document_id)
        if ctx.index is None or document is None or document.latest_job_id != job.job_id:
            settled.append(job.job_id)
        else:
            indexing.append((message, delivery,
                             (job.pages, job.document_id, job.job_id, job.source_name)))
    indexed: list[tuple[Delivery, str]] = []
    if indexing:
        results = await _index(ctx, [listed for *_, listed in indexing])
        for (message, delivery, listed), result in zip(indexing, results, strict=True):
            if isinstance(result, Lost):  # its own message fails it, alone
                alone.append(message)
                continue
            count, chars = result
            delivery.emit(DocumentIndexed, pages=count, chars=chars)
            indexed.append((delivery, listed[2]))
    if indexed:
        release_slot()
        await commit_together(ctx.sink, [delivery for delivery, _ in indexed])
    ctx.store.mark_indexed_many([*settled, *(job_id for _, job_id in indexed)], utc_now())
    if settled or indexed:
        ctx.notify()
    return alone


async def _index(ctx: HandlerContext, jobs: list[ListedJob]) -> list[tuple[int, int] | Lost]:
    """Listing a job's pages and tokenising them (a workbook of 250,000 rows takes seconds) must
    not hold the event loop and every other message: in a worker process where the ports allow
    it (the pages are read there too), else on a thread."""
    if ctx.worker_index is not None and ctx.worker_objects is not None:
        return await ctx.cpu.run(index_listed_jobs, ctx.worker_index, ctx.worker_objects, jobs,
                                 timeout_s=max(ctx.config.read_timeout_s, INDEX_TIMEOUT_S))
    return await asyncio.to_thread(index_listed_jobs, ctx.index, ctx.objects, jobs)
