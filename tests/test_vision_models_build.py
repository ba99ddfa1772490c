"""The vision reader's model client is made once and off the event loop (issue 23, the burst's
start): its TLS set-up took 70 to 150 ms on the loop, while the first splits and renders waited;
the first units of a burst share one build; a build that fails is tried again by the next unit;
a runtime prepares it before the first unit (``ReaderChain.prepare``)."""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass
from types import SimpleNamespace

import pytest

from extract.models.clients import ModelsUnavailable, ProviderSetup
from extract.readers import vision
from extract.readers.base import ReaderChain, ReaderUnavailable
from infra.settings import Settings


@dataclass
class Ctx:
    config: object
    cpu: object = None
    sink: object = None
    scope: object = None


def context(tmp_path) -> Ctx:
    return Ctx(config=Settings(home=tmp_path / "home", reader="simulated").extract_config())


class SlowSetup:
    """``provider_setup`` as a slow TLS set-up would be: it blocks its caller for ``seconds``."""

    def __init__(self, seconds: float, failures: int = 0):
        self.seconds = seconds
        self.failures = failures
        self.calls: list[str] = []  # the thread each call ran on

    def __call__(self, config, provider):
        self.calls.append(threading.current_thread().name)
        time.sleep(self.seconds)
        if self.failures:
            self.failures -= 1
            raise ModelsUnavailable("no key yet")
        return ProviderSetup(SimpleNamespace(provider="fake"), "fake@test", 1.0)


async def ticks_while(work) -> tuple[object, int]:
    """``work``'s result and how many 10 ms sleeps the loop completed meanwhile."""
    ticks = 0

    async def tick():
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    ticker = asyncio.create_task(tick())
    try:
        return await work, ticks
    finally:
        ticker.cancel()


async def test_concurrent_first_units_share_one_build_made_off_the_loop(tmp_path, monkeypatch):
    setup = SlowSetup(0.3)
    monkeypatch.setattr(vision, "provider_setup", setup)
    reader, ctx = vision.SimulatedReader(), context(tmp_path)

    models, ticks = await ticks_while(asyncio.gather(*(reader.models(ctx) for _ in range(10))))
    assert len(setup.calls) == 1 and setup.calls[0] != threading.current_thread().name
    assert all(m is models[0] for m in models)
    assert ticks >= 3, f"the event loop was held during the build ({ticks} ticks in 0.3 s)"
    assert await reader.models(ctx) is models[0] and len(setup.calls) == 1


async def test_a_failed_build_is_reported_to_its_units_and_tried_again_by_the_next(
        tmp_path, monkeypatch):
    setup = SlowSetup(0.05, failures=1)
    monkeypatch.setattr(vision, "provider_setup", setup)
    reader, ctx = vision.SimulatedReader(), context(tmp_path)

    results = await asyncio.gather(reader.models(ctx), reader.models(ctx),
                                   return_exceptions=True)
    assert [type(r) for r in results] == [ReaderUnavailable, ReaderUnavailable]
    assert "no key yet" in str(results[0]) and len(setup.calls) == 1
    assert await reader.models(ctx) is not None and len(setup.calls) == 2


async def test_a_chain_prepares_its_model_reader_before_the_first_unit(tmp_path, monkeypatch):
    setup = SlowSetup(0.01)
    monkeypatch.setattr(vision, "provider_setup", setup)
    reader, ctx = vision.SimulatedReader(), context(tmp_path)
    await ReaderChain([reader]).prepare(ctx)
    assert len(setup.calls) == 1
    await reader.models(ctx)
    assert len(setup.calls) == 1  # the unit found it made

    failing = SlowSetup(0.01, failures=1)
    monkeypatch.setattr(vision, "provider_setup", failing)
    other = vision.SimulatedReader()
    await ReaderChain([other]).prepare(ctx)  # a reader it cannot prepare: said at its first unit
    assert len(failing.calls) == 1
    with pytest.raises(ReaderUnavailable):
        failing.failures = 1
        await other.models(ctx)


def test_a_run_makes_its_model_client_before_its_first_unit_starts(settings, pdf_factory,
                                                                    monkeypatch):
    """The runtime prepares the run's readers when it starts (``LocalRuntime.process``): the
    provider's client is made before the first unit is claimed, once for the run."""
    from extract.models.clients import provider_setup
    from infra.local.runtime import LocalRuntime
    from lake.catalog import query

    made: list[float] = []

    def recorded(config, provider):
        made.append(time.time())
        return provider_setup(config, provider)

    monkeypatch.setattr(vision, "provider_setup", recorded)
    runtime = LocalRuntime(settings.model_copy(update={
        "reader": "simulated", "simulated_latency_scale": 0.001, "simulated_error_rate": 0.0,
        "simulated_timeout_rate": 0.0, "simulated_blocked_rate": 0.0,
        "simulated_empty_rate": 0.0}))
    ingested = runtime.planner().ingest_many([pdf_factory("scan.pdf", 2, textless=[1, 2])])

    def done():
        return all(j.settled for j in runtime.store.list_jobs([i.job_id for i in ingested]))

    asyncio.run(runtime.process(done))
    assert runtime.store.get_job(ingested[0].job_id).status.value == "succeeded"
    (first_start,) = query(settings.lake,
                           "SELECT epoch_ms(min(started_at)) AS t FROM units").to_pylist()
    assert len(made) == 1 and made[0] * 1000 < first_start["t"], (made, first_start)


@dataclass(frozen=True)
class Scope:
    answered: object
    delivery: object = None
    unit_id: str = "u1"
    save_page: object = None


class SaysAnswered:
    """A reader that says its calls are answered, and leaves the pages it is told to leave."""

    def __init__(self, name: str, leaves: set[int], said: list[str]):
        self.name, self.leaves, self.said = name, leaves, said

    async def read(self, ctx, path, pages):
        from extract.readers.base import PageText

        ctx.scope.answered()
        self.said.append(self.name)
        return [PageText(n, "" if n in self.leaves else f"page {n}\n", self.name, 0.0)
                for n in pages]


async def test_only_the_chains_last_reader_may_free_the_units_slot(tmp_path):
    """``answered`` frees the unit's slot: a reader before the chain's last must not, since the
    next reader still reads the pages it left without text."""
    freed: list[str] = []
    said: list[str] = []
    ctx = Ctx(config=context(tmp_path).config, scope=Scope(answered=lambda: freed.append("x")))
    chain = ReaderChain([SaysAnswered("first", {2}, said), SaysAnswered("last", set(), said)])
    pages = await chain.read(ctx, tmp_path / "a.pdf", [1, 2])
    assert [p.reader for p in pages] == ["first", "last"]
    assert said == ["first", "last"] and freed == ["x"], "freed once, by the last reader"
