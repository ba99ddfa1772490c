"""The poller on AWS: an EventBridge schedule starts it each minute and it loops every few
seconds inside the invocation, the only writer of job status (a DynamoDB lease makes sure).

Each pass: ``poll_once`` (status transitions, their events, the index messages: the same code as
locally), then the dead-letter queues (a message that used up its deliveries fails its unit or
job at once; it stays in the DLQ, hidden for 12 hours, for an operator and the DLQ alarm), then
the ingest outbox (jobs planned but whose split message was never confirmed sent), then the
results outbox: a fields result settled more than ``publish_grace_s`` ago and still unpublished
(the DynamoDB stream's publisher gave up on it, or its record aged out of the stream's 24 hours)
is published here, by the same code.
"""

from __future__ import annotations

import asyncio
import time

from aws_lambda_powertools import Logger

from extract.fields.publish import publish_results
from extract.handling import handle_dead_letter
from extract.poller import poll_once, remove_stale_decrypted
from infra.aws.deadline import Deadline
from infra.aws.runtime import AwsRuntime, DirectSink, shared
from infra.aws.sqs import MAX_VISIBILITY_S
from ingest.planner import Planner

__all__ = ["logger", "LEASE", "PollClock", "HeldLease", "drain_dead_letters", "drain_unpublished",
           "run_passes", "handler"]

logger = Logger(service="doclake-poller")
LEASE = "poller"


class PollClock:
    """Seconds since this invocation's previous pass (0 on its first): the stall clock counts
    only time a poller was watching."""

    def __init__(self, cap_s: float):
        self.cap_s = cap_s
        self._last: float | None = None

    def tick(self) -> float:
        now = time.monotonic()
        elapsed = 0.0 if self._last is None else min(now - self._last, self.cap_s)
        self._last = now
        return elapsed


class HeldLease:
    """The poller's lease, checked between the steps of a pass (and between dead letters): a
    pass that runs long renews it once a third of its time has gone, and stops at the first
    step it could not renew it for, so two pollers never act at once however slow a pass is."""

    def __init__(self, store, holder: str, ttl_s: float):
        self.store = store
        self.holder = holder
        self.ttl_s = ttl_s
        self._at: float | None = None

    def acquire(self) -> bool:
        if self.store.acquire_lease(LEASE, self.holder, ttl_s=self.ttl_s):
            self._at = time.monotonic()
            return True
        self._at = None
        return False

    def held(self) -> bool:
        if self._at is not None and time.monotonic() - self._at < self.ttl_s / 3:
            return True
        return self.acquire()  # renewed while ours; refused once another poller took it


async def drain_dead_letters(runtime: AwsRuntime, ctx, held=lambda: True) -> int:
    """Fail the unit or job of every message in a DLQ; keep the message (hidden) for people.
    Stops when ``held()`` says the lease is lost."""
    handled = 0
    for name in [n for n in runtime.settings.queue_urls if n.endswith("-dlq")]:
        if not held():
            break
        for received in runtime.queue.receive(name, max_messages=10,
                                              visibility_timeout_s=MAX_VISIBILITY_S):
            if not held():
                runtime.queue.change_visibility(received, 0)  # for the lease's holder
                continue
            await handle_dead_letter(ctx, received)
            handled += 1
    return handled


async def drain_unpublished(runtime: AwsRuntime, ctx, *, batch: int = 100) -> int:
    """Publish the oldest settled results the stream's publisher left behind (older than the
    grace, so the two do not race on a fresh one); returns how many were published."""
    from datetime import timedelta

    from lake.events import utc_now

    cutoff = utc_now() - timedelta(seconds=runtime.settings.publish_grace_s)
    rows = [c for c in runtime.store.unpublished_results(batch)
            if c.finished_at is not None and c.finished_at <= cutoff]
    return await publish_results(ctx, rows) if rows else 0


async def run_passes(runtime: AwsRuntime, *, holder: str, loop_s: float, interval_s: float,
                     sleep=asyncio.sleep, lease_s: float | None = None,
                     deadline: Deadline | None = None) -> int:
    """Poll until ``loop_s`` has passed; returns the passes made under the lease. With the
    invocation's ``deadline``, each step of a pass starts only while it allows, as while the
    lease is held: a pass that runs long stops between steps, never halfway through one."""
    ctx = runtime.context(DirectSink(runtime.writer), f"aws:poller:{holder}")
    planner = Planner(runtime.store, runtime.objects, runtime.queue, runtime.writer.write,
                      worker="aws:ingest")
    clock = PollClock(cap_s=2 * interval_s + 1)
    lease = HeldLease(runtime.store, holder, lease_s or max(3 * interval_s, 15.0))
    until = time.monotonic() + loop_s
    passes = 0
    try:
        def may_go_on() -> bool:
            return lease.held() and (deadline is None or deadline.allows())

        swept = False
        while True:
            if lease.acquire() and may_go_on():
                if not swept:  # once an invocation: the twin of the local recovery's sweep
                    swept = True
                    removed = remove_stale_decrypted(runtime.objects, runtime.store)
                    if removed:
                        logger.info("removed stale decrypted copies", extra={"removed": removed})
                decisions = await poll_once(ctx, elapsed_s=clock.tick())
                dead = await drain_dead_letters(runtime, ctx, may_go_on) if may_go_on() else 0
                resent = planner.resend_unsent() if may_go_on() else 0
                published = await drain_unpublished(runtime, ctx) if may_go_on() else 0
                passes += 1
                if decisions or dead or resent or published:
                    logger.info("pass", extra={"transitions": len(decisions),
                                               "dead_letters": dead, "resent_splits": resent,
                                               "published": published})
            else:
                clock = PollClock(cap_s=clock.cap_s)  # another poller holds it: start afresh
            if time.monotonic() + interval_s > until or (
                    deadline is not None and not deadline.allows(interval_s)):
                return passes
            await sleep(interval_s)
    finally:
        runtime.store.release_lease(LEASE, holder)


@logger.inject_lambda_context
def handler(event, context):
    runtime = shared()
    deadline = Deadline.of(context, margin_s=10)
    loop_s = min(runtime.settings.poll_loop_s, deadline.left_s())
    passes = asyncio.run(run_passes(runtime, holder=context.aws_request_id, loop_s=loop_s,
                                    interval_s=runtime.settings.poll_interval_s,
                                    deadline=deadline))
    return {"passes": passes}
