"""A vision model reads each page: rendered in a worker process, sent with a Markdown prompt, five
pages of a unit in flight at once, a fallback model for the pages the primary does not read.

Paying once per page: the read handler skips pages already stored, and this reader hands each
page to ``ctx.scope.save_page`` as soon as its answer is in, so a unit whose fifth page fails does
not lose (and pay again for) the four before it. The ledger row of a call is durable before the
page is stored, so the one window where a page is paid twice (the process dies between the answer
and the write) shows in the ledger as two successful calls for that page.

``GeminiReader`` calls Google; ``SimulatedReader`` calls the process's simulated server through
the same client (``extract.models.simulated``).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from extract.formats.pdf import RenderedPage, normalise, render_pages
from extract.models.base import CallSite, Image, Ledger, Prompt
from extract.models.clients import ModelsUnavailable, build_models, provider_setup
from extract.models.fallback import FallbackModels
from extract.readers.base import PageText, ReaderContext, ReaderUnavailable

__all__ = ["PAGE_PROMPT", "GeminiReader", "SimulatedReader"]

PAGE_PROMPT = """Transcribe this document page into Markdown.
- Keep the reading order a person would use (columns left to right, top to bottom).
- Headings as Markdown headings, lists as lists, tables as Markdown tables with every row and cell.
- For charts and figures, write their title, axis labels, legend and any printed values.
- Copy text exactly as printed; do not summarise, translate, correct or add commentary.
- Output only the page's Markdown. If the page is blank, output nothing."""


def render_for_model(path: Path, pages: list[int], password: str | None, dpi: float,
                     max_pixels: int, grayscale: bool, image_format: str) -> list[RenderedPage]:
    """``render_pages`` with positional arguments, for the process pool (runs in a worker)."""
    return render_pages(path, pages, password, dpi=dpi, max_pixels=max_pixels,
                        grayscale=grayscale, image_format=image_format)


class _VisionReader:
    name = "vision"
    provider: Literal["gemini", "simulated"] = "gemini"

    def __init__(self) -> None:
        # The models, built or being built, on the loop that asked first (the limiter is that
        # loop's): done after the first build, so later units get them without waiting.
        self._models: asyncio.Future[FallbackModels] | None = None

    async def models(self, ctx: ReaderContext) -> FallbackModels:
        """Built on first use, on the loop that calls. The provider's client is made on a
        thread: its TLS set-up (70 to 150 ms) held the event loop, and with it the first splits
        and renders of a burst; the units that start meanwhile wait for the same build, not one
        each."""
        if self._models is None or self._models.get_loop() is not asyncio.get_running_loop():
            self._models = asyncio.ensure_future(self._build(ctx))
        models = self._models
        try:
            return await asyncio.shield(models)
        except Exception:
            if self._models is models:  # the next unit tries again, not the same error
                self._models = None
            raise

    async def prepare(self, ctx: ReaderContext) -> None:
        """Build the models now (``ReaderChain.prepare``)."""
        await self.models(ctx)

    async def _build(self, ctx: ReaderContext) -> FallbackModels:
        config = ctx.config.models
        try:
            setup = await asyncio.to_thread(provider_setup, config, self.provider)
            models = build_models(config, self.provider, setup=setup)
        except ModelsUnavailable as error:
            raise ReaderUnavailable(str(error)) from None
        return models

    async def read(self, ctx: ReaderContext, path: Path,
                   pages: Sequence[int]) -> list[PageText]:
        models = await self.models(ctx)
        config = ctx.config.models
        rendered = await ctx.cpu.run(
            render_for_model, path, list(pages), ctx.config.password_value, config.render_dpi,
            config.render_max_pixels, config.render_grayscale, config.render_format,
            timeout_s=ctx.config.read_timeout_s)
        scope = ctx.scope
        gate = asyncio.Semaphore(config.pages_in_flight)
        unanswered = len(rendered)
        all_answered = asyncio.Event()

        async def read_one(number: int, image: Image) -> PageText:
            nonlocal unanswered
            site = CallSite(purpose="read_page", page_number=number)
            if scope is not None:
                delivery = scope.delivery
                site = CallSite(purpose="read_page", document_id=delivery.document_id,
                                job_id=delivery.job_id, unit_id=scope.unit_id,
                                attempt=delivery.attempt, worker=delivery.worker,
                                page_number=number)
            # A unit's reader holds its answered rows until its slot is free (``Ledger``).
            ledger = Ledger(ctx.sink, hold_answers=scope is not None)
            try:
                async with gate:
                    started = time.perf_counter()
                    answer = await models.call(Prompt(PAGE_PROMPT, (image,)), site, ledger)
            finally:
                unanswered -= 1
                if unanswered == 0:
                    all_answered.set()
                # Durable before the page is stored, or before its failure is raised: a crash
                # can lose a page's text, never a payment. Shielded: a cancelled read still
                # hands its rows to the group commit.
                await asyncio.shield(ledger.durable())
            page = PageText(number, normalise(answer.text), answer.model,
                            (time.perf_counter() - started) * 1000)
            if scope is not None:
                await scope.save_page(page)
            return page

        reads = asyncio.gather(
            *(read_one(page.number, Image(page.image, page.mime_type)) for page in rendered),
            return_exceptions=True)
        if scope is not None and rendered:
            await _first_of(all_answered, reads)
            # Every paid call is answered: storing the pages and their ledger rows only waits.
            scope.answered()
        results = await reads
        errors = [r for r in results if isinstance(r, BaseException)]
        if errors:
            # The pages that were read are stored already; the message is retried for the rest.
            raise errors[0]
        return [r for r in results if isinstance(r, PageText)]


async def _first_of(event: asyncio.Event, work: asyncio.Future) -> None:
    """Wait until ``event`` is set or ``work`` is done. Cancelling the wait cancels ``work`` and
    waits for it to end, as awaiting ``work`` itself would: its calls put their cancelled rows
    on the ledger first (``asyncio.wait`` alone would leave them running, and a run that ends
    meanwhile would lose those rows)."""
    waiter = asyncio.ensure_future(event.wait())
    try:
        await asyncio.wait((waiter, work), return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        work.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await work
        raise
    finally:
        waiter.cancel()


class GeminiReader(_VisionReader):
    name = "gemini"
    provider = "gemini"


class SimulatedReader(_VisionReader):
    name = "simulated"
    provider = "simulated"
