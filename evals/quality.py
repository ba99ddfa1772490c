"""Data-quality suites over the lake's tables, run with great-expectations (``doclake lake check``).

The views promise things the pipeline cannot enforce at write time, because events arrive from many
workers and are never updated: ids are unique after deduplication, statuses stay in their
vocabulary, tokens and costs are never negative, a succeeded job has exactly one page row per page,
and time runs forwards. Each suite is a DuckDB query producing one dataframe plus the expectations
over it, declared as plain data; great-expectations evaluates them and the outcome comes back as a
``QualityReport`` of plain values, which ``to_events`` turns into ``ExpectationChecked`` events for
the caller to write. An empty lake passes: no rows, nothing unexpected.

great-expectations takes seconds to import, so it is imported only inside ``check_frames``.
"""

from __future__ import annotations

import json
import logging
import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from uuid6 import uuid7

from lake.catalog import connect
from lake.events import ExpectationChecked, utc_now
from lake.replay import JOB_STATUSES, UNIT_STATUSES

if TYPE_CHECKING:
    import pandas as pd

# How far ahead of this machine's clock an event may claim to have happened (other hosts' clocks).
DEFAULT_CLOCK_SKEW = timedelta(minutes=5)
SAMPLE_SIZE = 5

# One dataframe per suite. ``succeeded_job_pages`` is computed, not a view: one row per succeeded
# job with how many distinct pages it stored, so "one page row per page" is a column comparison.
TABLE_SQL: dict[str, str] = {
    "documents": "SELECT document_id FROM documents",
    "jobs": "SELECT job_id, document_id, status, created_at, finished_at FROM jobs",
    "units": "SELECT job_id, unit_id, status, first_page, last_page FROM units",
    "pages": "SELECT job_id, page_number, chars FROM pages",
    "succeeded_job_pages": """
        SELECT j.job_id, j.pages, count(DISTINCT p.page_number) AS page_rows
        FROM jobs AS j LEFT JOIN pages AS p ON p.job_id = j.job_id
        WHERE j.status = 'succeeded'
        GROUP BY j.job_id, j.pages
    """,
    "events": "SELECT event_id, event_type, occurred_at FROM events",
    "model_calls": """
        SELECT call_id, job_id, input_tokens, output_tokens, cost_usd, latency_ms FROM model_calls
    """,
    "results": """
        SELECT document_id, job_id, input_tokens, output_tokens, processing_ms FROM results
    """,
}


@dataclass(frozen=True)
class Expect:
    """One expectation: a great-expectations class name and its keyword arguments."""

    name: str
    kwargs: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Suite:
    """The expectations over one table; ``keys`` name a row in the details of a failure."""

    table: str
    keys: tuple[str, ...]
    expectations: tuple[Expect, ...]


@dataclass(frozen=True)
class CheckResult:
    """One expectation's outcome, with a JSON sample of offending rows (or the error) in details."""

    table: str
    expectation: str
    success: bool
    unexpected_count: int | None = None
    details: str | None = None


@dataclass(frozen=True)
class QualityReport:
    """Every expectation's outcome, in suite order; ``success`` only if all of them passed."""

    results: list[CheckResult]

    @property
    def success(self) -> bool:
        return all(result.success for result in self.results)

    @property
    def failures(self) -> list[CheckResult]:
        return [result for result in self.results if not result.success]


def _unique(column: str) -> Expect:
    return Expect("ExpectColumnValuesToBeUnique", {"column": column})


def _unique_together(*columns: str) -> Expect:
    return Expect("ExpectCompoundColumnsToBeUnique", {"column_list": list(columns)})


def _in_set(column: str, values: Sequence[str]) -> Expect:
    return Expect("ExpectColumnValuesToBeInSet", {"column": column, "value_set": sorted(values)})


def _not_null(column: str) -> Expect:
    return Expect("ExpectColumnValuesToNotBeNull", {"column": column})


def _not_negative(*columns: str) -> tuple[Expect, ...]:
    """Nulls are allowed (an unmeasured latency); GX skips them in column-map expectations."""
    return tuple(
        Expect("ExpectColumnValuesToBeBetween", {"column": c, "min_value": 0}) for c in columns
    )


