"""``doclake status``: documents by the status of their latest job, and the queues.

Documents, not jobs, by default: a file that failed and was taken again has two jobs, and counting
both would show one document as two failures. ``--jobs`` counts every job instead.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from extract.messages import QUEUES
from extract.state import Job, JobStatus
from infra.cli.render.output import print_table


@dataclass(frozen=True)
class StatusReport:
    counted: str  # "documents" or "jobs"
    by_status: dict[str, int]
    failure_reasons: dict[str, int]
    queues: list[dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        return {self.counted: self.by_status, "failure_reasons": self.failure_reasons,
                "queues": self.queues}

    def long_rows(self) -> Iterator[tuple[str, str, int]]:
        """One row per figure, for CSV: (table, key, value)."""
        for name, count in self.by_status.items():
            yield self.counted, name, count
        for name, count in self.failure_reasons.items():
            yield "failure_reasons", name, count
        for queue in self.queues:
            for key in ("visible", "in_flight", "dead_letter"):
                yield f"queue {queue['queue']}", key, queue[key]

    def print_tables(self) -> None:
        print_table(("status", self.counted), ((k, str(v)) for k, v in self.by_status.items()),
                    title=self.counted + ("" if self.counted == "jobs" else " (by latest job)"))
        if self.failure_reasons:
            print_table(("failure_reason", self.counted),
                        ((k, str(v)) for k, v in self.failure_reasons.items()), title="failed")
        print_table(("queue", "visible", "in flight", "dead letter"),
                    ((q["queue"], str(q["visible"]), str(q["in_flight"]), str(q["dead_letter"]))
                     for q in self.queues), title="queues")


def latest_jobs(jobs: list[Job]) -> list[Job]:
    """Each document's newest job (job ids are UUIDv7, so they sort by creation time)."""
    latest: dict[str, Job] = {}
    for job in sorted(jobs, key=lambda j: (j.created_at, j.job_id)):
        latest[job.document_id] = job
    return list(latest.values())


def read_status(settings, *, every_job: bool = False) -> StatusReport:
    from infra.local.jobstore import SqliteJobStore
    from infra.local.queue import SqliteQueue

    home = settings.home
    jobs = SqliteJobStore(home / "jobs.db").list_jobs()
    counted = jobs if every_job else latest_jobs(jobs)
    statuses = Counter(j.status.value for j in counted)
    reasons = Counter(j.failure_reason or "unknown" for j in counted if j.status is JobStatus.FAILED)
    queue = SqliteQueue(home / "queue.db", max_receives=settings.max_receives)
    depths = []
    for name in QUEUES:
        depth = queue.depth(name)
        depths.append({"queue": name, "visible": depth.visible, "in_flight": depth.in_flight,
                       "dead_letter": depth.dead_letter})
    return StatusReport("jobs" if every_job else "documents",
                        {s.value: statuses.get(s.value, 0) for s in JobStatus},
                        dict(reasons.most_common()), depths)
