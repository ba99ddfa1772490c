"""Data-quality checks over the lake's tables, run with great-expectations (``doclake lake check``).

Organised the way great-expectations projects are:

- **Suites are stored with the project**, in GX's own JSON format, one file per suite under
  ``evals/gx/expectations/`` (``lake.jobs.json``...). Each names, in its ``meta.doclake``, the
  DuckDB query that produces its batch (over the lake's deduplicated views) and the key columns
  that name an offending row. Change a check by editing its JSON; ``stored_suites`` reads them.
- **A checkpoint** (``lake``) runs every suite's validation definition in one go, with the suite
  parameters of the run (``clock_skew_s``, ``max_duplicate_rate``).
- **Data Docs**: with ``docs_dir``, the GX project of the run lives there (a file context:
  suites, validation definitions, the checkpoint, and every run's results), and the checkpoint's
  ``UpdateDataDocsAction`` renders the HTML site; ``doclake lake check --docs`` puts it in the
  lake folder and prints the path of its ``index.html``. Without it, a temporary project.

The batches are the suites' query results, written as Parquet files that a pandas filesystem
data source reads. The checks catch faults the views cannot hide: a succeeded job whose page rows
do not match its pages, a failed job without a reason, a model call without tokens or with a
negative cost, an event older than its job, a rate of redelivered copies in the raw files above
``max_duplicate_rate``, a daily cost total that is not the sum of its models; plus uniqueness,
vocabularies and non-negative numbers on every table. The outcome comes back as a
``QualityReport`` of plain values, which ``to_events`` turns into ``ExpectationChecked`` events.
An empty lake passes: no rows, nothing unexpected.

great-expectations takes seconds to import, so it is imported only inside ``check_frames``.
"""

from __future__ import annotations

import decimal
import json
import logging
import math
import numbers
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from uuid6 import uuid7

from lake.events import EVENT_TYPES, ExpectationChecked, utc_now

__all__ = ["SUITES_DIR", "CHECKPOINT", "DATA_SOURCE", "DEFAULT_CLOCK_SKEW", "DEFAULT_MAX_DUPLICATE_RATE",
           "SAMPLE_SIZE", "ROW_KEY", "CheckResult", "QualityReport", "stored_suites", "frame_sql",
           "lake_frames", "check_lake", "check_frames", "to_events"]

if TYPE_CHECKING:
    import pandas as pd

SUITES_DIR = Path(__file__).parent / "gx" / "expectations"
CHECKPOINT = "lake"
DATA_SOURCE = "lake_batches"
# How far ahead of this machine's clock an event may claim to have happened (other hosts' clocks).
DEFAULT_CLOCK_SKEW = timedelta(minutes=5)
# Redelivered copies of events in the raw files, per event type, before compaction removes them.
DEFAULT_MAX_DUPLICATE_RATE = 0.05
SAMPLE_SIZE = 5
ROW_KEY = "row_key"  # a JSON of the suite's key columns: names an offending row in the details


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
    """Every expectation's outcome, in suite order; ``success`` only if all of them passed.
    ``docs`` is the Data Docs index page when the run wrote one."""

    results: list[CheckResult]
    docs: Path | None = None

    @property
    def success(self) -> bool:
        return all(result.success for result in self.results)

    @property
    def failures(self) -> list[CheckResult]:
        return [result for result in self.results if not result.success]


def stored_suites(folder: Path = SUITES_DIR) -> dict[str, dict[str, Any]]:
    """The suites as stored (GX suite JSON), keyed by batch name (``meta.doclake.frame``)."""
    suites = {}
    for path in sorted(folder.glob("*.json")):
        suite = json.loads(path.read_text())
        suites[suite["meta"]["doclake"]["frame"]] = suite
    return suites


def _raw_duplicates_sql() -> str:
    parts = " UNION ALL ".join(
        f"SELECT '{t}' AS event_type, event_id FROM raw_{t}" for t in EVENT_TYPES)
    return ("SELECT event_type, count(*) AS raw_rows, count(DISTINCT event_id) AS events, "
            "1 - count(DISTINCT event_id) / count(*) AS duplicate_rate "
            f"FROM ({parts}) GROUP BY event_type")


