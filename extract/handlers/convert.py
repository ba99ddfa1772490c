"""Convert an Office file to PDF with LibreOffice, store the PDF, then split it like a PDF.

Runs on its own queue so that LibreOffice's concurrency (a process and a few hundred MB each)
is limited apart from the readers'. The converted PDF is stored before it is split, with the
conversion's time as object metadata: a redelivery after a crash finds it and splits it without
converting again, and records the same conversion time. Planned units mean the work is done; a
redelivery then only sends the unit messages never confirmed sent.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from extract.context import Delivery, HandlerContext
from extract.errors import UnsupportedFormat
from extract.formats.links import check_links
from extract.formats.office import Conversion, ConvertLimits, convert_to_pdf
from extract.formats.output_check import check_output
from extract.formats.sniff import OFFICE_FORMATS, Sniffed, sniff_file
from extract.handlers.sources import local_copy, readable_key
from extract.handlers.split import job_context, job_to_plan, plan_pdf
from extract.messages import ConvertMessage
from extract.state import Job
from lake.layout import converted_key

__all__ = ["checked_format", "convert_limits", "handle_convert", "plan_converted",
           "store_conversion"]


def convert_limits(ctx: HandlerContext) -> ConvertLimits:
    config = ctx.config
    return ConvertLimits(timeout_s=config.convert_timeout_s,
                         max_output_bytes=config.max_converted_bytes)


async def handle_convert(ctx: HandlerContext, message: ConvertMessage, delivery: Delivery) -> None:
    job = await job_to_plan(ctx, message.job_id)
    if job is None:
        return

    ctx = job_context(ctx, job)  # the document's own password, as the split had it
    sniffed = await checked_format(ctx, job)
    stored = ctx.objects.head(converted_key(job.document_id, job.job_id))
    if stored is None:
        async with (local_copy(ctx.objects, readable_key(ctx.objects, job)) as source,
                    convert_to_pdf(source, sniffed.format, convert_limits(ctx)) as done):
            stored = await store_conversion(ctx, job, done, source, sniffed)
    await plan_converted(ctx, job, delivery, sniffed, stored)


async def checked_format(ctx: HandlerContext, job: Job) -> Sniffed:
    """The Office format of the job's file, once it is known to link to nothing outside it."""
    async with local_copy(ctx.objects, readable_key(ctx.objects, job)) as source:
        sniffed = await ctx.cpu.run(sniff_file, source, timeout_s=ctx.config.split_timeout_s)
        if sniffed.format not in OFFICE_FORMATS:
            raise UnsupportedFormat(f"the convert step got {sniffed.format.value} content")
        # A document that would fetch a file or an address fails before LibreOffice opens it
        # (links_outside), with or without the sandbox (extract.formats.links says why).
        await ctx.cpu.run(check_links, source, sniffed.format, ctx.config.max_inflated_bytes,
                          timeout_s=ctx.config.split_timeout_s)
    return sniffed


async def store_conversion(ctx: HandlerContext, job: Job, done: Conversion, source: Path,
                           sniffed: Sniffed) -> dict[str, str]:
    """Store the PDF of ``source`` once it is known to hold nothing from outside the document;
    returns the object's metadata (the conversion's time, for a redelivery)."""
    # The second line: a picture in the PDF that the document does not hold came from
    # outside it (extract.formats.output_check); refused before it is stored.
    await ctx.cpu.run(check_output, done.pdf, source, sniffed.format,
                      timeout_s=ctx.config.split_timeout_s)
    data = await asyncio.to_thread(done.pdf.read_bytes)
    stored = {"converter": done.converter, "conversion_ms": f"{done.duration_ms:.1f}",
              "bytes": str(len(data))}
    await asyncio.to_thread(ctx.objects.put, converted_key(job.document_id, job.job_id), data,
                            metadata=stored)
    return stored


async def plan_converted(ctx: HandlerContext, job: Job, delivery: Delivery, sniffed: Sniffed,
                         stored: dict[str, str]) -> None:
    """Split the stored PDF like any PDF, with the conversion's figures."""
    async with local_copy(ctx.objects, converted_key(job.document_id, job.job_id)) as pdf:
        await plan_pdf(ctx, job, delivery, pdf, sniffed.format.value,
                       converter=stored.get("converter"),
                       conversion_ms=float(stored.get("conversion_ms", 0) or 0),
                       converted_bytes=int(stored.get("bytes", 0) or 0))
    ctx.notify()
