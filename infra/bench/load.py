"""Burst and sustained load on the embedded runtime, graded against Little's law.

A run makes ``docs`` PDFs named ``<run_id>-NNNN.pdf``, lets them arrive (all at once, like a
dropped data room, or at a steady rate), reads them with the simulated provider at the latency
scale that holds each document about ``service_s`` seconds (``infra.bench.load_docs``), and runs the
same ``LocalRuntime`` as ``doclake run`` with ``concurrency`` workers. Nothing is timed from
Python for the figures: they are computed by ``RUN_SQL`` over the lake the run wrote, so anyone
can recompute them with ``doclake sql`` (the README shows how).

The yardstick: once every worker is busy, throughput is C / S (Little's law, L = lambda W with
L = C in service); a burst of N documents then drains in N S / C. The ratio of the measured
throughput to C / S says how much of the workers' time went to the documents.
"""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from infra.bench.load_docs import latency_scale, make_documents

__all__ = ["RUN_JOBS_SQL", "for_run", "PER_JOB_SQL", "RUN_SQL", "TIMELINE_SQL", "CALLS_TIMELINE_SQL",
           "worker_time", "slot_shares", "HOLDS_SQL", "list_schedule_s", "schedule_bound", "draws_bound",
           "LoopLag", "run_sql", "LoadSpec", "PacedIngest", "STAGE_SLOTS", "cap_reads", "cap_model",
           "warm_models", "run_load", "little"]

if TYPE_CHECKING:
    from extract.models.simulated import SimulatedGemini

# The jobs of one run: its documents are named ``<run_id>-NNNN.pdf``. Every query below starts
# from it (``for_run`` fills it in).
RUN_JOBS_SQL = """
  SELECT j.job_id, j.dt, j.status, j.pages, j.created_at, j.finished_at
  FROM jobs AS j
  JOIN documents AS d ON d.dt = j.dt AND d.document_id = j.document_id
  WHERE d.source_name LIKE '{run_id}-%'
"""


def for_run(template: str, run_id: str) -> str:
    """``template`` with its ``{run_jobs}`` set to this run's jobs (run ids are generated:
    letters, digits and dashes only, checked here because they go into SQL text)."""
    if not all(c.isalnum() or c == "-" for c in run_id):
        raise ValueError(f"not a run id: {run_id!r}")
    return template.format(run_jobs=RUN_JOBS_SQL.format(run_id=run_id))


# One row per job of the run: its end-to-end latency split into queue wait (created -> first
# unit started: waiting for a worker, splitting included), read (first unit started -> last unit
# finished: the model and storage) and publish (last unit finished -> the poller marks the job
# succeeded). ``worker_ms`` is the workers' own time on its units (Little's law's S).
PER_JOB_SQL = """
WITH run_jobs AS ({run_jobs}), calls AS (
  SELECT m.dt, m.job_id, sum(m.latency_ms) AS model_ms, count(*) AS model_calls,
         CAST(sum(m.cost_usd) AS DOUBLE) AS cost_usd
  FROM model_calls AS m JOIN run_jobs AS r ON r.dt = m.dt AND r.job_id = m.job_id
  GROUP BY m.dt, m.job_id
)
SELECT r.job_id, r.status, r.pages, r.created_at, r.finished_at,
       date_diff('millisecond', r.created_at, r.finished_at) AS latency_ms,
       date_diff('millisecond', r.created_at, min(u.started_at)) AS queue_ms,
       date_diff('millisecond', min(u.started_at), max(u.finished_at)) AS read_ms,
       date_diff('millisecond', max(u.finished_at), r.finished_at) AS publish_ms,
       sum(u.duration_ms) AS worker_ms, max(u.duration_ms) AS slowest_unit_ms,
       max(c.model_ms) AS model_ms, max(c.model_calls) AS model_calls, max(c.cost_usd) AS cost_usd
FROM run_jobs AS r
JOIN units AS u ON u.dt = r.dt AND u.job_id = r.job_id
LEFT JOIN calls AS c ON c.dt = r.dt AND c.job_id = r.job_id
GROUP BY r.job_id, r.status, r.pages, r.created_at, r.finished_at
"""

