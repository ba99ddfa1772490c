"""Convert messages received together: their Office files converted by one LibreOffice process.

A data room brings its Office files together, and LibreOffice's start is most of a small file's
conversion (1.3 s for a one-page file; 1.7 s for eight in one process, on the machine of the
README's figures): eight one-page files waited for each other's starts behind two converters,
a one-page ``.ppt`` 9 s before LibreOffice opened it. Here the files of the messages a worker
received together go to one process (``extract.formats.office.convert_many_to_pdf``), each
checked for links before and its PDF after, stored and split as alone.

A file LibreOffice makes no PDF of in the batch (it refused the file, the time limit ended the
process, a check refused it), one over ``TOGETHER_MAX_BYTES``, and every message whose job is
not simply still to convert are handed back to be handled alone (``handle_convert``), where the
file gets its own process and time limit and its errors are sorted as for any message. A PDF
stored before an error is found by that redelivery, which only splits it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from extract.context import Delivery, HandlerContext
from extract.formats.office import convert_many_to_pdf
from extract.formats.sniff import Sniffed
from extract.handlers.convert import (
    checked_format,
    convert_limits,
    plan_converted,
    store_conversion,
)
from extract.handlers.sources import local_copy, readable_key
from extract.handlers.split import job_context, plain_first_plan
from extract.messages import ConvertMessage
from extract.state import Job
from lake.layout import converted_key

__all__ = ["TOGETHER_MAX_BYTES", "convert_together"]

TOGETHER_MAX_BYTES = 4 * 1024 * 1024
"""A file larger than this is converted alone: a long document would hold the small ones of
its batch until its own conversion ends."""


@dataclass(frozen=True)
class _Candidate:
    message: ConvertMessage
    delivery: Delivery
    ctx: HandlerContext
    job: Job
    sniffed: Sniffed


async def convert_together(ctx: HandlerContext,
                           deliveries: Sequence[tuple[ConvertMessage, Delivery]]
                           ) -> list[ConvertMessage]:
    """Convert the Office files of ``deliveries`` in one LibreOffice process, store and split
    each; returns the messages to handle alone."""
    jobs = {job.job_id: job for job in ctx.store.list_jobs([m.job_id for m, _ in deliveries])}
    alone: list[ConvertMessage] = []
    waiting: list[tuple[ConvertMessage, Delivery, HandlerContext, Job]] = []
    for message, delivery in deliveries:
        job = jobs.get(message.job_id)
        # A PDF already stored (an earlier delivery's) is only split: the usual path does it.
        if (job is None or not plain_first_plan(job, delivery)
                or ctx.objects.head(converted_key(job.document_id, job.job_id)) is not None):
            alone.append(message)
            continue
        waiting.append((message, delivery, job_context(ctx, job), job))
    # The checks of every file at once: each call waits for a CPU process, so one after
    # another they waited for one each (the documents lane is busy with a room's text layers).
    checked = await asyncio.gather(*(checked_format(job_ctx, job)
                                     for _, _, job_ctx, job in waiting), return_exceptions=True)
    candidates: list[_Candidate] = []
    for (message, delivery, job_ctx, job), sniffed in zip(waiting, checked, strict=True):
        if isinstance(sniffed, BaseException):  # alone, its error sorted as for any message
            alone.append(message)
        else:
            candidates.append(_Candidate(message, delivery, job_ctx, job, sniffed))
    if not candidates:
        return alone
    async with contextlib.AsyncExitStack() as files:
        sources: list[Path] = []
        kept: list[_Candidate] = []
        for candidate in candidates:
            path = await files.enter_async_context(
                local_copy(ctx.objects, readable_key(ctx.objects, candidate.job)))
            if path.stat().st_size > TOGETHER_MAX_BYTES:
                alone.append(candidate.message)
                continue
            sources.append(path)
            kept.append(candidate)
        if len(kept) < 2:  # nothing to share a process with: the usual path
            return alone + [candidate.message for candidate in kept]
        async with convert_many_to_pdf([(path, c.sniffed.format) for path, c in
                                        zip(sources, kept, strict=True)],
                                       convert_limits(ctx)) as conversions:
            made = [(candidate, path, conversion) for candidate, path, conversion
                    in zip(kept, sources, conversions, strict=True) if conversion is not None]
            alone += [candidate.message for candidate, conversion
                      in zip(kept, conversions, strict=True) if conversion is None]
            stored = await asyncio.gather(*(
                store_conversion(candidate.ctx, candidate.job, conversion, path,
                                 candidate.sniffed)
                for candidate, path, conversion in made), return_exceptions=True)
    done = []
    for (candidate, _, _), metadata in zip(made, stored, strict=True):
        if isinstance(metadata, BaseException):  # e.g. the output check: alone, which says so
            alone.append(candidate.message)
        else:
            done.append((candidate, metadata))
    # Each split as alone, all at once (their page counts and text layers are CPU calls too);
    # one that fails is handled alone, where its stored PDF is found and split again.
    planned = await asyncio.gather(*(plan_converted(candidate.ctx, candidate.job,
                                                    candidate.delivery, candidate.sniffed,
                                                    metadata)
                                     for candidate, metadata in done), return_exceptions=True)
    alone += [candidate.message for (candidate, _), outcome in zip(done, planned, strict=True)
              if isinstance(outcome, BaseException)]
    return alone
