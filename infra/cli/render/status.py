"""``doclake status``: documents by the status of their latest job, and the queues.

Documents, not jobs, by default: a file that failed and was taken again has two jobs, and counting
both would show one document as two failures. ``--jobs`` counts every job instead.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from extract.messages import QUEUES
from extract.state import Job, JobStatus
from infra.cli.render.output import print_table

__all__ = ["StatusReport", "latest_jobs", "read_status", "LATEST_FAILED"]


@dataclass(frozen=True)
class StatusReport:
    counted: str  # "documents" or "jobs"
    by_status: dict[str, int]
    failure_reasons: dict[str, int]
    queues: list[dict[str, Any]]
    latest_failed: list[dict[str, str]] = field(default_factory=list)
    """The newest failed documents (file, reason, hint): what a person looks at first."""
    home: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {self.counted: self.by_status, "failure_reasons": self.failure_reasons,
                "latest_failed": self.latest_failed, "queues": self.queues,
                "next": self.next_command()}

    def next_command(self) -> str:
        """The one command to type next, from what the home holds."""
        home = f" --home {self.home}" if self.home else ""
        if self.by_status.get("queued") or self.by_status.get("extracting"):
            return f"doclake worker{home} --until-idle   (finish what is left)"
        if self.latest_failed:
            return (f"doclake show{home} {self.latest_failed[0]['file']}   (why it failed); "
                    "after fixing, doclake run PATH --retry-failed")
        if not any(self.by_status.values()):
            return f"doclake run PATH{home}   (nothing has been run yet)"
        return f'doclake search{home} WORDS   or   doclake sql{home} "SELECT * FROM documents"'

    def long_rows(self) -> Iterator[tuple[str, str, int]]:
        """One row per figure, for CSV: (table, key, value)."""
        for name, count in self.by_status.items():
            yield self.counted, name, count
        for name, count in self.failure_reasons.items():
            yield "failure_reasons", name, count
        for failed in self.latest_failed:
            yield "latest_failed", failed["file"], failed["reason"]
        for queue in self.queues:
            for key in ("visible", "in_flight", "dead_letter"):
                yield f"queue {queue['queue']}", key, queue[key]

    def print_tables(self) -> None:
        print_table(("status", self.counted), ((k, str(v)) for k, v in self.by_status.items()),
                    title=self.counted + ("" if self.counted == "jobs" else " (by latest job)"))
        if self.failure_reasons:
            print_table(("failure_reason", self.counted),
                        ((k, str(v)) for k, v in self.failure_reasons.items()), title="failed")
        if self.latest_failed:
            print_table(("file", "reason", "what to do"),
                        ((f["file"], f["reason"], f["hint"]) for f in self.latest_failed),
                        title="latest failed files")
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
    from infra.cli.render.failure_hints import failure_hint

    failed = sorted((j for j in latest_jobs(jobs) if j.status is JobStatus.FAILED),
                    key=lambda j: (j.finished_at or j.created_at, j.job_id), reverse=True)
    latest_failed = [{"file": j.source_path or j.source_name or j.document_id,
                      "reason": j.failure_reason or "unknown",
                      "hint": failure_hint(j.failure_reason or "unknown")}
                     for j in failed[:LATEST_FAILED]]
    return StatusReport("jobs" if every_job else "documents",
                        {s.value: statuses.get(s.value, 0) for s in JobStatus},
                        dict(reasons.most_common()), depths, latest_failed, str(home))


LATEST_FAILED = 5