# The run's figures from the rows above: what the bench prints, as one SQL statement.
RUN_SQL = """
WITH per_job AS ({per_job})
SELECT count(*) AS documents,
       sum(CASE WHEN status = 'succeeded' THEN 1 ELSE 0 END) AS succeeded,
       date_diff('millisecond', min(created_at), max(finished_at)) / 1000.0 AS drain_s,
       date_diff('millisecond', min(created_at), max(created_at)) / 1000.0 AS arrival_span_s,
       count(*) * 60000.0 / date_diff('millisecond', min(created_at), max(finished_at))
         AS throughput_docs_per_min,
       avg(worker_ms) / 1000.0 AS measured_service_s,
       max(slowest_unit_ms) / 1000.0 AS slowest_unit_s,
       quantile_cont(latency_ms, 0.5) / 1000.0 AS latency_p50_s,
       quantile_cont(latency_ms, 0.9) / 1000.0 AS latency_p90_s,
       avg(latency_ms) / 1000.0 AS latency_mean_s,
       avg(queue_ms) / 1000.0 AS queue_wait_mean_s,
       quantile_cont(queue_ms, 0.5) / 1000.0 AS queue_wait_p50_s,
       avg(read_ms) / 1000.0 AS read_mean_s,
       avg(model_ms) / 1000.0 AS model_call_mean_s,
       avg(publish_ms) / 1000.0 AS publish_mean_s,
       quantile_cont(publish_ms, 0.9) / 1000.0 AS publish_p90_s,
       sum(model_calls) AS model_calls,
       CAST(sum(cost_usd) AS DOUBLE) AS cost_usd
FROM per_job
"""


# Where the C workers' time went, for ``worker_time``: the moments each unit of the run was
# planned (its read message sent), started and finished, and each job created and finished.
_JOBS_TIMELINE = """
SELECT 'created' AS kind, epoch_ms(created_at) AS at_ms FROM run_jobs
UNION ALL SELECT 'settled', epoch_ms(finished_at) FROM run_jobs
UNION ALL SELECT 'planned', epoch_ms(min(p.occurred_at))
  FROM ev_unit_planned AS p JOIN run_jobs AS r ON r.job_id = p.job_id
  GROUP BY p.job_id, p.unit_id
"""
# A unit is taken (no longer waiting) when it starts; a slot is busy from 'start' to 'finish'.
TIMELINE_SQL = "WITH run_jobs AS ({run_jobs})" + _JOBS_TIMELINE + """
UNION ALL SELECT 'taken', epoch_ms(u.started_at) FROM units AS u JOIN run_jobs AS r USING (job_id)
UNION ALL SELECT 'start', epoch_ms(u.started_at) FROM units AS u JOIN run_jobs AS r USING (job_id)
UNION ALL SELECT 'finish', epoch_ms(u.finished_at) FROM units AS u JOIN run_jobs AS r USING (job_id)
"""
# The same with the model's calls as the C slots (``--cap model``: more units in progress than
# C, at most C of them in a call). A call's row is written once it is answered, so it started
# ``latency_ms`` before; a unit is taken at its first call (a unit of five pages makes five, a
# retry one more).
CALLS_TIMELINE_SQL = """
WITH run_jobs AS ({run_jobs}), calls AS (
  SELECT m.job_id, m.unit_id, epoch_ms(m.occurred_at) - m.latency_ms AS started_ms,
         epoch_ms(m.occurred_at) AS finished_ms
  FROM model_calls AS m JOIN run_jobs AS r USING (job_id)
)""" + _JOBS_TIMELINE + """
UNION ALL SELECT 'taken', min(started_ms) FROM calls WHERE unit_id IS NOT NULL
  GROUP BY job_id, unit_id
UNION ALL SELECT 'start', started_ms FROM calls
UNION ALL SELECT 'finish', finished_ms FROM calls
"""


