"""Where things live: object-store keys and lake paths, the same on a folder and on S3.

Every key is built here so that the local folder and the S3 bucket share one layout, and so
that a job's pages always sit in a folder of their own (a new version never mixes with the old).
"""

from __future__ import annotations

from datetime import datetime

EVENTS_PREFIX = "events"


def upload_key(document_id: str, upload_id: str) -> str:
    """The original bytes of one upload (one version) of a document."""
    return f"uploads/{document_id}/{upload_id}"


def page_key(document_id: str, job_id: str, page_number: int) -> str:
    """One page's Markdown: zero-padded so that a plain listing is in page order."""
    return f"{pages_prefix(document_id, job_id)}{page_number:05d}.md"


def pages_prefix(document_id: str, job_id: str) -> str:
    """The folder holding every page of one job, and nothing else."""
    return f"pages/{document_id}/{job_id}/"


def converted_key(document_id: str, job_id: str) -> str:
    """The PDF that LibreOffice made of an Office file, for the split step."""
    return f"converted/{document_id}/{job_id}.pdf"


def result_key(document_id: str) -> str:
    """The published field-extraction result, at an address the caller can derive."""
    return f"results/{document_id}.json"


def event_partition(event_type: str, occurred_at: datetime) -> str:
    """The Hive-style partition folder of an event: by type, then by UTC date."""
    return f"{EVENTS_PREFIX}/event_type={event_type}/dt={occurred_at:%Y-%m-%d}"


def event_type_prefix(event_type: str) -> str:
    """The folder holding every partition of one event type."""
    return f"{EVENTS_PREFIX}/event_type={event_type}"
