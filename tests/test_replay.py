"""Replaying the lake rebuilds job and unit state; diff finds every way a store can disagree."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from enum import StrEnum

import pytest
from support.lakegen import failed_job as lakegen_failed_job
from support.lakegen import succeeded_job

from lake import events as ev
from lake.replay import Difference, JobState, ReplayState, UnitState, diff, replay
from lake.writer import ParquetEventWriter

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def pdf_job(doc: str, job: str, *, t: float = 0.0, pages: int = 7) -> list[ev.Event]:
    """A PDF that succeeds: split into five-page units, every page read, every unit done."""
    return succeeded_job(doc, job, start=at(t), pages=pages)


def failed_job(doc: str, job: str, *, t: float = 0.0) -> list[ev.Event]:
    """A three-page PDF whose only unit fails twice; the poller fails the job."""
    return lakegen_failed_job(doc, job, start=at(t), attempts=2)


def running_job(doc: str, job: str, *, t: float = 0.0) -> list[ev.Event]:
    """Mid-flight: two units planned, one started, nothing finished yet."""
    ids = {"document_id": doc, "job_id": job}
    return [
        ev.JobCreated(**ids, occurred_at=at(t)),
        ev.JobSplit(**ids, occurred_at=at(t + 1), pages=8, units=2),
        ev.UnitPlanned(**ids, unit_id="u0", kind="pdf", first_page=1, last_page=5,
                       occurred_at=at(t + 1)),
        ev.UnitPlanned(**ids, unit_id="u1", kind="pdf", first_page=6, last_page=8,
                       occurred_at=at(t + 1)),
        ev.JobExtracting(**ids, occurred_at=at(t + 2)),
        ev.UnitStarted(**ids, unit_id="u0", attempt=1, occurred_at=at(t + 3)),
    ]


EXPECTED = ReplayState(
    jobs={
        "j-ok": JobState("j-ok", "d-ok", "succeeded", 7, 2, None),
        "j-bad": JobState("j-bad", "d-bad", "failed", 3, 1, "unit u0 failed: Timeout"),
        "j-run": JobState("j-run", "d-run", "extracting", 8, 2, None),
        "j-new": JobState("j-new", "d-new", "queued", None, None, None),
    },
    units={
        ("j-ok", "u0"): UnitState("j-ok", "u0", "done", 1, 5),
        ("j-ok", "u1"): UnitState("j-ok", "u1", "done", 6, 7),
        ("j-bad", "u0"): UnitState("j-bad", "u0", "failed", 1, 3),
        ("j-run", "u0"): UnitState("j-run", "u0", "running", 1, 5),
        ("j-run", "u1"): UnitState("j-run", "u1", "pending", 6, 8),
    },
)


@pytest.fixture
def lake(tmp_path) -> str:
    uri = str(tmp_path / "lake")
    writer = ParquetEventWriter.for_uri(uri)
    writer.write(pdf_job("d-ok", "j-ok"))
    writer.write(failed_job("d-bad", "j-bad", t=10))
    writer.write(running_job("d-run", "j-run", t=20))
    writer.write([ev.JobCreated(document_id="d-new", job_id="j-new", occurred_at=at(30))])
    return uri


def test_replay_rebuilds_every_job_and_unit(lake):
    assert replay(lake) == EXPECTED


def test_replay_ignores_events_written_twice(lake):
    ParquetEventWriter.for_uri(lake).write(pdf_job("d-ok", "j-ok") + failed_job("d-bad", "j-bad",
                                                                                  t=10))
    assert replay(lake) == EXPECTED


def test_replay_of_an_empty_lake_is_empty(tmp_path):
    assert replay(str(tmp_path / "nothing")) == ReplayState()


def test_a_store_that_matches_the_lake_has_no_differences(lake):
    assert diff(replay(lake), EXPECTED) == []


def test_diff_reports_status_and_reason_of_a_job_the_store_got_wrong():
    store = replace(EXPECTED, jobs={
        **EXPECTED.jobs,
        "j-bad": replace(EXPECTED.jobs["j-bad"], status="succeeded", failure_reason=None),
    })
    assert diff(EXPECTED, store) == [
        Difference("job", "j-bad", "status", "failed", "succeeded"),
        Difference("job", "j-bad", "failure_reason", "unit u0 failed: Timeout", None),
    ]


def test_diff_reports_a_page_count_mismatch():
    store = replace(EXPECTED, jobs={**EXPECTED.jobs,
                                    "j-ok": replace(EXPECTED.jobs["j-ok"], pages=6)})
    (difference,) = diff(EXPECTED, store)
    assert (difference.key, difference.field, difference.lake, difference.store) == (
        "j-ok", "pages", 7, 6)
    assert not difference.in_flight
    assert str(difference) == "job j-ok: pages lake=7 store=6"


def test_diff_reports_jobs_and_units_on_one_side_only():
    extra = JobState("j-ghost", "d-ghost", "succeeded", 1, 1, None)
    jobs = {k: v for k, v in EXPECTED.jobs.items() if k != "j-ok"} | {"j-ghost": extra}
    units = {k: v for k, v in EXPECTED.units.items() if k != ("j-bad", "u0")}
    assert diff(EXPECTED, ReplayState(jobs=jobs, units=units)) == [
        Difference("job", "j-ghost", "exists", False, True),
        Difference("job", "j-ok", "exists", True, False),
        Difference("unit", "j-bad/u0", "exists", True, False),
    ]


def test_unit_statuses_are_normalised_before_comparing():
    class StoreUnitStatus(StrEnum):
        QUEUED = "queued"
        RUNNING = "running"

    pending = ("j-run", "u1")
    store_units = {**EXPECTED.units,
                   pending: replace(EXPECTED.units[pending], status=StoreUnitStatus.QUEUED)}
    store = replace(EXPECTED, units=store_units)
    assert diff(EXPECTED, store) == []  # default map: queued means pending
    assert diff(EXPECTED, store, unit_status_map={}) == [
        Difference("unit", "j-run/u1", "status", "pending", "queued", in_flight=True)
    ]


def test_job_status_map_translates_a_store_vocabulary():
    store = replace(EXPECTED, jobs={**EXPECTED.jobs,
                                    "j-ok": replace(EXPECTED.jobs["j-ok"], status="SUCCEEDED")})
    assert len(diff(EXPECTED, store)) == 1
    assert diff(EXPECTED, store, job_status_map={"SUCCEEDED": "succeeded"}) == []


def test_differences_of_unfinished_jobs_are_reported_and_marked_in_flight():
    """The store finished a job the lake still sees running: real when idle, a race when busy."""
    store = replace(
        EXPECTED,
        jobs={**EXPECTED.jobs, "j-run": replace(EXPECTED.jobs["j-run"], status="succeeded")},
        units={**EXPECTED.units, ("j-run", "u0"): replace(EXPECTED.units[("j-run", "u0")],
                                                          status="done")},
    )
    differences = diff(EXPECTED, store)
    assert [(d.entity, d.key, d.field, d.in_flight) for d in differences] == [
        ("job", "j-run", "status", True),
        ("unit", "j-run/u0", "status", True),
    ]
    settled = [d for d in differences if not d.in_flight]
    assert settled == []


def test_a_unit_of_a_finished_job_is_not_in_flight():
    key = ("j-ok", "u1")
    store = replace(EXPECTED, units={**EXPECTED.units,
                                     key: replace(EXPECTED.units[key], last_page=8)})
    assert diff(EXPECTED, store) == [Difference("unit", "j-ok/u1", "last_page", 7, 8)]


def test_replay_catches_a_store_whose_job_disagrees_with_the_events(lake):
    """End to end: the events say failed; a store claiming success is caught."""
    store = replace(EXPECTED, jobs={
        **EXPECTED.jobs, "j-bad": replace(EXPECTED.jobs["j-bad"], status="succeeded")})
    assert [(d.key, d.field) for d in diff(replay(lake), store)] == [("j-bad", "status")]