def frame_sql(suite: Mapping[str, Any], now: datetime) -> str:
    """The DuckDB query of one suite's batch (``$now``: the time the check runs)."""
    sql = suite["meta"]["doclake"]["sql"]
    if sql == "RAW_DUPLICATES":
        return _raw_duplicates_sql()
    return sql.replace("$now", f"'{now.astimezone(UTC).isoformat()}'")


def lake_frames(lake_uri: str, *, now: datetime | None = None) -> dict[str, pd.DataFrame]:
    """One dataframe per suite, read through the lake's views in one session (which retries
    when compaction moves files under it)."""
    from lake.catalog import connect

    moment = now or utc_now()
    with connect(lake_uri) as session:
        return {name: session.table(frame_sql(suite, moment)).to_pandas()
                for name, suite in stored_suites().items()}


def check_lake(
    lake_uri: str, *, now: datetime | None = None, clock_skew: timedelta = DEFAULT_CLOCK_SKEW,
    max_duplicate_rate: float = DEFAULT_MAX_DUPLICATE_RATE, docs_dir: Path | None = None,
) -> QualityReport:
    """Run the ``lake`` checkpoint over the lake at ``lake_uri``; Data Docs into ``docs_dir``."""
    moment = now or utc_now()
    return check_frames(lake_frames(lake_uri, now=moment), clock_skew=clock_skew,
                        max_duplicate_rate=max_duplicate_rate, docs_dir=docs_dir)


def check_frames(
    frames: Mapping[str, pd.DataFrame],
    *,
    clock_skew: timedelta = DEFAULT_CLOCK_SKEW,
    max_duplicate_rate: float = DEFAULT_MAX_DUPLICATE_RATE,
    docs_dir: Path | None = None,
) -> QualityReport:
    """Run every stored suite over its dataframe through one checkpoint; a missing frame is an
    error. With ``docs_dir`` the GX project (and its Data Docs) is kept there."""
    gx = _quiet_gx()
    suites = stored_suites()
    root = Path(docs_dir) if docs_dir is not None else Path(tempfile.mkdtemp(prefix="doclake-gx-"))
    try:
        batches = root / "batches"
        batches.mkdir(parents=True, exist_ok=True)
        for name, suite in suites.items():
            _with_row_key(frames[name], suite["meta"]["doclake"]["keys"]).to_parquet(
                batches / f"{name}.parquet", index=False)
        context = _file_context(gx, root)
        checkpoint = _checkpoint(gx, context, suites, batches, docs=docs_dir is not None)
        outcome = checkpoint.run(expectation_parameters={
            "clock_skew_s": clock_skew.total_seconds(),
            "max_duplicate_rate": max_duplicate_rate,
        })
        by_suite = {r.suite_name: r for r in outcome.run_results.values()}
        results = [_check_result(name, r) for name, suite in suites.items()
                   for r in by_suite[suite["name"]].results]
        docs = None
        if docs_dir is not None:
            docs = root / "gx" / "uncommitted" / "data_docs" / "local_site" / "index.html"
        return QualityReport(results, docs=docs)
    finally:
        if docs_dir is None:
            shutil.rmtree(root, ignore_errors=True)


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


def _file_context(gx, root: Path):
    """The run's GX project at ``root/gx``: no analytics, no progress bars."""
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="file", project_root_dir=str(root))
    context.variables.analytics_enabled = False
    context.variables.progress_bars = ProgressBarsConfig(globally=False, metric_calculations=False)
    context.variables.save()
    return context