def worker_time(lake: str, run_id: str, concurrency: int, model_s: float,
                timeline: str = TIMELINE_SQL) -> dict:
    """Shares of the C read workers' time over the drain (C x drain_s) from the lake's timeline
    (``TIMELINE_SQL``: units hold the C slots; ``CALLS_TIMELINE_SQL``: model calls do).

    Busy: a unit in progress, split into the model's calls (``model_calls``) and the rest of
    the unit (rendering, storing, events). Idle, by phase: ``start`` until all C are first busy
    (``start_unplanned``: no unit planned yet, i.e. splitting; ``start_waiting``: a planned unit
    waits for a slot, i.e. dispatch); ``gaps`` from then to the last unit's start (a slot free
    between two units while the backlog lasts: the hand-off, receive and scheduling);
    ``tail`` from the last start to the last finish (the last wave's service times: no work left
    to give); ``publish`` to the last job's success."""
    from lake.catalog import query

    events = [(r["at_ms"] / 1000.0, r["kind"])
              for r in query(lake, for_run(timeline, run_id)).to_pylist()]
    return slot_shares(events, concurrency, model_s)


def slot_shares(events: list[tuple[float, str]], concurrency: int, model_s: float) -> dict:
    """``worker_time``'s figures from its timeline: (seconds, kind) pairs in any order, kinds
    'created', 'planned', 'taken' (a planned unit no longer waits), 'start' and 'finish' (a slot
    busy between them, several times for one unit where calls are the slots) and 'settled'."""
    rank = {"finish": 0, "planned": 1, "taken": 2, "start": 2, "created": 3, "settled": 4}
    events = sorted(events, key=lambda e: (e[0], rank[e[1]]))
    first = min(t for t, k in events if k == "created")
    end = max(t for t, k in events if k == "settled")
    last_start = max(t for t, k in events if k == "start")
    last_finish = max(t for t, k in events if k == "finish")
    idle = dict.fromkeys(("start_unplanned", "start_waiting", "gaps_unplanned", "gaps_waiting",
                          "tail", "publish"), 0.0)
    busy = waiting = 0
    busy_s = 0.0
    full_at: float | None = None
    before = first
    for at, kind in events:
        if at > before:
            span = at - before
            free = max(0, concurrency - busy) * span
            busy_s += busy * span
            if before >= last_finish:
                idle["publish"] += free
            elif before >= last_start:
                idle["tail"] += free
            else:
                phase = "start" if full_at is None else "gaps"
                idle[f"{phase}_{'waiting' if waiting else 'unplanned'}"] += free
            before = at
        if kind == "planned":
            waiting += 1
        elif kind == "taken":
            waiting -= 1
        elif kind == "start":
            busy += 1
        elif kind == "finish":
            busy -= 1
        if full_at is None and busy >= concurrency:
            full_at = at
    capacity = concurrency * (end - first)
    shares = {"model": model_s, "unit_other": busy_s - model_s,
              **{f"idle_{k}": v for k, v in idle.items()}}
    return {"all_busy_after_s": None if full_at is None else full_at - first,
            "tail_s": last_finish - last_start,
            **{f"share_{k}": v / capacity for k, v in shares.items()}}


# Each document's hold at the provider (its model calls' latency), in arrival order: the workload
# the drain is made of, without the runtime around it.
HOLDS_SQL = """
WITH run_jobs AS ({run_jobs})
SELECT r.job_id, sum(m.latency_ms) / 1000.0 AS hold_s
FROM run_jobs AS r JOIN model_calls AS m ON m.dt = r.dt AND m.job_id = r.job_id
GROUP BY r.job_id, r.created_at
ORDER BY r.created_at, r.job_id
"""