def _not_before(later: str, earlier: str) -> Expect:
    """``later >= earlier`` on every row where both are set (an unfinished job has no end)."""
    return Expect(
        "ExpectColumnPairValuesAToBeGreaterThanB",
        {"column_A": later, "column_B": earlier, "or_equal": True,
         "ignore_row_if": "either_value_is_missing"},
    )


def suites(now: datetime, clock_skew: timedelta = DEFAULT_CLOCK_SKEW) -> list[Suite]:
    """The lake's suites; ``now + clock_skew`` is the latest an event may claim to have happened."""
    latest = now + clock_skew
    return [
        Suite("documents", ("document_id",), (_unique("document_id"),)),
        Suite("jobs", ("job_id",), (
            _unique("job_id"),
            _not_null("document_id"),
            _in_set("status", JOB_STATUSES),
            _not_before("finished_at", "created_at"),
        )),
        Suite("units", ("job_id", "unit_id"), (
            _unique_together("job_id", "unit_id"),
            _in_set("status", UNIT_STATUSES),
            _not_before("last_page", "first_page"),
        )),
        Suite("pages", ("job_id", "page_number"), (
            _unique_together("job_id", "page_number"),
            *_not_negative("chars"),
        )),
        Suite("succeeded_job_pages", ("job_id",), (
            Expect("ExpectColumnPairValuesToBeEqual",
                   {"column_A": "pages", "column_B": "page_rows", "ignore_row_if": "neither"}),
        )),
        Suite("events", ("event_id",), (
            _unique("event_id"),
            Expect("ExpectColumnValuesToBeBetween", {"column": "occurred_at", "max_value": latest}),
        )),
        Suite("model_calls", ("call_id",), (
            _unique("call_id"),
            *_not_negative("input_tokens", "output_tokens", "cost_usd", "latency_ms"),
        )),
        Suite("results", ("document_id",), (
            *_not_negative("input_tokens", "output_tokens", "processing_ms"),
        )),
    ]


def lake_frames(lake_uri: str) -> dict[str, pd.DataFrame]:
    """One dataframe per suite, read through the lake's deduplicated views in one connection."""
    con = connect(lake_uri)
    try:
        return {table: con.sql(sql).df() for table, sql in TABLE_SQL.items()}
    finally:
        con.close()


def check_lake(
    lake_uri: str, *, now: datetime | None = None, clock_skew: timedelta = DEFAULT_CLOCK_SKEW
) -> QualityReport:
    """Run every suite over the lake at ``lake_uri``."""
    return check_frames(lake_frames(lake_uri), now=now, clock_skew=clock_skew)


def check_frames(
    frames: Mapping[str, pd.DataFrame],
    *,
    now: datetime | None = None,
    clock_skew: timedelta = DEFAULT_CLOCK_SKEW,
) -> QualityReport:
    """Run every suite over its dataframe (``TABLE_SQL``'s shapes); a missing frame is an error.

    ``now`` must be timezone-aware; it defaults to this machine's clock.
    """
    gx = _quiet_gx()
    context = _ephemeral_context(gx)
    source = context.data_sources.add_pandas("lake")
    results: list[CheckResult] = []
    for suite in suites(_naive_utc(now or utc_now()), clock_skew):
        asset = source.add_dataframe_asset(suite.table)
        batch = asset.add_batch_definition_whole_dataframe("whole").get_batch(
            batch_parameters={"dataframe": _naive_timestamps(frames[suite.table])}
        )
        expectations = [getattr(gx.expectations, e.name)(**e.kwargs) for e in suite.expectations]
        outcome = batch.validate(
            gx.ExpectationSuite(name=suite.table, expectations=expectations),
            result_format={
                "result_format": "SUMMARY",
                "unexpected_index_column_names": list(suite.keys),
                "partial_unexpected_count": SAMPLE_SIZE,
            },
        )
        results.extend(_check_result(suite.table, r) for r in outcome.results)
    return QualityReport(results)


