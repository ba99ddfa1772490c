"""What ``doclake run`` and ``doclake worker`` tell the user: a progress bar, then a summary.

Both count only what happened in this process: pages read are the pages of units finished now
(a re-run where nothing changed reads 0), and after Ctrl-C the summary counts what finished
before the stop, not what was planned.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
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

from extract.state import ClaimStatus, Job, JobStatus
from infra.cli.render.failure_hints import failure_hint
from infra.cli.render.output import terminal_safe
from infra.local.settled_watch import SettledWatch
from ingest.planner import Ingested, IngestOutcome

__all__ = ["failure_messages", "interrupted_note", "RunReport", "home_is_default", "WorkerReport",
           "progress_bar"]


def _finished(jobs: Sequence[Job]) -> tuple[list[Job], list[Job]]:
    return ([j for j in jobs if j.status is JobStatus.SUCCEEDED],
            [j for j in jobs if j.status is JobStatus.FAILED])


def _reasons(failed: Sequence[Job]) -> list[dict[str, Any]]:
    """Each failure reason with its count, the files it hit (in the order they were created) and
    the job whose message the summary quotes in full."""
    by_reason: dict[str, list[Job]] = {}
    for job in sorted(failed, key=lambda j: j.created_at):
        by_reason.setdefault(job.failure_reason or "unknown", []).append(job)
    return [{"reason": reason, "count": len(jobs), "files": [j.source_path or j.source_name
                                                               for j in jobs],
             "example_job_id": jobs[0].job_id, "message": jobs[0].failure_detail or None,
             "hint": failure_hint(reason)}
            for reason, jobs in sorted(by_reason.items(), key=lambda item: -len(item[1]))]


def _fields_failed(store, succeeded: Sequence[Job]) -> list[str]:
    """The succeeded documents whose field extraction failed (a result published as failed):
    their text is searchable, their fields are not there, and the summary must say so."""
    failed = []
    for job in succeeded:
        if job.fields_schema is None or job.fields_strategy is None:
            continue
        claim = store.get_field_claim(job.job_id, job.fields_strategy)
        if claim is not None and claim.status is ClaimStatus.FAILED:
            failed.append(job.source_path or job.source_name)
    return failed


def failure_messages(lake_uri: str, job_ids: Sequence[str]) -> dict[str, str]:
    """The first failure message the lake holds for each job, by job id.

    The job store keeps only a job's reason; the message a person needs (which page, which limit,
    what PDFium said) is in the ``failures`` table. Read after the run's events are flushed."""
    if not job_ids:
        return {}
    from lake.catalog import query

    marks = ", ".join("?" * len(job_ids))
    table = query(lake_uri, "SELECT job_id, arg_min(message, occurred_at) AS message FROM failures "
                  f"WHERE job_id IN ({marks}) AND message IS NOT NULL AND message <> '' "
                  "GROUP BY job_id", list(job_ids))
    return dict(zip(table.column("job_id").to_pylist(), table.column("message").to_pylist(),
                    strict=True))


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
    _interrupted_note: str | None = None  # what an interrupted run left, read by ``finish``
    objects_root: Path | None = None
    """The local object store's folder: pages read now are the page files written since the
    run started. None: counted from the finished units' pages instead."""

    @classmethod
    def start(cls, store, ingested: list[Ingested], started: float,
              unfinished_before: set[str] | frozenset[str] = frozenset()) -> RunReport:
        """``unfinished_before``: the jobs not ended when the run began. The planner calls a
        file "unchanged" when its job has ended by the time it is planned, and this run's
        workers may have finished one an interrupted run left mid-way first: that one was
        resumed, not unchanged."""
        ingested = [replace(i, outcome=IngestOutcome.RESUMED)
                    if i.outcome is IngestOutcome.UNCHANGED and i.job_id in unfinished_before
                    else i for i in ingested]
        job_ids = sorted({i.job_id for i in ingested})
        jobs = store.list_jobs(job_ids)
        unchanged = {i.job_id for i in ingested if i.outcome is IngestOutcome.UNCHANGED}
        resumed = {i.job_id for i in ingested if i.outcome is IngestOutcome.RESUMED}
        # What this run finishes: every job it created (ingest overlaps the work, so some may
        # be settled already) and every earlier job it found unfinished (or ended but with its
        # result or index not yet published).
        pending = [j.job_id for j in jobs if j.job_id not in unchanged or not j.settled]
        failed_before = sum(1 for j in jobs if j.job_id in unchanged
                            and j.status is JobStatus.FAILED)
        # Pages read before this run: only jobs it did not create can have any (a job created
        # by this run may already be under way when the report starts: ingest overlaps work).
        earlier = [j for j in pending if j in unchanged or j in resumed]
        return cls(ingested, job_ids, pending, store.page_progress(earlier)[1], started,
                   failed_before)

    def finish(self, store, *, interrupted: bool) -> RunReport:
        """Count the run's documents as the store holds them now.

        ``succeeded``, ``failed`` and ``pages`` describe every document the run was given,
        finished now or before, so they match ``SELECT`` over the lake for those jobs (the pages
        of a job's finished units are its rows in ``pages``); ``pages_read`` is the part this
        process read."""
        self._store = store
        everything = store.list_jobs(self.job_ids)
        succeeded, failed = _finished(everything)
        seconds = time.perf_counter() - self.started
        pages = store.page_progress(self.job_ids)[1]
        outcomes = Counter(i.outcome for i in self.ingested)
        self.summary = {
            "documents": len(self.ingested),
            "new": outcomes[IngestOutcome.NEW],
            "new_versions": outcomes[IngestOutcome.NEW_VERSION],
            "retried": outcomes[IngestOutcome.RETRY],
            "resumed": outcomes[IngestOutcome.RESUMED],
            "unchanged": outcomes[IngestOutcome.UNCHANGED],
            "duplicates": outcomes[IngestOutcome.DUPLICATE],
            "failed_before": self.failed_before,
            "succeeded": len(succeeded),
            "failed": len(failed),
            "unfinished": sum(not j.status.terminal for j in everything),
            "pages": pages,
            "pages_read": (self._pages_written_since_start(everything)
                           if self.objects_root is not None
                           else store.page_progress(self.pending)[1] - self.pages_before),
            "seconds": round(seconds, 3),
            "interrupted": interrupted,
            "failure_reasons": _reasons(failed),
            "fields_failed": _fields_failed(store, succeeded),
        }
        if interrupted:  # read now: the summary is printed after the store is closed
            self._interrupted_note = interrupted_note(
                store.list_jobs(self.pending), store.page_progress(self.pending),
                "`doclake worker --until-idle` (or the same `doclake run`) finishes them")
        return self

    def _pages_written_since_start(self, jobs: Sequence[Job]) -> int:
        """Pages this run stored: the page files of the run's jobs written since it started.

        A resumed unit skips the pages an earlier run stored (they are not read again), so
        counting finished units' pages would count those as read now; a page file is written
        only when its page is read."""
        from lake.layout import pages_prefix

        since = time.time() - (time.perf_counter() - self.started)
        written = 0
        for job in jobs:
            folder = self.objects_root / pages_prefix(job.document_id, job.job_id)
            try:
                with os.scandir(folder) as entries:
                    written += sum(1 for e in entries if e.stat().st_mtime >= since)
            except FileNotFoundError:
                continue
        return written

    def add_messages(self, messages: dict[str, str]) -> None:
        """Quote each reason's first message from the lake (``failure_messages``)."""
        for reason in self.summary.get("failure_reasons", []):
            reason["message"] = messages.get(reason["example_job_id"]) or reason["message"]

    def to_dict(self) -> dict[str, Any]:
        return dict(self.summary)

    def print(self, out: Console, home: str | None = None) -> None:
        s = self.summary
        parts = [f"new {s['new']}", f"new versions {s['new_versions']}"]
        parts += [f"{name} {s[key]}" for name, key in (("retried", "retried"),
                  ("resumed", "resumed"), ("duplicates", "duplicates")) if s[key]]
        parts.append(f"unchanged {s['unchanged']}")
        out.print(f"documents {s['documents']}  ({', '.join(parts)})")
        rate = s["pages_read"] / s["seconds"] if s["seconds"] else 0.0
        unfinished = f"  unfinished {s['unfinished']}" if s["unfinished"] else ""
        out.print(f"succeeded {s['succeeded']}  failed {s['failed']}{unfinished}  pages "
                  f"{s['pages']} ({s['pages_read']} read by this run)  time {s['seconds']:.1f} s"
                  f"  ({rate:.1f} pages/s)")
        if s["failure_reasons"]:
            out.print("failed, by reason:")
            for item in s["failure_reasons"]:
                names = item["files"]
                shown = ", ".join(terminal_safe(n, markup=False) for n in names[:3]) + (
                    f" and {len(names) - 3} more" if len(names) > 3 else "")
                out.print(f"  {terminal_safe(item['reason'], markup=False)}  {item['count']}  "
                          f"{shown}", markup=False)
                if item["message"]:
                    out.print(f"    {terminal_safe(names[0], markup=False)}: "
                              f"{terminal_safe(item['message'], markup=False)}", markup=False)
                out.print(f"    hint: {item['hint']}", markup=False)
        if s["fields_failed"]:
            names = ", ".join(terminal_safe(n, markup=False) for n in s["fields_failed"][:3])
            more = f" and {len(s['fields_failed']) - 3} more" if len(s["fields_failed"]) > 3 else ""
            out.print(f"fields failed for {len(s['fields_failed'])} succeeded documents: {names}"
                      f"{more}; their results/<document_id>.json says why", markup=False)
        if s["failed_before"]:
            out.print(f"{s['failed_before']} unchanged files failed before and were not taken "
                      "again; `--retry-failed` processes them again", markup=False)
        if s["interrupted"]:
            if self._interrupted_note:
                Console(stderr=True, highlight=False).print(
                    f"[yellow]interrupted:[/yellow] {self._interrupted_note}")
            return
        if home is not None:
            where = terminal_safe(home, markup=False)
            out.print(f"results: {where}/objects/results/<document_id>.json  text: "
                      f"{where}/objects/pages/<document_id>/<job_id>/00001.md", markup=False)
            flag = "" if home_is_default(home) else f" --home {where}"
            out.print("next:", markup=False)
            for command in (f"doclake status{flag}", f"doclake show{flag} FILE",
                            f"doclake search{flag} WORDS",
                            f"doclake sql{flag} \"SELECT * FROM documents\"",
                            f"doclake dashboard{flag} --out report.html"):
                out.print(f"  {command}", markup=False)