def list_schedule_s(holds: list[float], concurrency: int) -> float:
    """How long ``holds`` take on ``concurrency`` workers that each take the next one the moment
    they are free (FIFO, no overhead at all): the drain a perfect runtime would reach."""
    import heapq

    free_at = [0.0] * concurrency
    for hold in holds:
        heapq.heappush(free_at, heapq.heappop(free_at) + hold)
    return max(free_at)


def schedule_bound(lake: str, run_id: str, concurrency: int, service_s: float) -> dict:
    """The drain these very draws allow, beside C / S: with lognormal holds the last wave's
    slowest documents leave workers idle that no runtime can fill (at the write-up's sigma of
    0.762, 200 documents on 10 workers reach about 0.92 of C / S on average with zero overhead).
    ``ideal_ratio`` is that ceiling for this run; ``runtime_efficiency`` is the measured drain
    against it, the share the runtime itself kept."""
    from lake.catalog import query

    holds = [r["hold_s"] for r in query(lake, for_run(HOLDS_SQL, run_id)).to_pylist()]
    if not holds:
        return {"ideal_drain_s": None, "ideal_ratio": None}
    ideal = list_schedule_s(holds, concurrency)
    return {"ideal_drain_s": ideal,
            "ideal_ratio": (len(holds) / ideal) / (concurrency / service_s)}


def draws_bound(holds_s: list[float], concurrency: int, service_s: float,
                call_mean_s: float | None) -> dict:
    """The ceiling of the simulated server's own draws, beside ``schedule_bound``'s.

    ``schedule_bound`` schedules the calls as the ledger measured them: each includes the
    client's time around the server's hold (the SDK building and parsing, HTTP, the event loop's
    waits). Scheduling the holds the server drew (``holds_s``, in arrival order) gives what no
    runtime and no client could beat: ``draws_ideal_ratio``. The gap between the two ceilings
    is the client's, ``client_ms_per_call``: at S = 0.2 s, 10 ms a call costs 5 % of C / S."""
    if not holds_s:
        return {"draws_ideal_ratio": None, "client_ms_per_call": None}
    ideal = list_schedule_s(holds_s, concurrency)
    client = None if call_mean_s is None else 1000 * (call_mean_s - sum(holds_s) / len(holds_s))
    return {"draws_ideal_ratio": (len(holds_s) / ideal) / (concurrency / service_s),
            "client_ms_per_call": client}


class LoopLag:
    """How late the event loop wakes a 10 ms sleep: a blocked loop delays every worker's hand-off."""

    def __init__(self) -> None:
        self.samples: list[float] = []

    async def watch(self) -> None:
        while True:
            before = time.perf_counter()
            await asyncio.sleep(0.01)
            self.samples.append(time.perf_counter() - before - 0.01)

    def figures(self) -> dict:
        lags = sorted(self.samples) or [0.0]
        return {"loop_lag_p50_ms": 1000 * lags[len(lags) // 2],
                "loop_lag_p99_ms": 1000 * lags[int(len(lags) * 0.99)],
                "loop_lag_max_ms": 1000 * lags[-1],
                "loop_lag_total_s": sum(lags)}


def run_sql(run_id: str) -> str:
    """``RUN_SQL`` for one run (run ids are generated: letters, digits and dashes only)."""
    return RUN_SQL.format(per_job=for_run(PER_JOB_SQL, run_id))


@dataclass(frozen=True)
class LoadSpec:
    """What to throw at the runtime. ``rate`` None: a burst (every document at once)."""

    docs: int
    concurrency: int
    service_s: float
    pages: int = 1
    rate: float | None = None
    poll_interval_s: float = 1.0
    faults: bool = False
    seed: int = 14
    cap: str = "read"  # read: C readers + STAGE_SLOTS for the rest; all: C for every stage;
    # model: C model calls in flight, readers ahead of them (``cap_model``)
    sigma: float | None = None  # the simulated latency's sigma; None: the write-up's fit

    @property
    def mode(self) -> str:
        return "burst" if self.rate is None else "sustained"


class PacedIngest:
    """Plans one file every ``1 / rate`` seconds on its own thread and connections (as
    ``BackgroundIngest`` does for a burst), so arrivals follow the clock, not the workers."""

    def __init__(self, settings, objects, writer, files: list[Path], rate: float):
        self._args = (settings, objects, writer)
        self._files, self._rate = files, rate
        self.ids: list[str] = []
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="paced-ingest", daemon=True)

    def start(self) -> PacedIngest:
        self._thread.start()
        return self

    @property
    def finished(self) -> bool:
        return not self._thread.is_alive()

    def _run(self) -> None:
        from infra.local.jobstore import SqliteJobStore
        from infra.local.queue import SqliteQueue
        from ingest.planner import Planner

        settings, objects, writer = self._args
        store = SqliteJobStore(settings.home / "jobs.db")
        queue = SqliteQueue(settings.home / "queue.db", max_receives=settings.max_receives)
        planner = Planner(store, objects, queue, writer.write)
        started = time.monotonic()
        try:
            for n, path in enumerate(self._files):
                time.sleep(max(0.0, started + n / self._rate - time.monotonic()))
                self.ids.append(planner.ingest(path).job_id)
        except BaseException as error:  # reported by the caller
            self.error = error
        finally:
            store.close()
            queue.close()


