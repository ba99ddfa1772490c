"""Event sequences of whole jobs, as the pipeline would emit them, for lake tests."""

from __future__ import annotations

from datetime import datetime, timedelta

from lake import events as ev


def _planned(ids: dict, start: datetime, pages: int, sha: str, size: int):
    """Registered, created, sniffed, split into five-page units, extracting."""
    def at(seconds: float) -> datetime:
        return start + timedelta(seconds=seconds)

    ranges = [(first, min(first + 4, pages)) for first in range(1, pages + 1, 5)]
    events: list[ev.Event] = [
        ev.DocumentRegistered(**ids, occurred_at=at(0), source_name=f"{ids['document_id']}.pdf",
                              sha256=sha, bytes=size),
        ev.JobCreated(**ids, occurred_at=at(0)),
        ev.FormatDetected(**ids, occurred_at=at(1), detected_format="pdf"),
        ev.JobSplit(**ids, occurred_at=at(1), pages=pages, units=len(ranges)),
        *(ev.UnitPlanned(**ids, unit_id=f"u{n}", kind="pdf", first_page=a, last_page=b,
                         occurred_at=at(1)) for n, (a, b) in enumerate(ranges)),
        ev.JobExtracting(**ids, occurred_at=at(2)),
    ]
    return events, ranges, at


def succeeded_job(doc: str, job: str, *, start: datetime, pages: int = 7,
                  pages_read: int | None = None, reader: str = "text",
                  chars: int | None = None, size: int = 1234) -> list[ev.Event]:
    """A PDF that succeeds; ``pages_read`` below ``pages`` leaves the last pages without a row."""
    ids = {"document_id": doc, "job_id": job}
    events, ranges, at = _planned(ids, start, pages, "ab" * 32, size)
    readable = pages if pages_read is None else pages_read
    for n, (first, last) in enumerate(ranges):
        unit = {**ids, "unit_id": f"u{n}"}
        events.append(ev.UnitStarted(**unit, attempt=1, occurred_at=at(3)))
        events += [ev.PageRead(**unit, page_number=p, reader=reader,
                               chars=100 * p if chars is None else chars, occurred_at=at(4))
                   for p in range(first, last + 1) if p <= readable]
        events.append(ev.UnitDone(**unit, pages=last - first + 1, occurred_at=at(5)))
    events.append(ev.JobSucceeded(**ids, pages=pages, units=len(ranges), occurred_at=at(6)))
    return events


def failed_job(doc: str, job: str, *, start: datetime, pages: int = 3, attempts: int = 1,
               error_type: str = "Timeout", message: str = "model timed out",
               size: int = 99) -> list[ev.Event]:
    """A PDF whose every unit fails on its last attempt; the poller fails the job."""
    ids = {"document_id": doc, "job_id": job}
    events, ranges, at = _planned(ids, start, pages, "cd" * 32, size)
    for n, _ in enumerate(ranges):
        unit = {**ids, "unit_id": f"u{n}"}
        for attempt in range(1, attempts + 1):
            final = attempt == attempts
            when = at(2 + 2 * attempt)
            events.append(ev.UnitStarted(**unit, attempt=attempt, occurred_at=when - timedelta(
                seconds=1)))
            if final:
                events.append(ev.UnitFailed(**unit, attempt=attempt, error_type=error_type,
                                            message=message, occurred_at=when))
            events.append(ev.FailureRecorded(**unit, attempt=attempt, stage="read",
                                             error_type=error_type, message=message,
                                             final=final, occurred_at=when))
    events.append(ev.JobFailed(**ids, failure_reason=f"unit u0 failed: {error_type}",
                               pages=pages, units=len(ranges), occurred_at=at(3 + 2 * attempts)))
    return events


def uuid7_at(moment: datetime, tail: int = 0) -> str:
    """A UUIDv7 minted at ``moment`` (RFC 9562 layout: 48-bit milliseconds, version 7, variant
    10); ``tail`` fills the random bits, so ids minted at one moment stay distinct."""
    import uuid

    millis = int(moment.timestamp() * 1000)
    value = (millis << 80) | (0x7 << 76) | (0b10 << 62) | (tail & ((1 << 62) - 1))
    return str(uuid.UUID(int=value))
