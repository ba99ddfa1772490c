"""A lake that exercises every card and chart of the dashboard, with the long labels a real one
has (a simulated model's full name, ``split: unsupported_format``, ``effective_date``), written
as the pipeline's own events so the views compute everything from them.

The figures a test checks are in ``BusyLake``: they are the inputs, not the dashboard's output,
so a test computes what the page must say from them on its own."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from lake import events as ev
from lake.writer import ParquetEventWriter
from support.lakegen import succeeded_job, uuid7_at

START = datetime(2026, 3, 2, 9, tzinfo=UTC)  # a Monday
NDA_FIELDS = ("effective_date", "jurisdiction", "party", "term")


@dataclass
class BusyLake:
    """What was written: the inputs a test derives the dashboard's figures from."""

    seconds: list[float] = field(default_factory=list)  # each succeeded job: created to final status
    real_cost: float = 0.0
    simulated_cost: float = 0.0
    applicable: int = 0  # results of documents the schema applies to
    not_applicable: int = 0
    found: dict[str, int] = field(default_factory=dict)  # field -> applicable results with it
    # the latest scoring run of each week: (scored_at, f1, f1_low, f1_high) of its overall row
    weekly_f1: list[tuple[datetime, float, float, float]] = field(default_factory=list)


def _finished_after(events: list[ev.Event], start: datetime, seconds: float) -> list[ev.Event]:
    """The job's events with its success moved to ``seconds`` after ``start``."""
    return [e.model_copy(update={"occurred_at": start + timedelta(seconds=seconds)})
            if isinstance(e, ev.JobSucceeded) else e for e in events]


def _failed_split(doc: str, job: str, at: datetime, reason: str) -> list[ev.Event]:
    ids = {"document_id": doc, "job_id": job}
    return [
        ev.DocumentRegistered(**ids, occurred_at=at, source_name=f"{reason}.pdf",
                              source_path=f"contracts/received/{reason}.pdf", sha256="ef" * 32,
                              bytes=4321),
        ev.JobCreated(**ids, occurred_at=at),
        ev.FailureRecorded(**ids, stage="split", error_type=reason, final=True,
                           message=f"cannot split: {reason}", occurred_at=at + timedelta(seconds=1)),
        ev.JobFailed(**ids, failure_reason=reason, occurred_at=at + timedelta(seconds=2)),
    ]


def _result(doc: str, job: str, at: datetime,
            found: tuple[str, ...] | None) -> list[ev.Event]:
    ids = {"document_id": doc, "job_id": job, "occurred_at": at}
    status = "succeeded" if found is not None else "not_applicable"
    events: list[ev.Event] = [ev.ResultPublished(
        **ids, status=status, strategy="rules", model_version="rules-v1", schema_name="nda",
        document_kind="nda", applies=found is not None)]
    for name in found or ():
        values = ["Acme Corporation", "Globex International Holdings"] if name == "party" \
            else ["2026-01-15"]
        events += [ev.ResultFieldExtracted(**ids, field=name, value=value, value_index=n,
                                           strategy="rules", model_version="rules-v1",
                                           schema_name="nda")
                   for n, value in enumerate(values)]
    return events


def write_busy_lake(lake_uri: str) -> BusyLake:
    """Write the lake at ``lake_uri``; return what it holds."""
    lake = BusyLake()
    events: list[ev.Event] = []
    readers = ("simulated:gemini-2.5-flash-lite", "simulated:gemini-2.5-flash", "text", "ocr",
               "text", "simulated:gemini-2.5-flash-lite")
    pages = (3, 12, 25, 4, 60, 2)
    seconds = (6.0, 10.0, 20.0, 40.0, 100.0, 8.0)
    founds = (("effective_date", "party", "term"), ("party", "jurisdiction"),
              ("effective_date", "party"), None, ("effective_date", "party"), None)
    for n, (reader, size, spent, found) in enumerate(zip(readers, pages, seconds, founds,
                                                         strict=True)):
        at = START + timedelta(minutes=7 * n)
        doc, job = uuid7_at(at, 2 * n), uuid7_at(at, 2 * n + 1)
        events += _finished_after(succeeded_job(doc, job, start=at, pages=size, reader=reader),
                                  at, spent)
        lake.seconds.append(spent)
        events += _result(doc, job, at + timedelta(seconds=spent + 1), found)
        if found is None:
            lake.not_applicable += 1
        else:
            lake.applicable += 1
            for name in found:
                lake.found[name] = lake.found.get(name, 0) + 1
        if reader.startswith("simulated:"):
            for page in range(1, size + 1):
                events.append(ev.ModelCalled(
                    document_id=doc, job_id=job, call_id=f"{job}-{page}", purpose="read_page",
                    provider="simulated", model=reader.removeprefix("simulated:"), outcome="ok",
                    input_tokens=1200, output_tokens=400, latency_ms=2900.0, cost_usd=0.0011,
                    page_number=page, occurred_at=at + timedelta(seconds=3)))
                lake.simulated_cost += 0.0011
    for n, reason in enumerate(("unsupported_format", "encrypted", "encrypted")):
        at = START + timedelta(hours=1, minutes=n)
        events += _failed_split(uuid7_at(at, 100 + 2 * n), uuid7_at(at, 101 + 2 * n), at, reason)
    # One real (billed) model: a document read by Gemini itself.
    at = START + timedelta(hours=2)
    doc, job = uuid7_at(at, 200), uuid7_at(at, 201)
    events += succeeded_job(doc, job, start=at, pages=2, reader="gemini-2.5-flash")
    lake.seconds.append(6.0)  # succeeded_job's own: created at 0, succeeded at 6 s
    for page in (1, 2):
        events.append(ev.ModelCalled(
            document_id=doc, job_id=job, call_id=f"{job}-{page}", purpose="read_page",
            provider="gemini", model="gemini-2.5-flash", outcome="ok", input_tokens=1500,
            output_tokens=500, latency_ms=3100.0, cost_usd=0.0025, page_number=page,
            occurred_at=at + timedelta(seconds=3)))
        lake.real_cost += 0.0025
    # Three weekly scoring runs, each with its overall F1 and bootstrap interval, and an earlier
    # run in the first week that the week's latest run supersedes.
    runs = [(START + timedelta(days=1), "run-early", (0.5, 0.3, 0.7), False)]
    runs += [(START + timedelta(weeks=week, days=4), f"run-{week}", figures, True)
             for week, figures in enumerate(((0.81, 0.70, 0.90), (0.86, 0.77, 0.93),
                                             (0.91, 0.84, 0.96)))]
    for at, run, (f1, low, high), latest in runs:
        events.append(ev.EvalRunCompleted(eval_run_id=run, occurred_at=at, documents=40,
                                          scored_results=40, groups=1, f1=f1, resamples=1000))
        for name in ("overall", *NDA_FIELDS):
            events.append(ev.EvalScoreComputed(
                eval_run_id=run, occurred_at=at, level="group", model_version="rules-v1",
                strategy="rules", field=name, precision=f1, recall=f1, f1=f1, hits=30,
                predicted=33, expected=33, scored_documents=40, f1_low=low, f1_high=high))
        if latest:
            lake.weekly_f1.append((at, f1, low, high))
    ParquetEventWriter.for_uri(lake_uri).write(events)
    return lake
