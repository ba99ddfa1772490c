"""The publisher's local driver: the outbox read whenever a handler stores a result.

On AWS a DynamoDB stream invokes the publisher per change; here a task waits for the handlers'
nudge (``HandlerContext.notify``) or, failing that, a timer, and drains the job store's outbox.
One task per runtime; two runtimes on one home may both publish a result, which is harmless
(same bytes, same event ids, ``published_at`` set once).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from extract.context import HandlerContext
from extract.fields.publish import publish_pending

__all__ = ["log", "GATHER_S", "run_publisher", "publish_once"]

log = logging.getLogger(__name__)


GATHER_S = 0.05
"""After a nudge, wait this long for more results: one lake commit carries many, instead of two
small Parquet files (results, result fields) for every document. Short, because the run (and a
caller polling the address) waits for the last result too, and the group committer already
merges the publisher's events with the handlers' into one flush."""


async def run_publisher(ctx: HandlerContext, wake: asyncio.Event, stop: asyncio.Event,
                        interval_s: float, gather_s: float = GATHER_S) -> None:
    """Publish until ``stop``; errors propagate to the runtime's supervisor, which restarts us."""
    while not stop.is_set():
        wake.clear()
        await publish_pending(ctx)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(wake.wait(), timeout=interval_s)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=gather_s)


async def publish_once(ctx: HandlerContext) -> int:
    """One drain, for the end of a run (after the workers stopped) and for tests."""
    return await publish_pending(ctx)
