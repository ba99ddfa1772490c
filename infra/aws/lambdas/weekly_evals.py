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

from infra.aws.deadline import Deadline

__all__ = ["REPORTS_PREFIX", "report_prefix", "run", "MARGIN_S", "ReportTooSlow", "handler"]

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


MARGIN_S = 20.0


class ReportTooSlow(TimeoutError):
    """The report did not finish within the invocation: raised before Lambda's own kill, so
    the log says what to change."""


def handler(event, context=None):
    """The scheduled event's ``time`` (ISO 8601) is the report's end, so a retried invocation
    writes the same week's report; without it, now. The report runs on a worker thread and is
    waited for until the invocation's deadline, less ``MARGIN_S``."""
    import concurrent.futures

    stamp = (event or {}).get("time")
    now = datetime.fromisoformat(stamp.replace("Z", "+00:00")) if stamp else datetime.now(UTC)
    if context is None:
        return run(now)
    deadline = Deadline.of(context, MARGIN_S)
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    try:
        return pool.submit(run, now).result(timeout=deadline.left_s())
    except concurrent.futures.TimeoutError:
        raise ReportTooSlow(f"the weekly report did not finish in {deadline.left_s():.0f} s "
                            "of the invocation: raise the function's timeout or memory, or "
                            "compact the lake") from None
    finally:
        pool.shutdown(wait=False)
