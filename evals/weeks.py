"""Weeks as a quality team counts them: ISO weeks, Monday 00:00 UTC to the next Monday.

A report run on a Monday reports the week that just ended (``Week.last_complete``), so running it
again later that day, or on Tuesday after a failure, reports the same week.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

__all__ = ["Week"]


@dataclass(frozen=True, order=True)
class Week:
    start: date
    """The Monday the week begins on."""

    @classmethod
    def of(cls, moment: datetime | date) -> Week:
        day = moment.astimezone(UTC).date() if isinstance(moment, datetime) else moment
        return cls(day - timedelta(days=day.weekday()))

    @classmethod
    def last_complete(cls, now: datetime) -> Week:
        return cls.of(now).back(1)

    @classmethod
    def parse(cls, text: str) -> Week:
        """``2026-W18`` (ISO week) or any date inside the week (``2026-05-01``)."""
        value = text.strip()
        try:
            if "-W" in value.upper():
                year, week = value.upper().split("-W")
                return cls(date.fromisocalendar(int(year), int(week), 1))
            return cls.of(date.fromisoformat(value))
        except ValueError:
            raise ValueError(f"{text!r} is not a week: give 2026-W18 or a date such as "
                             "2026-05-01") from None

    @property
    def label(self) -> str:
        year, week, _ = self.start.isocalendar()
        return f"{year}-W{week:02d}"

    @property
    def since(self) -> datetime:
        return datetime.combine(self.start, time(), UTC)

    @property
    def until(self) -> datetime:
        return self.since + timedelta(days=7)

    def back(self, weeks: int) -> Week:
        return Week(self.start - timedelta(days=7 * weeks))

    def holds(self, moment: datetime) -> bool:
        return self.since <= moment < self.until

    def trend(self, count: int) -> list[Week]:
        """The ``count`` weeks ending with this one, oldest first."""
        return [self.back(k) for k in range(count - 1, -1, -1)]
