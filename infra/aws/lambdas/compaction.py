"""Scheduled compaction of the lake bucket: closed partitions only (days before today, UTC),
so a compactor never races the functions writing today's files. ``lake.compaction.compact``
keeps its crash safety on S3: outputs are complete before any input is deleted, and readers
deduplicate by event id while both exist."""

from __future__ import annotations

import os
from datetime import UTC, date, datetime, timedelta

from aws_lambda_powertools import Logger

from lake.compaction import compact

logger = Logger(service="doclake-compaction")


def closed_days(today: date, lookback_days: int) -> list[str]:
    return [(today - timedelta(days=n)).isoformat() for n in range(1, lookback_days + 1)]


@logger.inject_lambda_context
def handler(event, context):
    lookback = int(os.environ.get("DOCLAKE_COMPACT_LOOKBACK_DAYS", "3"))
    days = closed_days(datetime.now(UTC).date(), lookback)
    report = compact(os.environ["DOCLAKE_LAKE_URI"], days=days)
    logger.info("compacted", extra={"days": days, "files_before": report.files_before,
                                    "files_after": report.files_after, "errors": report.errors})
    return {"files_before": report.files_before, "files_after": report.files_after,
            "errors": report.errors[:20]}