STAGE_SLOTS = 4


def cap_reads(settings, concurrency: int):
    """Settings that cap the read stage at ``concurrency`` (``read_concurrency``) and give
    splitting and indexing ``STAGE_SLOTS`` workers of their own, as on AWS, where the read
    function's reserved concurrency is the cap and the split and index functions have theirs."""
    return settings.model_copy(update={"concurrency": concurrency + STAGE_SLOTS,
                                       "read_concurrency": concurrency})


def cap_model(settings, concurrency: int):
    """Settings that cap the model's calls in flight at ``concurrency`` (``model_max_in_flight``,
    the ceiling of the AIMD limit every call waits on) and let ``cpu_workers`` more reads run
    (at least 2): a local run whose scarce resource is the model's quota, not its readers. A read
    holds its reader's slot from its render to its answer, and on AWS the whole handler holds the
    function's concurrency (``cap_reads``); here the next units render while C calls are in
    flight and wait at the limit, which hands a freed call slot to the first of them at once."""
    readers = concurrency + max(2, settings.cpu_workers)
    return cap_reads(settings, readers).model_copy(update={"model_max_in_flight": concurrency})


def warm_models(settings) -> SimulatedGemini:
    """Import the model SDK and start the simulated provider before the first arrival: a cold
    start (about 3 s here, mostly importing google-genai) is a constant that a scaled-down burst
    would otherwise count against a one-minute drain (a real one pays it once in minutes).
    Returns the server's handler, whose ``arrivals`` hold what it drew for each call."""
    import google.genai  # noqa: F401

    from extract.models.simulated import ensure_server

    return ensure_server(settings.extract_config().models)[1]