def to_events(
    report: QualityReport, *, run_id: str | None = None, occurred_at: datetime | None = None
) -> list[ExpectationChecked]:
    """The report as lake events sharing one ``run_id``, for the caller's event writer."""
    run = run_id or str(uuid7())
    at = occurred_at or utc_now()
    return [
        ExpectationChecked(
            run_id=run,
            occurred_at=at,
            table_name=r.table,
            expectation=r.expectation,
            success=r.success,
            unexpected_count=r.unexpected_count,
            details=r.details,
        )
        for r in report.results
    ]


# --- great-expectations plumbing ---------------------------------------------------------------

# The kwargs that say which columns an expectation is about; the rest (bounds, sets) go to details,
# so an expectation's name stays the same from run to run even though ``max_value`` moves.
_IDENTITY_KWARGS = ("column", "column_list", "column_A", "column_B")


def _quiet_gx():
    """Import great-expectations with its INFO/WARNING chatter off unless someone configured it."""
    logger = logging.getLogger("great_expectations")
    if logger.level == logging.NOTSET:
        logger.setLevel(logging.ERROR)
    import great_expectations as gx

    return gx


def _ephemeral_context(gx):
    """An in-memory context: no project folder, no analytics, no progress bars."""
    from great_expectations.data_context.types.base import (
        DataContextConfig,
        InMemoryStoreBackendDefaults,
        ProgressBarsConfig,
    )

    config = DataContextConfig(
        analytics_enabled=False,
        progress_bars=ProgressBarsConfig(globally=False, metric_calculations=False),
        store_backend_defaults=InMemoryStoreBackendDefaults(init_temp_docs_sites=False),
    )
    return gx.get_context(mode="ephemeral", project_config=config)


def _naive_utc(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(tzinfo=None)


def _naive_timestamps(frame: pd.DataFrame) -> pd.DataFrame:
    """Timestamps as naive UTC: the lake is UTC only, and GX trips pandas' deprecation of
    ``Series.values`` on timezone-aware columns (a warning per comparison)."""
    aware = [name for name, dtype in frame.dtypes.items() if getattr(dtype, "tz", None)]
    if not aware:
        return frame
    return frame.assign(**{name: frame[name].dt.tz_convert(None) for name in aware})


def _check_result(table: str, validation: Any) -> CheckResult:
    config = validation.expectation_config
    kwargs = {k: v for k, v in config.kwargs.items() if k != "batch_id"}
    about = ", ".join(f"{k}={_label(kwargs[k])}" for k in _IDENTITY_KWARGS if k in kwargs)
    result = validation.result or {}
    error = _exception_message(validation.exception_info)
    details: dict[str, Any] = {}
    if error:
        details["error"] = error
    if not validation.success:
        details["rows"] = result.get("partial_unexpected_index_list") or result.get(
            "partial_unexpected_list"
        )
        details["expected"] = {k: v for k, v in kwargs.items() if k not in _IDENTITY_KWARGS}
    count = result.get("unexpected_count")
    return CheckResult(
        table=table,
        expectation=f"{config.type}({about})",
        success=bool(validation.success),
        unexpected_count=None if count is None else int(count),
        details=json.dumps(_plain(details), sort_keys=True) if details else None,
    )


def _label(value: Any) -> str:
    return "[" + ", ".join(map(str, value)) + "]" if isinstance(value, list) else str(value)


def _exception_message(info: Any) -> str | None:
    """GX reports one exception, or one per metric keyed by metric id; take the first raised."""
    if not info:
        return None
    if "raised_exception" in info:
        return info.get("exception_message") if info.get("raised_exception") else None
    for nested in info.values():
        if isinstance(nested, Mapping) and nested.get("raised_exception"):
            return nested.get("exception_message")
    return None


def _plain(value: Any) -> Any:
    """JSON-ready: numpy scalars become numbers, NaN/NaT become null, timestamps become strings."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, str | bool):
        return value
    if isinstance(value, numbers.Number):
        number = value.item() if hasattr(value, "item") else value
        return None if isinstance(number, float) and math.isnan(number) else number
    return None if str(value) in ("NaT", "nan") else str(value)
