"""Scheduled compaction of the lake bucket: closed partitions only (days before today, UTC),
so a compactor never races the functions writing today's files. ``lake.compaction.compact``
keeps its crash safety on S3: outputs are complete before any input is deleted, and readers
deduplicate by event id while both exist."""

from __future__ import annotations

import os
from datetime import UTC, date, datetime, timedelta

from aws_lambda_powertools import Logger

from infra.aws.deadline import Deadline
from lake.compaction import compact

__all__ = ["logger", "closed_days", "DAY_BUDGET_S", "compact_days", "handler"]

logger = Logger(service="doclake-compaction")


def closed_days(today: date, lookback_days: int) -> list[str]:
    return [(today - timedelta(days=n)).isoformat() for n in range(1, lookback_days + 1)]


DAY_BUDGET_S = 180.0
"""The time one day's compaction is allowed to need: a day starts only while this much of the
invocation is left (each day is crash-safe on its own; the rest waits for tomorrow's run)."""


def compact_days(lake_uri: str, days: list[str], deadline: Deadline) -> dict:
    """Compact ``days`` oldest first, one at a time, while the deadline allows a day's work."""
    done, before, after, errors = [], 0, 0, []
    for day in sorted(days):
        if not deadline.allows(DAY_BUDGET_S):
            break
        report = compact(lake_uri, days=[day])
        done.append(day)
        before, after = before + report.files_before, after + report.files_after
        errors += report.errors
    return {"days": done, "left": [d for d in days if d not in done], "files_before": before,
            "files_after": after, "errors": errors[:20]}


@logger.inject_lambda_context
def handler(event, context):
    lookback = int(os.environ.get("DOCLAKE_COMPACT_LOOKBACK_DAYS", "3"))
    days = closed_days(datetime.now(UTC).date(), lookback)
    result = compact_days(os.environ["DOCLAKE_LAKE_URI"], days, Deadline.of(context, 30))
    logger.info("compacted", extra=result)
    return result
