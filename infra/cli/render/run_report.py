"""What ``doclake run`` and ``doclake worker`` tell the user: a progress bar, then a summary.

Both count only what happened in this process: pages read are the pages of units finished now
(a re-run where nothing changed reads 0), and after Ctrl-C the summary counts what finished
before the stop, not what was planned.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from extract.state import Job, JobStatus
from infra.cli.render.output import terminal_safe
from infra.local.settled_watch import SettledWatch
from ingest.planner import Ingested, IngestOutcome


def _finished(jobs: Sequence[Job]) -> tuple[list[Job], list[Job]]:
    return ([j for j in jobs if j.status is JobStatus.SUCCEEDED],
            [j for j in jobs if j.status is JobStatus.FAILED])


def _reasons(failed: Sequence[Job]) -> list[tuple[str, int, list[str]]]:
    by_reason = Counter(j.failure_reason or "unknown" for j in failed)
    return [(reason, count, [j.source_path or j.source_name for j in failed if (j.failure_reason or "unknown")
                             == reason]) for reason, count in by_reason.most_common()]


def interrupted_note(jobs, pages: tuple[int, int], how: str) -> str:
    """What an interrupted run left, in documents: those whose job has not ended (with the pages
    read of those planned), apart from those that ended and only wait for their result or index
    (before, every unpublished result counted as a document not finished)."""
    open_jobs = sum(not j.status.terminal for j in jobs)
    waiting = sum(j.status.terminal and not j.settled for j in jobs)
    parts = [f"{open_jobs} of {len(jobs)} documents not finished ({pages[1]} of {pages[0]} "
             "pages read)"]
    if waiting:
        parts.append(f"{waiting} finished, their results not yet published")
    return "; ".join(parts) + f"; {how}"


def _note_interrupted(store, job_ids: list[str], how: str) -> None:
    """On stderr, whatever the format: a note for the person, not data."""
    note = interrupted_note(store.list_jobs(job_ids), store.page_progress(job_ids), how)
    Console(stderr=True, highlight=False).print(f"[yellow]interrupted:[/yellow] {note}")


@dataclass
class RunReport:
    """The jobs a run is waiting for, and the pages already read when it started."""

    ingested: list[Ingested]
    job_ids: list[str]
    pending: list[str]  # jobs not settled when processing started: what this run finishes
    pages_before: int
    started: float
    failed_before: int = 0  # identical bytes that failed earlier and were not taken again
    summary: dict[str, Any] = field(default_factory=dict)
    _store: Any = None  # the store ``finish`` read, for the interrupted note

    @classmethod
    def start(cls, store, ingested: list[Ingested], started: float) -> RunReport:
        job_ids = sorted({i.job_id for i in ingested})
        jobs = store.list_jobs(job_ids)
        unchanged = {i.job_id for i in ingested if i.outcome is IngestOutcome.UNCHANGED}
        # What this run finishes: every job it created (ingest overlaps the work, so some may
        # be settled already) and every earlier job it found unfinished.
        pending = [j.job_id for j in jobs if j.job_id not in unchanged or not j.settled]
        failed_before = sum(1 for j in jobs if j.job_id in unchanged
                            and j.status is JobStatus.FAILED)
        # Pages read before this run: only jobs it did not create can have any (a job created
        # by this run may already be under way when the report starts: ingest overlaps work).
        resumed = [j for j in pending if j in unchanged]
        return cls(ingested, job_ids, pending, store.page_progress(resumed)[1], started,
                   failed_before)

    def finish(self, store, *, interrupted: bool) -> RunReport:
        self._store = store
        jobs = store.list_jobs(self.pending)
        succeeded, failed = _finished(jobs)
        seconds = time.perf_counter() - self.started
        pages = store.page_progress(self.pending)[1] - self.pages_before
        outcomes = Counter(i.outcome for i in self.ingested)
        self.summary = {
            "documents": len(self.ingested),
            "new": outcomes[IngestOutcome.NEW],
            "new_versions": outcomes[IngestOutcome.NEW_VERSION],
            "retried": outcomes[IngestOutcome.RETRY],
            "unchanged": outcomes[IngestOutcome.UNCHANGED],
            "failed_before": self.failed_before,
            "succeeded": len(succeeded),
            "failed": len(failed),
            "unfinished": sum(not j.settled for j in jobs),
            "pages_read": pages,
            "seconds": round(seconds, 3),
            "interrupted": interrupted,
            "failure_reasons": _reasons(failed),
        }
        return self

    def print(self, out: Console) -> None:
        s = self.summary
        line = (f"documents {s['documents']}  (new {s['new']}, new versions {s['new_versions']}, "
                + (f"retried {s['retried']}, " if s["retried"] else "")
                + f"unchanged {s['unchanged']})")
        out.print(line)
        rate = s["pages_read"] / s["seconds"] if s["seconds"] else 0.0
        out.print(f"succeeded {s['succeeded']}  failed {s['failed']}  pages read "
                  f"{s['pages_read']}  time {s['seconds']:.1f} s  ({rate:.1f} pages/s)")
        if s["failure_reasons"]:
            out.print("failed, by reason:")
            for reason, count, names in s["failure_reasons"]:
                shown = ", ".join(terminal_safe(n, markup=False) for n in names[:3]) + (
                    " …" if len(names) > 3 else "")
                out.print(f"  {terminal_safe(reason, markup=False)}  {count}  {shown}",
                          markup=False)
        if s["failed_before"]:
            out.print(f"{s['failed_before']} unchanged files failed before and were not taken "
                      "again; `--retry-failed` processes them again", markup=False)
        if s["interrupted"] and self._store is not None:
            _note_interrupted(self._store, self.pending, "`doclake worker --until-idle` (or the "
                              "same `doclake run`) finishes them")


@dataclass
class WorkerReport:
    """``doclake worker``: documents finished and pages read in this process."""

    recovered: dict[str, int]
    pending: list[str]
    pages_before: int
    started: float
    summary: dict[str, Any] = field(default_factory=dict)
    _store: Any = None  # the store ``finish`` read, for the interrupted note

    @classmethod
    def start(cls, store, recovered: dict[str, int]) -> WorkerReport:
        pending = [j.job_id for j in store.list_jobs() if not j.settled]
        return cls(recovered, pending, store.page_progress(pending)[1], time.perf_counter())

    def finish(self, store, stats) -> WorkerReport:
        self._store = store
        jobs = store.list_jobs(self.pending)
        succeeded, failed = _finished(jobs)
        self.summary = {
            "documents": sum(j.settled for j in jobs),
            "succeeded": len(succeeded),
            "failed": len(failed),
            "unfinished": sum(not j.settled for j in jobs),
            "pages_read": store.page_progress(self.pending)[1] - self.pages_before,
            "messages": stats.messages,
            "retries": stats.retries,
            "dead_letters": stats.dead_letters,
            "recovered_messages": self.recovered.get("released", 0),
            "seconds": round(time.perf_counter() - self.started, 3),
            "interrupted": stats.interrupted,
        }
        return self

    def to_dict(self) -> dict[str, Any]:
        return dict(self.summary)

    def print_interrupted(self) -> None:
        if self._store is not None:
            _note_interrupted(self._store, self.pending,
                              "`doclake worker --until-idle` finishes them")

    def print(self, out: Console) -> None:
        s = self.summary
        out.print(f"documents {s['documents']}  (succeeded {s['succeeded']}, failed {s['failed']})"
                  f"  pages read {s['pages_read']}  time {s['seconds']:.1f} s")
        out.print(f"messages {s['messages']}  (retries {s['retries']}, dead letters "
                  f"{s['dead_letters']}, released after a crash {s['recovered_messages']})")
        if s["interrupted"]:
            self.print_interrupted()


class _Bar:
    def __init__(self, progress: Progress):
        self.progress = progress

    def tracker(self, store, report: RunReport) -> Callable[[], bool]:
        """The runtime's stop test, which also updates the bar."""
        progress = self.progress
        documents = progress.add_task("documents", total=len(report.pending), rate="")
        pages = progress.add_task("pages", total=None, rate="")
        started = time.perf_counter()
        watch = SettledWatch(store, report.pending)
        state: dict[str, float] = {"shown": 0.0}

        def done() -> bool:
            finished = watch()  # asked after every poll pass: follows the store's changes
            if not progress.disable:  # the bar: redrawn a few times a second at most
                now = time.perf_counter()
                if finished or now - state["shown"] >= 0.25:
                    state["shown"] = now
                    progress.update(documents, completed=watch.settled)
                    total, read = store.page_progress(report.pending)
                    elapsed = now - started
                    rate = (read - report.pages_before) / elapsed if elapsed > 0 else 0.0
                    progress.update(pages, total=total or None, completed=read,
                                    rate=f"{rate:,.0f} pages/s")
            return finished

        return done


@contextmanager
def progress_bar(console: Console) -> Iterator[_Bar]:
    """Documents and pages, with pages per second and the time left; silent when not a terminal."""
    with Progress(TextColumn("{task.description:>10}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("{task.fields[rate]}"), TimeRemainingColumn(), TimeElapsedColumn(),
                  console=console, transient=False, disable=not console.is_terminal) as progress:
        yield _Bar(progress)