def run_load(spec: LoadSpec, home: Path) -> dict:
    """Run ``spec`` in ``home`` (its lake keeps the events) and return the figures."""
    from infra.local.runtime import LocalRuntime
    from infra.local.settled_watch import SettledWatch
    from infra.settings import Settings
    from lake.catalog import query
    from lake.compaction import compact_after_run

    sigma = {} if spec.sigma is None else {"simulated_latency_sigma": spec.sigma}
    scale = latency_scale(spec.service_s, spec.pages,
                          **({} if spec.sigma is None else {"sigma": spec.sigma}))
    stamp = datetime.now(UTC).strftime("%Y%m%dt%H%M%S")
    run_id = f"{spec.mode}-{stamp}"
    files = make_documents(home / "bench-input" / run_id, run_id, spec.docs, spec.pages)
    no_faults = {} if spec.faults else {
        "simulated_error_rate": 0.0, "simulated_timeout_rate": 0.0,
        "simulated_blocked_rate": 0.0, "simulated_empty_rate": 0.0}
    settings = Settings(home=home, concurrency=spec.concurrency, reader="simulated",
                        poll_interval_s=spec.poll_interval_s, simulated_latency_scale=scale,
                        simulated_seed=spec.seed, **no_faults, **sigma)
    if spec.cap == "read":
        settings = cap_reads(settings, spec.concurrency)
    elif spec.cap == "model":
        settings = cap_model(settings, spec.concurrency)
    runtime = LocalRuntime(settings)
    runtime.cpu.warm()
    server = warm_models(settings)
    seen = len(server.arrivals)  # a server kept from an earlier run in this process: skip those
    if spec.rate is None:
        ingest = runtime.ingest_in_background(files)
    else:
        ingest = PacedIngest(settings, runtime.objects, runtime.writer, files, spec.rate).start()

    watch: list[SettledWatch] = []

    def done() -> bool:  # ``doclake run``'s stop test, once every document is in
        if not ingest.finished:
            return False
        if not watch:
            ids = ([i.job_id for i in ingest.result()] if spec.rate is None else ingest.ids)
            watch.append(SettledWatch(runtime.store, ids))
        return watch[0]()

    lag = LoopLag()

    async def watched():
        watcher = asyncio.create_task(lag.watch())
        try:
            return await runtime.process(done)
        finally:
            watcher.cancel()

    started = time.perf_counter()
    stats = asyncio.run(watched())
    wall = time.perf_counter() - started
    if spec.rate is not None and ingest.error is not None:
        raise ingest.error
    compact_after_run(settings.lake)
    row = query(settings.lake, run_sql(run_id)).to_pylist()[0]
    figures = little(spec, run_id, scale, wall, row)
    if spec.rate is None and spec.pages == 1:  # one call a document: its hold is the call's
        bound = schedule_bound(settings.lake, run_id, spec.concurrency, spec.service_s)
        if bound["ideal_drain_s"]:
            bound["runtime_efficiency"] = bound["ideal_drain_s"] / row["drain_s"]
        if not spec.faults:  # one answered call a document: its hold is the document's
            drawn = sorted((a.at, a.hold_s) for a in server.arrivals[seen:]
                           if a.hold_s is not None)
            bound.update(draws_bound([hold for _, hold in drawn], spec.concurrency,
                                     spec.service_s, row["model_call_mean_s"]))
        figures.update({k: v if v is None else round(v, 4) for k, v in bound.items()})
    model_s = (row["model_call_mean_s"] or 0.0) * row["documents"]
    figures.update({k: (round(v, 4) if isinstance(v, float) else v) for k, v in {
        **worker_time(settings.lake, run_id, spec.concurrency, model_s,
                      CALLS_TIMELINE_SQL if spec.cap == "model" else TIMELINE_SQL),
        **lag.figures()}.items()})
    figures["stage_seconds"] = {k: v["seconds"] for k, v in stats.stages.as_dict().items()}
    return figures


def little(spec: LoadSpec, run_id: str, scale: float, wall_s: float, row: dict) -> dict:
    """The measured row beside Little's law: the bound C / S, the ratio, the predicted drain."""
    c, s, n = spec.concurrency, spec.service_s, spec.docs
    bound = 60.0 * c / s
    measured_s = row["measured_service_s"] or float("nan")
    figures = {"run_id": run_id, **asdict(spec), "mode": spec.mode, "latency_scale": scale,
               "bound_docs_per_min": bound, "predicted_drain_s": n * s / c, **row,
               "wall_s": wall_s}
    figures["ratio"] = row["throughput_docs_per_min"] / bound
    figures["measured_bound_docs_per_min"] = 60.0 * c / measured_s
    figures["measured_ratio"] = row["throughput_docs_per_min"] / figures[
        "measured_bound_docs_per_min"]
    if spec.rate is not None:
        figures["offered_load"] = spec.rate * s / c  # rho: below 1 the queue stays short
    return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in figures.items()}


