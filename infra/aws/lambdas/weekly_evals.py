"""The weekly evals report on AWS (issue 13): an EventBridge schedule invokes this once a week
and it runs the same call as ``doclake evals report`` locally, ``evals.weekly.write_weekly_report``
over the lake, reporting the last complete week and writing
``s3://<results bucket>/reports/weekly-<date>.md`` and ``.html``.

Its role reads the lake's events, writes the week's eval run (``eval_run``, ``eval_score`` and
``eval_outcome`` events, which the report quotes) and puts objects under ``reports/`` in the
results bucket; nothing else.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime

REPORTS_PREFIX = "reports/"


def report_prefix(results_bucket: str, now: datetime) -> str:
    return f"s3://{results_bucket}/{REPORTS_PREFIX}weekly-{now:%Y-%m-%d}"


def run(now: datetime, environ=os.environ) -> dict[str, str]:
    from evals.weekly import write_weekly_report
    from infra.evals_wiring import normalizers, training_sets

    return write_weekly_report(environ["DOCLAKE_LAKE_URI"],
                               report_prefix(environ["DOCLAKE_RESULTS_BUCKET"], now), now,
                               normalizers=normalizers(), training_sets=training_sets(),
                               record=True)


def handler(event, context=None):
    """The scheduled event's ``time`` (ISO 8601) is the report's end, so a retried invocation
    writes the same week's report; without it, now."""
    stamp = (event or {}).get("time")
    now = datetime.fromisoformat(stamp.replace("Z", "+00:00")) if stamp else datetime.now(UTC)
    return run(now)
