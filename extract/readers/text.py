"""The PDF's own text layer, read by PDFium in a worker process: free, exact, and instant."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from extract.formats.pdf import read_text_layer
from extract.readers.base import PageText, ReaderContext


class TextLayerReader:
    name = "text"

    async def read(self, ctx: ReaderContext, path: Path,
                   pages: Sequence[int]) -> list[PageText]:
        started = time.perf_counter()
        texts = await ctx.cpu.run(read_text_layer, path, list(pages), ctx.config.password_value,
                                  timeout_s=ctx.config.read_timeout_s)
        per_page_ms = (time.perf_counter() - started) * 1000 / max(1, len(texts))
        return [PageText(number, text, self.name, per_page_ms) for number, text in texts]
