"""Where things live: object-store keys and lake paths, the same on a folder and on S3.

Every key is built here so that the local folder and the S3 bucket share one layout, and so
that a job's pages always sit in a folder of their own (a new version never mixes with the old).
"""

from __future__ import annotations

import functools
import hashlib
import uuid
from datetime import UTC, date, datetime, timedelta

__all__ = ["EVENTS_PREFIX", "COMPACTED_PREFIX", "DOCUMENT_EVENT_TYPES", "upload_key", "VERSION_MARK",
           "pinned_key", "unpinned", "page_key", "page_number_of", "pages_prefix", "converted_key",
           "result_key", "event_partition", "uuid7_date", "partition_date", "event_type_prefix",
           "schema_fingerprint", "data_file_name", "name_fingerprint"]

EVENTS_PREFIX = "events"
COMPACTED_PREFIX = "compacted-"
"""The name of every file compaction writes (the catalog tells compactions from new data by it)."""

DOCUMENT_EVENT_TYPES = frozenset({"document_registered", "format_detected", "result_published",
                                  "result_field"})
"""Events about a document rather than one of its jobs: they live in the document's day, so every
version of a document (each a job, perhaps months apart) sits in one partition and the
``documents`` and ``results`` views can pick the latest version without leaving it (a result's
values, ``result_field``, sit beside their result)."""


def upload_key(document_id: str, upload_id: str) -> str:
    """The original bytes of one upload (one version) of a document."""
    return f"uploads/{document_id}/{upload_id}"


VERSION_MARK = "?versionId="
"""Between a key and the one stored version of it a job reads (``pinned_key``)."""


def pinned_key(key: str, version: str | None) -> str:
    """``key`` at one stored version: what a job on a versioned bucket reads, whatever is put
    at the key later (S3's own URL form, ``key?versionId=...``). No version: the key itself."""
    if VERSION_MARK in key:
        raise ValueError(f"the key is pinned already: {key!r}")
    return f"{key}{VERSION_MARK}{version}" if version else key


def unpinned(key: str) -> tuple[str, str | None]:
    """The key and the version a ``pinned_key`` names (None for a plain key)."""
    bare, mark, version = key.partition(VERSION_MARK)
    return (bare, version) if mark and version else (bare, None)


def page_key(document_id: str, job_id: str, page_number: int) -> str:
    """One page's Markdown: zero-padded so that a plain listing is in page order."""
    return f"{pages_prefix(document_id, job_id)}{page_number:05d}.md"


def page_number_of(key: str) -> int:
    """The page number in a ``page_key``."""
    return int(key.rsplit("/", 1)[1].split(".")[0])


def pages_prefix(document_id: str, job_id: str) -> str:
    """The folder holding every page of one job, and nothing else."""
    return f"pages/{document_id}/{job_id}/"


def converted_key(document_id: str, job_id: str) -> str:
    """The PDF that LibreOffice made of an Office file, for the split step."""
    return f"converted/{document_id}/{job_id}.pdf"


def result_key(document_id: str) -> str:
    """The published field-extraction result, at an address the caller can derive."""
    return f"results/{document_id}.json"


def event_partition(event_type: str, day: date | datetime | str) -> str:
    """The Hive-style partition folder of an event: by type, then by its ``dt`` (a UTC date,
    see ``partition_date``)."""
    if isinstance(day, datetime):
        day = day.astimezone(UTC).date()
    return f"{EVENTS_PREFIX}/event_type={event_type}/dt={day}"


@functools.lru_cache(maxsize=65_536)
def uuid7_date(value: str | None) -> str | None:
    """The UTC date (``YYYY-MM-DD``) a UUIDv7 was minted on, or None for anything else.

    A UUIDv7 starts with its creation time in milliseconds since the epoch (RFC 9562), so the
    date is part of the id: every copy of every event that carries the id agrees on it.
    Cached: a flush of 10,000 events names a few hundred jobs."""
    if not value:
        return None
    try:
        parsed = uuid.UUID(value)
    except ValueError:
        return None
    if parsed.version != 7:
        return None
    return _day_of(parsed.int >> 80)


@functools.lru_cache(maxsize=4096)
def _day(days_since_epoch: int) -> str:
    return (date(1970, 1, 1) + timedelta(days=days_since_epoch)).isoformat()


def _day_of(millis: int) -> str:
    return _day(millis // 86_400_000)


def partition_date(event_type: str, job_id: str | None, document_id: str | None,
                   occurred_at: datetime) -> str:
    """The ``dt`` an event is written under: the creation day of the thing it belongs to.

    - document events (``DOCUMENT_EVENT_TYPES``): the day of the document id;
    - every other event of a job: the day of the job id (pages, units, model calls, failures
      and the job's own status changes all land in the job's day);
    - an event with only the other id: that id's day;
    - neither id a UUIDv7 (a data-quality run, hand-made test ids): the UTC day of
      ``occurred_at``.

    Why not the wall clock at write time: a redelivered message re-emits its events with a
    later ``occurred_at``; across midnight the copies would land in two partitions, and the
    views could only drop the duplicate by reading every day. Keyed by the id, every copy of an
    event lands in the same ``dt``, so deduplication is per partition, exact, and a ``dt`` filter
    prunes before it. The cost: a job that runs past midnight writes into yesterday's folder.
    """
    first, second = (document_id, job_id) if event_type in DOCUMENT_EVENT_TYPES else (
        job_id, document_id)
    return (uuid7_date(first) or uuid7_date(second)
            or occurred_at.astimezone(UTC).strftime("%Y-%m-%d"))


def event_type_prefix(event_type: str) -> str:
    """The folder holding every partition of one event type."""
    return f"{EVENTS_PREFIX}/event_type={event_type}"


def schema_fingerprint(names: list[str], types: list[str]) -> str:
    """Eight hex digits naming a file's columns and their types.

    Data files carry it in their name (``part-<uuid7>-<fingerprint>.parquet``), so a reader can
    group files of one schema, and read each group with a single schema (no per-file footer
    reads to reconcile schemas on every query) without opening any file first."""
    text = ",".join(f"{n}:{t}" for n, t in zip(names, types, strict=True))
    return hashlib.blake2b(text.encode(), digest_size=4).hexdigest()


def data_file_name(prefix: str, fingerprint: str | None) -> str:
    """``<prefix><uuid7>[-<fingerprint>].parquet``: unique, time-ordered, schema-tagged."""
    from uuid6 import uuid7

    tail = f"-{fingerprint}" if fingerprint else ""
    return f"{prefix}{uuid7()}{tail}.parquet"


def name_fingerprint(name: str) -> str | None:
    """The schema fingerprint in a data file's name, or None (files written before it existed)."""
    stem = name.rsplit("/", 1)[-1].removesuffix(".parquet")
    parts = stem.split("-")
    # prefix, then the UUID's five groups, then the fingerprint: 7 parts
    if len(parts) == 7 and len(parts[6]) == 8:
        return parts[6]
    return None