def home_is_default(home: str) -> bool:
    """Whether ``home`` is what commands find with no ``--home`` (``$DOCLAKE_HOME``, else
    ``./.doclake``), so the next commands can be shown without the flag."""
    import os
    from pathlib import Path

    default = os.environ.get("DOCLAKE_HOME") or ".doclake"
    return Path(default).resolve() == Path(home).resolve()


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

    def tracker(self, store, report: RunReport,
                activity: Callable[[], str] | None = None) -> Callable[[], bool]:
        """The runtime's stop test, which also updates the bar. ``activity``: a line naming
        what runs and what waits (``infra.local.activity``), shown under the bars once a second:
        when they stand still, it says why."""
        progress = self.progress
        documents = progress.add_task("documents", total=len(report.pending), rate="")
        pages = progress.add_task("pages", total=None, rate="")
        now_task = progress.add_task("now", total=None, rate="", visible=False)
        started = report.started  # the command's start, as the summary's rate: ingest overlaps work
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
                if activity is not None and (finished or now - state.get("said", 0.0) >= 1.0):
                    state["said"] = now
                    line = "" if finished else activity()
                    progress.update(now_task, rate=line, visible=bool(line))
            return finished

        return done


@contextmanager
def progress_bar(console: Console) -> Iterator[_Bar]:
    """Documents and pages, with pages per second and the time left; silent when not a terminal."""
    with Progress(TextColumn("{task.description:>10}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("{task.fields[rate]}"), TimeRemainingColumn(), TimeElapsedColumn(),
                  console=console, transient=False, disable=not console.is_terminal) as progress:
        yield _Bar(progress)
