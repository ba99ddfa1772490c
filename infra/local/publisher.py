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
from collections.abc import Callable

from extract.context import HandlerContext
from extract.fields.publish import publish_pending
from lake.writer import RELAXED_COMMIT

__all__ = ["log", "GATHER_S", "GATHER_STEP_S", "run_publisher", "publish_once"]

log = logging.getLogger(__name__)


GATHER_S = 0.05
"""After a nudge, wait this long for more results: one lake commit carries many, instead of two
small Parquet files (results, result fields) for every document. Short, because the run (and a
caller polling the address) waits for the last result too, and the group committer already
merges the publisher's events with the handlers' into one flush."""
GATHER_STEP_S = 0.005
"""How often the gathering asks whether more results are coming (``more_coming``)."""


async def run_publisher(ctx: HandlerContext, wake: asyncio.Event, stop: asyncio.Event,
                        interval_s: float, gather_s: float = GATHER_S,
                        saturated: Callable[[], bool] = lambda: False,
                        more_coming: Callable[[], bool] = lambda: True) -> None:
    """Publish until ``stop``; errors propagate to the runtime's supervisor, which restarts us.

    While the runtime is ``saturated`` a pass's events are a relaxed commit
    (``lake.writer.RELAXED_COMMIT``), as the poller's are: the result's JSON is already written
    when they are committed, and only its ``published_at`` waits for them, so they gather with
    the reads' events instead of forcing a flush of their own. Forced, each pass wrote two
    files and split the reading's batch in two: on 83 NDAs, 157 files in 30 flushes against
    99 to 106 in 24, and a sixth less CPU for the lake's writer and compaction. Once the
    runtime is not saturated (the run's last results) they flush at once again.

    The gathering after a nudge ends early once no more results are coming (``more_coming``
    false: no fields work in hand or waiting, the runtime not saturated): the run's last result
    is published at once, not ``gather_s`` later (the run waits for it: the last passes of 83
    NDAs came 65 to 75 ms apart)."""
    loop = asyncio.get_running_loop()
    while not stop.is_set():
        wake.clear()
        relaxed = RELAXED_COMMIT.set(saturated())
        try:
            await publish_pending(ctx)
        finally:
            RELAXED_COMMIT.reset(relaxed)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(wake.wait(), timeout=interval_s)
        deadline = loop.time() + gather_s
        while not stop.is_set() and more_coming() and (left := deadline - loop.time()) > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=min(left, GATHER_STEP_S))


async def publish_once(ctx: HandlerContext) -> int:
    """One drain, for the end of a run (after the workers stopped) and for tests."""
    return await publish_pending(ctx)
