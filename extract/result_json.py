"""The result JSON at a document's address, for a job that ended: locally and on AWS.

The brief's shape: ``{"document_id", "status", "extracted_fields", "model_version",
"token_usage": {"input", "output"}, "processing_ms"}``. When the fields stage has a result for
the job it is that result; until then (or with no fields asked), a finished job publishes its
status with empty fields, so a caller polling the address always learns that its document is
done. Written with one PUT (atomic on S3, temp+rename locally), only for the document's latest
job, and never twice for the same job.

Standard library only (plus ``lake.layout``): the publisher Lambda ships as a thin zip without
pydantic, and reads jobs as plain mappings from the DynamoDB stream.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from lake.layout import result_key

__all__ = ["TERMINAL", "result_document", "publish_result"]

TERMINAL = ("succeeded", "failed")


def _time(value: Any) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return value
    return datetime.fromisoformat(str(value))


def result_document(job: Mapping[str, Any]) -> dict:
    """The result of a job given as a mapping of its fields (``Job.model_dump()`` or a stream
    image)."""
    created, finished = _time(job.get("created_at")), _time(job.get("finished_at"))
    processing_ms = None
    if created is not None and finished is not None:
        processing_ms = round((finished - created).total_seconds() * 1000)
    pages = job.get("pages")
    return {
        "document_id": job["document_id"],
        "job_id": job["job_id"],
        "source_path": job.get("source_path") or job.get("source_name"),
        "status": str(job["status"]),
        "failure_reason": job.get("failure_reason"),
        "extracted_fields": {},
        "model_version": None,
        "token_usage": {"input": 0, "output": 0},
        "processing_ms": processing_ms,
        "pages": int(pages) if pages is not None else None,
    }


def publish_result(objects, job: Mapping[str, Any], latest_job_id: str | None) -> bool:
    """Publish a terminal job's result on ``objects`` (an ObjectStore); False when the job is
    not terminal, not its document's latest, or its result is there already."""
    if str(job.get("status")) not in TERMINAL or latest_job_id != job["job_id"]:
        return False
    key = result_key(job["document_id"])
    existing = objects.head(key)
    if existing is not None and existing.get("job_id") == job["job_id"]:
        return False
    objects.put(key, json.dumps(result_document(job)).encode(),
                metadata={"job_id": job["job_id"], "status": str(job["status"])})
    return True
