"""Split messages received together: the PDFs among them counted and read in one worker call.

A folder of small PDFs is one split message a document, and each of them paid a pool round trip,
a commit of its events and the runtime's cost of a message for a few milliseconds of reading.
Here the documents that need nothing but the split's usual PDF path (a first delivery, a job
still to plan, content that is a PDF by its first bytes, a reader that starts with the text
layer, a local copy of the file) are counted and read in one worker call, their events
committed at once, then each plan recorded as ``plan_pdf`` records it: pages stored, events
durable, units recorded. Every other message, and any document whose read raised, is handed
back to be handled alone, where its errors are sorted as for any message.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from extract.context import (
    Delivery,
    HandlerContext,
    commit_together,
    hand_back,
    release_slot,
)
from extract.formats.sniff import Format, Sniffed, read_head, sniff_head
from extract.handlers.split import (
    emit_pdf_plan,
    job_context,
    pages_read_at_split,
    plain_first_plan,
    record_pdf_plan,
)
from extract.messages import SplitMessage
from extract.readers.text import count_and_read_first_pages_of_each
from extract.state import Job
from lake.events import FormatDetected

__all__ = ["split_together"]


@dataclass(frozen=True)
class _Candidate:
    message: SplitMessage
    delivery: Delivery
    ctx: HandlerContext
    job: Job
    path: Path
    sniffed: Sniffed
    first_pages: int


async def split_together(ctx: HandlerContext,
                         deliveries: Sequence[tuple[SplitMessage, Delivery]]
                         ) -> list[SplitMessage]:
    """Split the PDFs among ``deliveries`` together; returns the messages to handle alone.

    After an error every message may be handled alone: a plan recorded before it is found by
    its own split, which only sends what was not sent. The batch's call has the split's own
    time limit (a few milliseconds a document is the usual), not one a document: a document
    that hangs PDFium keeps the batch's others until then, and they are handled alone after."""
    if not getattr(ctx.objects, "local_reads", False) or ctx.worker_objects is None:
        return [message for message, _ in deliveries]  # no file on this disk to read here
    jobs = {job.job_id: job for job in ctx.store.list_jobs([m.job_id for m, _ in deliveries])}
    alone: list[SplitMessage] = []
    with contextlib.ExitStack() as files:
        candidates: list[_Candidate] = []
        for message, delivery in deliveries:
            candidate = _candidate(ctx, message, delivery, jobs.get(message.job_id), files)
            if candidate is None:
                alone.append(message)
            else:
                candidates.append(candidate)
        # An Office file, a sheet, a redelivery: not this batch's work, and nothing of it waits
        # for the PDFs' read (a one-page letter's conversion starts now).
        alone = hand_back(alone)
        if not candidates:
            return alone
        results = await ctx.cpu.run(
            count_and_read_first_pages_of_each,
            [(c.path, c.ctx.config.password_value, c.first_pages, c.ctx.config.max_pages,
              c.job.document_id, c.job.job_id) for c in candidates],
            ctx.worker_objects, timeout_s=candidates[0].ctx.config.split_timeout_s)
    planned = []
    for candidate, result in zip(candidates, results, strict=True):
        if result is None or result[0] > candidate.ctx.config.max_pages:
            alone.append(candidate.message)  # fails alone, with its own reason
            continue
        pages, read = result
        candidate.delivery.emit(FormatDetected, detected_format=candidate.sniffed.format.value,
                                mime_type=candidate.sniffed.mime_type)
        plan = await emit_pdf_plan(candidate.ctx, candidate.job, candidate.delivery, pages,
                                   read, {})
        planned.append((candidate, plan))
    if planned:
        release_slot()
        await commit_together(ctx.sink, [candidate.delivery for candidate, _ in planned])
        for candidate, plan in planned:
            await record_pdf_plan(candidate.ctx, candidate.job, candidate.delivery.attempt, plan,
                                  Format.PDF.value)
        ctx.notify()
    return alone


def _candidate(ctx: HandlerContext, message: SplitMessage, delivery: Delivery,
               job: Job | None, files: contextlib.ExitStack) -> _Candidate | None:
    """The message's document when it takes the common path, else None (handled alone)."""
    if not plain_first_plan(job, delivery):  # a redelivery may find pages stored: ``plan_pdf``
        return None
    job_ctx = job_context(ctx, job)
    first_pages = pages_read_at_split(job_ctx)
    if not first_pages:
        return None
    try:
        path = files.enter_context(ctx.objects.local_path(job.object_key))
        size = path.stat().st_size
        sniffed = sniff_head(read_head(path))
    except (KeyError, OSError):  # its own split reports the missing upload
        return None
    if sniffed is None or sniffed.format is not Format.PDF or sniffed.damaged or \
            sniffed.empty or size > job_ctx.config.max_file_bytes:
        return None
    return _Candidate(message, delivery, job_ctx, job, path, sniffed, first_pages)
