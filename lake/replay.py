"""Job and unit state rebuilt from the lake's events alone, and compared with the job store.

The job store (SQLite locally, DynamoDB on AWS) holds the live state; the lake holds the record of
how it got there. Replaying the events must land on the same state: when it does not, an event was
lost, or the store moved without emitting one. ``replay`` reads the state back through the lake's
``jobs`` and ``units`` views; the store's ``snapshot()`` returns the same ``ReplayState`` shape;
``diff`` is a pure comparison of the two, so it is tested without either backend.

Jobs still in flight (queued or extracting) are compared like any other. On an idle system (the
CLI runs ``doclake lake replay`` after a drain) every difference is real. While work is running,
a status or unit can legitimately be one transition apart (the store is written after the event,
or the reverse), so each difference carries ``in_flight``: set when the job is non-terminal on
either side. A caller checking a busy system can drop those; nothing else is ever excused.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

__all__ = ["TERMINAL_JOB_STATUSES", "JOB_STATUSES", "UNIT_STATUSES", "DEFAULT_UNIT_STATUS_MAP", "JobState",
           "UnitState", "ReplayState", "Difference", "replay", "diff"]

TERMINAL_JOB_STATUSES = frozenset({"succeeded", "failed"})
JOB_STATUSES = frozenset({"queued", "extracting", *TERMINAL_JOB_STATUSES})
UNIT_STATUSES = frozenset({"pending", "running", "done", "failed"})

# What a store may call a unit status, mapped to the lake's word for it.
DEFAULT_UNIT_STATUS_MAP: Mapping[str, str] = {"queued": "pending"}


@dataclass(frozen=True)
class JobState:
    """What a job looks like at rest: the fields both the lake and the store can vouch for."""

    job_id: str
    document_id: str | None
    status: str
    pages: int | None = None
    units: int | None = None
    failure_reason: str | None = None

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL_JOB_STATUSES


@dataclass(frozen=True)
class UnitState:
    """One unit's status and page range; ``first_page``/``last_page`` are None for a sheet."""

    job_id: str
    unit_id: str
    status: str
    first_page: int | None = None
    last_page: int | None = None


@dataclass(frozen=True)
class ReplayState:
    """Every job by job id and every unit by ``(job_id, unit_id)``: the lake's or the store's."""

    jobs: dict[str, JobState] = field(default_factory=dict)
    units: dict[tuple[str, str], UnitState] = field(default_factory=dict)


@dataclass(frozen=True)
class Difference:
    """One field on which the lake and the store disagree.

    ``field`` is ``"exists"`` when the entity is on one side only; ``lake`` and ``store`` are then
    booleans saying where it was found.
    """

    entity: str  # "job" or "unit"
    key: str  # the job id, or "job_id/unit_id"
    field: str
    lake: Any
    store: Any
    in_flight: bool = False

    def __str__(self) -> str:
        note = " (in flight)" if self.in_flight else ""
        values = f"lake={self.lake!r} store={self.store!r}"
        return f"{self.entity} {self.key}: {self.field} {values}{note}"


_JOBS_SQL = """
SELECT job_id, document_id, status, pages, units, failure_reason FROM jobs ORDER BY job_id
"""
_UNITS_SQL = """
SELECT job_id, unit_id, status, first_page, last_page FROM units ORDER BY job_id, unit_id
"""


def replay(lake_uri: str) -> ReplayState:
    """Rebuild every job's and unit's state from the events in the lake (duplicates collapse)."""
    from lake.catalog import connect  # here, not at the top: the job store imports this module
    # for its state types, and must not pull pyarrow.dataset (and pandas) into every command

    con = connect(lake_uri)
    try:
        jobs = {row[0]: JobState(*row) for row in con.sql(_JOBS_SQL).fetchall()}
        units = {(row[0], row[1]): UnitState(*row) for row in con.sql(_UNITS_SQL).fetchall()}
    finally:
        con.close()
    return ReplayState(jobs=jobs, units=units)


def diff(
    expected: ReplayState,
    actual: ReplayState,
    *,
    unit_status_map: Mapping[str, str] = DEFAULT_UNIT_STATUS_MAP,
    job_status_map: Mapping[str, str] | None = None,
) -> list[Difference]:
    """Every difference between the lake (``expected``) and the store (``actual``), sorted.

    Status maps translate a store's vocabulary into the lake's (``queued`` -> ``pending`` for
    units by default); they are applied to both sides, so an identity entry is harmless.
    Empty list means the store is exactly what the events say it should be.
    """
    job_map = job_status_map or {}
    lake_jobs = {k: _normalised(v, job_map) for k, v in expected.jobs.items()}
    store_jobs = {k: _normalised(v, job_map) for k, v in actual.jobs.items()}
    lake_units = {k: _normalised(v, unit_status_map) for k, v in expected.units.items()}
    store_units = {k: _normalised(v, unit_status_map) for k, v in actual.units.items()}

    def in_flight(job_id: str) -> bool:
        sides = [s[job_id] for s in (lake_jobs, store_jobs) if job_id in s]
        return any(not job.terminal for job in sides)

    differences = list(_compare("job", lake_jobs, store_jobs, in_flight))
    differences += _compare("unit", lake_units, store_units, lambda key: in_flight(key[0]))
    return differences


def _normalised(state: Any, status_map: Mapping[str, str]) -> Any:
    """The state with its status as a plain string in the lake's vocabulary."""
    status = str(state.status)  # a StrEnum from the store becomes its plain value
    return replace(state, status=status_map.get(status, status))


def _as_dict(state: Any) -> dict[str, Any]:
    return {f.name: getattr(state, f.name) for f in fields(state)}


def _compare(
    entity: str, lake: Mapping[Any, Any], store: Mapping[Any, Any], in_flight: Any
) -> Iterator[Difference]:
    for key in sorted(lake.keys() | store.keys()):
        label = "/".join(key) if isinstance(key, tuple) else key
        flight = in_flight(key)
        if key not in store or key not in lake:
            yield Difference(entity, label, "exists", key in lake, key in store, flight)
            continue
        before, after = _as_dict(lake[key]), _as_dict(store[key])
        for name, value in before.items():
            if value != after[name]:
                yield Difference(entity, label, name, value, after[name], flight)