def _checkpoint(gx, context, suites: Mapping[str, Mapping[str, Any]], batches: Path, *,
                docs: bool):
    """The ``lake`` checkpoint: one validation definition per stored suite over its batch file.
    Suites are (re)loaded from the project's JSON on every run: the repository is the truth."""
    source = context.data_sources.add_or_update_pandas_filesystem(
        DATA_SOURCE, base_directory=str(batches))
    definitions = []
    for name, stored in suites.items():
        asset = source.add_parquet_asset(name)
        batch = asset.add_batch_definition_path(name, path=f"{name}.parquet")
        body = {k: v for k, v in stored.items() if k in ("name", "expectations", "meta", "notes")}
        with _suppress_missing():
            context.suites.delete(stored["name"])
        suite = context.suites.add(gx.ExpectationSuite(**body))
        with _suppress_missing():
            context.validation_definitions.delete(stored["name"])
        definitions.append(context.validation_definitions.add(
            gx.ValidationDefinition(name=stored["name"], data=batch, suite=suite)))
    actions = [gx.checkpoint.UpdateDataDocsAction(name="data_docs")] if docs else []
    return context.checkpoints.add_or_update(gx.Checkpoint(
        name=CHECKPOINT, validation_definitions=definitions, actions=actions,
        result_format={"result_format": "SUMMARY", "unexpected_index_column_names": [ROW_KEY],
                       "partial_unexpected_count": SAMPLE_SIZE}))


class _suppress_missing:
    """``delete`` of a suite or definition a fresh project does not have yet."""

    def __enter__(self):
        return self

    def __exit__(self, kind, error, trace) -> bool:
        return kind is not None and issubclass(kind, Exception) and (
            "not found" in str(error).lower() or "does not exist" in str(error).lower()
            or type(error).__name__ in ("DataContextError", "ResourceFreshnessAggregateError",
                                        "StoreBackendError"))


def _with_row_key(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Timestamps as naive UTC (GX trips on timezone-aware columns), plus ``row_key``."""
    frame = _naive_timestamps(frame)
    if len(frame):
        key = frame[keys].astype(object).where(frame[keys].notna(), None).to_dict("records")
        values = [json.dumps(_plain(k), sort_keys=True) for k in key]
    else:
        values = []
    return frame.assign(**{ROW_KEY: values})


def _naive_timestamps(frame: pd.DataFrame) -> pd.DataFrame:
    """Timestamps as naive UTC: the lake is UTC only, and GX trips pandas' deprecation of
    ``Series.values`` on timezone-aware columns (a warning per comparison)."""
    aware = [name for name, dtype in frame.dtypes.items() if getattr(dtype, "tz", None)]
    if not aware:
        return frame
    return frame.assign(**{name: frame[name].dt.tz_convert(None) for name in aware})


def _expand_row(row: Any) -> Any:
    if isinstance(row, Mapping) and ROW_KEY in row:
        rest = {k: v for k, v in row.items() if k != ROW_KEY}
        return {**json.loads(row[ROW_KEY]), **rest}
    return row


def _check_result(table: str, validation: Any) -> CheckResult:
    config = validation.expectation_config
    kwargs = {k: v for k, v in config.kwargs.items()
              if k not in ("batch_id", "row_condition", "condition_parser")}
    about = ", ".join(f"{k}={_label(kwargs[k])}" for k in _IDENTITY_KWARGS if k in kwargs)
    condition = config.kwargs.get("row_condition")
    if condition:  # a conditional expectation is another check on the same column
        text = condition.get("pass_through_filter") if isinstance(condition, Mapping) else None
        about += f" where {text or condition}"
    result = validation.result or {}
    error = _exception_message(validation.exception_info)
    details: dict[str, Any] = {}
    if error:
        details["error"] = error
    if not validation.success:
        rows = result.get("partial_unexpected_index_list") or result.get(
            "partial_unexpected_list")
        details["rows"] = [_expand_row(r) for r in rows] if rows else rows
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
    """JSON-ready: numpy scalars and decimals become numbers, NaN/NaT become null, timestamps
    become strings."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, str | bool):
        return value
    if isinstance(value, decimal.Decimal):  # money is DECIMAL in the views: JSON has numbers
        return None if value.is_nan() else float(value)
    if isinstance(value, numbers.Number):
        number = value.item() if hasattr(value, "item") else value
        return None if isinstance(number, float) and math.isnan(number) else number
    return None if str(value) in ("NaT", "nan") else str(value)
