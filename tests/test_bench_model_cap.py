"""``doclake bench burst --cap model``: C model calls in flight, the next reads rendering beside them.

A local run whose scarce resource is the model's quota caps the calls (``model_max_in_flight``)
rather than the readers, and lets a few more reads start: their renders and claims happen while
C calls are in flight, and the AIMD limit hands a freed call slot to the first waiting read at
once. Checked on a real small burst: the simulated server never holds more than C calls at once,
while more than C units are in progress.
"""

from __future__ import annotations

from infra.bench import load
from infra.bench.load import LoadSpec, cap_model, for_run, run_load, slot_shares
from lake.catalog import query

UNITS_SQL = """
WITH run_jobs AS ({run_jobs})
SELECT epoch_ms(u.started_at) AS started_ms, epoch_ms(u.finished_at) AS finished_ms
FROM units AS u JOIN run_jobs AS r USING (job_id)
"""


def most_at_once(spans: list[tuple[float, float]]) -> int:
    """The most spans open at one moment (an end before a start at the same instant)."""
    edges = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans])
    most = current = 0
    for _, step in edges:
        current += step
        most = max(most, current)
    return most


def test_the_model_cap_settings_cap_calls_and_widen_reads(settings):
    capped = cap_model(settings.model_copy(update={"cpu_workers": 3}), 7)
    assert capped.extract_config().models.model_max_in_flight == 7
    assert capped.read_concurrency == 10  # 7 calls, 3 reads ahead (one per CPU worker)
    assert capped.concurrency == 10 + load.STAGE_SLOTS
    assert cap_model(settings.model_copy(update={"cpu_workers": 1}), 7).read_concurrency == 9


def test_a_model_capped_burst_holds_at_most_c_calls_while_more_units_run(tmp_path, monkeypatch):
    servers = []
    warm = load.warm_models

    def keep_server(settings):
        server = warm(settings)
        servers.append((server, len(server.arrivals)))  # one kept from an earlier test: skip
        return server

    monkeypatch.setattr(load, "warm_models", keep_server)
    figures = run_load(LoadSpec(docs=16, concurrency=2, service_s=0.15, seed=3, cap="model"),
                       tmp_path)
    assert int(figures["succeeded"]) == 16
    ((server, seen),) = servers
    calls = [(a.at, a.at + a.hold_s) for a in server.arrivals[seen:] if a.hold_s is not None]
    assert len(calls) == 16
    assert most_at_once(calls) <= 2  # the limit: never a third call at the provider
    units = query(str(tmp_path / "lake"), for_run(UNITS_SQL, figures["run_id"])).to_pylist()
    assert len(units) == 16
    # Reads ahead of the calls: a unit is in progress from its claim (before its render) to
    # its pages stored, so more than C of them run at once while C calls are in flight.
    assert most_at_once([(u["started_ms"], u["finished_ms"]) for u in units]) > 2
    # The figures count the calls as the C slots: their time is the model's, nothing else.
    assert abs(figures["share_unit_other"]) < 0.01


def test_a_units_second_call_does_not_count_as_another_unit_taken():
    # One slot; units A and B planned at 0. A makes two calls (1-2 s, 2.5-3 s), B one (4-5 s).
    events = [(0.0, "created"), (0.0, "created"), (0.0, "planned"), (0.0, "planned"),
              (1.0, "taken"), (1.0, "start"), (2.0, "finish"), (2.5, "start"), (3.0, "finish"),
              (4.0, "taken"), (4.0, "start"), (5.0, "finish"), (5.0, "settled"),
              (5.0, "settled")]
    shares = slot_shares(events, concurrency=1, model_s=2.5)  # the three calls
    assert shares["all_busy_after_s"] == 1.0
    assert shares["share_idle_start_waiting"] == 1.0 / 5
    # Both gaps (2-2.5 s inside A, 3-4 s before B) had a unit waiting: B, all along.
    assert shares["share_idle_gaps_waiting"] == 1.5 / 5
    assert shares["share_idle_gaps_unplanned"] == 0
    assert shares["share_unit_other"] == 0
