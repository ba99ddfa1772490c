"""While the runtime is saturated its relaxed commits, and the poller's, gather for longer.

Saturated: every worker slot taken, or the documents lane with calls waiting for a process. A
message such a commit holds back would wait anyway, so fewer, fuller flushes cost nothing; the
moment it ends the shorter wait is back. The committer's own behaviour (a shorter wait brings a
waiting batch forward) is in ``test_group_commit``; here the runtime's wiring and the count the
signal is made of.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from support import cpu_tasks

import infra.local.runtime as runtime_module
from infra.local.cpu import ProcessPoolRunner
from infra.local.runtime import LocalRuntime, _PollerClock
from lake.writer import RELAXED_COMMIT, GroupCommitter


class NoWrites:
    def write(self, events) -> None:  # never called: nothing is committed here
        raise AssertionError("no flush expected")


def test_saturation_switches_the_committers_relaxed_wait_both_ways(settings):
    settings = settings.model_copy(update={"event_relaxed_flush_s": 0.1,
                                           "event_saturated_flush_s": 0.7})
    runtime = LocalRuntime(settings)
    try:
        runtime._committer = GroupCommitter(NoWrites(), relaxed_delay_s=0.1)
        runtime._saturated = False
        runtime._busy = 1  # a delivery at work (with none, relaxed commits do not wait)
        runtime._note_saturation(True)
        assert runtime._committer.relaxed_delay_s == 0.7
        runtime._note_saturation(False)
        assert runtime._committer.relaxed_delay_s == 0.1
    finally:
        runtime.close()


def test_the_pollers_commits_are_relaxed_only_while_saturated(settings, monkeypatch):
    seen: list[bool] = []

    async def poll_once(ctx, **kwargs):
        seen.append(RELAXED_COMMIT.get())
        return []

    monkeypatch.setattr(runtime_module, "poll_once", poll_once)
    runtime = LocalRuntime(settings)
    try:
        clock = _PollerClock(settings.poll_interval_s)

        async def two_passes() -> bool:
            runtime._saturated = True
            await runtime._poll(None, clock)
            runtime._saturated = False
            await runtime._poll(None, clock)
            return RELAXED_COMMIT.get()

        assert asyncio.run(two_passes()) is False  # the pass's own setting does not leak
        assert seen == [True, False]
    finally:
        runtime.close()


async def test_the_pool_counts_calls_in_flight_including_those_waiting_and_those_that_fail():
    runner = ProcessPoolRunner(1)
    try:
        calls = [asyncio.ensure_future(runner.run(cpu_tasks.sleep_for, 0.3, timeout_s=30))
                 for _ in range(3)]
        await asyncio.sleep(0.05)
        assert runner.in_flight == 3 > runner.workers  # two wait for the one process
        await asyncio.gather(*calls)
        assert runner.in_flight == 0
        failed = asyncio.ensure_future(runner.run(cpu_tasks.die, timeout_s=30))
        await asyncio.gather(failed, return_exceptions=True)
        assert runner.in_flight == 0
    finally:
        runner.close()


def test_the_publishers_commits_are_relaxed_only_while_saturated(monkeypatch):
    """The publisher's events ride the reads' flushes while the runtime is saturated; when it
    is not (the run's last results) they flush at once, as a forced commit does."""
    import infra.local.publisher as publisher

    seen: list[bool] = []
    states = iter([True, False, True])
    stop = asyncio.Event()

    async def publish_pending(ctx) -> int:
        seen.append(RELAXED_COMMIT.get())
        if len(seen) == 3:
            stop.set()
        return 0

    monkeypatch.setattr(publisher, "publish_pending", publish_pending)

    async def three_passes() -> bool:
        wake = asyncio.Event()
        wake.set()
        await publisher.run_publisher(None, wake, stop, interval_s=0.01, gather_s=0.0,
                                      saturated=lambda: next(states))
        return RELAXED_COMMIT.get()

    assert asyncio.run(three_passes()) is False  # the pass's own setting does not leak
    assert seen == [True, False, True]


@pytest.fixture
def publisher_given(settings, monkeypatch):
    """A runtime that ran once, and the keyword arguments it gave its publisher."""
    captured = {}

    async def run_publisher(ctx, wake, stop, interval_s, **kwargs):
        captured.update(kwargs)
        await stop.wait()

    monkeypatch.setattr(runtime_module, "run_publisher", run_publisher)
    runtime = LocalRuntime(settings)
    try:
        asyncio.run(runtime.process(lambda: True))
        yield runtime, captured
    finally:
        runtime.close()


def test_the_runtime_gives_its_publisher_its_saturation(publisher_given):
    runtime, captured = publisher_given
    saturated = captured["saturated"]
    runtime._saturated = True
    assert saturated() is True
    runtime._saturated = False
    assert saturated() is False


@pytest.mark.parametrize("coming", [True, False])
def test_the_publisher_gathers_results_only_while_more_are_coming(monkeypatch, coming):
    """After a nudge the publisher waits up to ``gather_s`` for more results, so one commit
    carries many; once none are coming (the run's last result) it publishes at once."""
    import infra.local.publisher as publisher

    passes: list[float] = []
    stop = asyncio.Event()
    wake = asyncio.Event()
    asked: list[bool] = []

    async def publish_pending(ctx) -> int:
        passes.append(asyncio.get_running_loop().time())
        if len(passes) == 1:
            wake.set()  # a result stored meanwhile: the nudge
        else:
            stop.set()
        return 0

    monkeypatch.setattr(publisher, "publish_pending", publish_pending)

    def more_coming() -> bool:
        asked.append(coming)
        return coming

    async def two_passes() -> None:
        await publisher.run_publisher(None, wake, stop, interval_s=5.0, gather_s=0.4,
                                      more_coming=more_coming)

    asyncio.run(two_passes())
    assert asked  # the gathering asked
    gap = passes[1] - passes[0]
    if coming:
        assert gap >= 0.39  # the whole gathering
    else:
        assert gap < 0.2  # none of it


def test_the_runtime_tells_its_publisher_when_more_results_are_coming(publisher_given):
    """More results are coming while fields work is in hand or waiting in its queue, or while
    the runtime is saturated; not otherwise."""
    from extract.messages import FIELDS_QUEUE

    runtime, captured = publisher_given
    more_coming = captured["more_coming"]
    assert more_coming() is False
    runtime._saturated = True
    assert more_coming() is True
    runtime._saturated = False
    entry = runtime.activity.start(FIELDS_QUEUE, json.dumps({"job_id": "j-1"}))
    assert more_coming() is True
    runtime.activity.end(entry)
    assert more_coming() is False
    runtime.queue.send(FIELDS_QUEUE, json.dumps({"job_id": "j-2"}))
    assert more_coming() is True


@pytest.mark.parametrize("another_at_work", [False, True])
async def test_relaxed_commits_wait_only_while_a_delivery_holds_a_slot(settings, another_at_work):
    """A handler's events after it released its slot are relaxed: they may wait for others'
    to share a flush. With no delivery left holding a slot nobody can join them, and they are
    written at once (a burst's last unit waited 0.09 s for nobody); with another at work they
    wait the relaxed time as before."""
    from types import SimpleNamespace

    from extract.context import release_slot
    from lake.events import PageRead

    settings = settings.model_copy(update={"event_relaxed_flush_s": 1.0})
    runtime = LocalRuntime(settings)
    committer = runtime._committer = GroupCommitter(runtime.writer, max_delay_s=0.0,
                                                    relaxed_delay_s=1.0)
    holding, let_go = asyncio.Event(), asyncio.Event()
    waited: list[float] = []

    def event(number: int) -> PageRead:
        return PageRead(job_id="j", unit_id="u", page_number=number, reader="text", chars=1)

    async def handle(ctx, batch, inbox) -> None:
        if batch[0].body == "other":  # holds its slot until told
            holding.set()
            await let_go.wait()
            return
        await committer.commit([event(1)])  # a flush starts: the relaxed wait counts from it
        release_slot()
        loop = asyncio.get_running_loop()
        started = loop.time()
        await committer.commit([event(2)])  # relaxed: the slot is released
        waited.append(loop.time() - started)

    def message(body: str):
        return SimpleNamespace(queue="read", body=body, schedule_key=None, message_id=body)

    runtime._handle = handle
    try:
        other = None
        if another_at_work:
            other = asyncio.create_task(runtime._handle_holding_a_slot(
                None, (message("other"),), asyncio.Queue()))
            await holding.wait()
        await runtime._handle_holding_a_slot(None, (message("mine"),), asyncio.Queue())
        let_go.set()
        if other is not None:
            await other
        await committer.close()
    finally:
        runtime.close()
    if another_at_work:
        assert waited[0] >= 0.8
    else:
        assert waited[0] < 0.5
