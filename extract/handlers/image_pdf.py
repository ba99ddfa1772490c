"""An image upload's PDF: made once from its frames, stored, then split like any PDF.

The split step makes it (``extract.formats.image``, in a worker with the split's time limit) and
stores it where an Office file's converted PDF goes (``lake.layout.converted_key``), with the
time it took as object metadata: a redelivery after a crash finds it and splits it without
decoding the image again. The read units then read that PDF (``sources.pdf_key``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path

from extract.context import HandlerContext
from extract.formats.image import ImageLimits, image_to_pdf
from extract.formats.scratch import scratch_folder
from extract.state import Job
from lake.layout import converted_key

__all__ = ["CONVERTER", "image_limits", "stored_image_pdf"]

CONVERTER = "pillow"
"""The converter named in the split's event (``JobSplit.converter``)."""


def image_limits(ctx: HandlerContext) -> ImageLimits:
    config = ctx.config
    return ImageLimits(max_pixels=config.max_image_pixels, max_frames=config.max_image_frames,
                       assumed_dpi=config.ocr_dpi,
                       max_memory_bytes=config.max_parse_memory_bytes,
                       max_pdf_bytes=config.max_converted_bytes)


async def stored_image_pdf(ctx: HandlerContext, job: Job, path: Path) -> tuple[str, dict[str, str]]:
    """The key of the job's image PDF and its metadata, made and stored first if need be."""
    key = converted_key(job.document_id, job.job_id)
    stored = await asyncio.to_thread(ctx.objects.head, key)
    if stored is not None:
        return key, stored
    folder = scratch_folder("image")
    target = folder / "image.pdf"
    try:
        made = await ctx.cpu.run(image_to_pdf, path, target, image_limits(ctx),
                                 timeout_s=ctx.config.split_timeout_s)
        stored = {"converter": CONVERTER, "conversion_ms": f"{made.duration_ms:.1f}",
                  "bytes": str(made.bytes)}
        data = await asyncio.to_thread(target.read_bytes)
        await asyncio.to_thread(ctx.objects.put, key, data, metadata=stored)
    finally:
        with contextlib.suppress(OSError):
            target.unlink()
        with contextlib.suppress(OSError):
            os.rmdir(folder)
    return key, stored
