"""The burst bench's two ceilings: the simulated server's own draws, and the calls as measured.

Issue 23's burst target is a share of C / S. What caps it before the runtime does is the draws'
lognormal tail and the client's time around each call; the bench prints both, so they are
checked here on numbers worked by hand and on a real (small) burst.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time

import pytest

from extract.models import ModelConfig
from extract.models.simulated import SimulatedGemini
from infra.bench.load import LoadSpec, draws_bound, list_schedule_s, run_load

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAACklEQVR4nGNgAAAAAgABSK+kcQAAAABJRU5ErkJggg==")
QUIET = {"simulated_error_rate": 0.0, "simulated_timeout_rate": 0.0,
         "simulated_blocked_rate": 0.0, "simulated_empty_rate": 0.0}


def test_the_draws_ceiling_is_worked_out_from_the_holds_in_arrival_order():
    # Two workers: one takes the 0.3 s hold, the other the three 0.1 s ones; both end at 0.3 s.
    holds = [0.3, 0.1, 0.1, 0.1]
    assert list_schedule_s(holds, 2) == pytest.approx(0.3)
    bound = draws_bound(holds, concurrency=2, service_s=0.2, call_mean_s=0.2)
    assert bound["draws_ideal_ratio"] == pytest.approx((4 / 0.3) / (2 / 0.2))
    assert bound["client_ms_per_call"] == pytest.approx(50.0)  # 0.2 s measured, 0.15 s held
    assert draws_bound([], 2, 0.2, 0.2) == {"draws_ideal_ratio": None,
                                           "client_ms_per_call": None}


def _request() -> bytes:
    return json.dumps({"contents": [{"role": "user", "parts": [
        {"inlineData": {"mimeType": "image/png", "data": base64.b64encode(PNG).decode()}},
        {"text": "Transcribe"}]}]}).encode()


async def test_the_simulated_server_records_the_hold_it_slept_and_draws_it_from_its_seed():
    config = ModelConfig(simulated_latency_scale=0.02, simulated_seed=5, **QUIET)
    server, twin = SimulatedGemini(config), SimulatedGemini(config)
    path = f"/v1beta/models/{config.primary_model}:generateContent"
    started = time.perf_counter()
    status, _, _ = await server("POST", path, _request())
    elapsed = time.perf_counter() - started
    await asyncio.gather(*(server("POST", path, _request()) for _ in range(3)))
    await asyncio.gather(*(twin("POST", path, _request()) for _ in range(4)))
    assert status == 200
    holds = [a.hold_s for a in server.arrivals]
    assert all(h is not None and h > 0 for h in holds)
    assert elapsed >= holds[0]  # the hold recorded is the one slept
    assert sorted(holds) == sorted(a.hold_s for a in twin.arrivals)  # the seed decides
    assert [a.outcome for a in server.arrivals] == ["ok"] * 4


def test_a_burst_reports_the_draws_ceiling_and_the_clients_time_a_call(tmp_path):
    figures = run_load(LoadSpec(docs=12, concurrency=3, service_s=0.15, seed=3), tmp_path)
    assert int(figures["succeeded"]) == 12
    # Every measured call holds its draw and the client's time around it. (The two ceilings
    # are not compared: each schedules in its own order, the server's arrivals against the
    # jobs' creation, and on 12 documents the order alone can move a ceiling by more.)
    assert figures["client_ms_per_call"] > 0
    assert 0 < figures["draws_ideal_ratio"] < 2 and 0 < figures["ideal_ratio"] < 2
