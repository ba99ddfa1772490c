"""The values each enumerated column can hold, read from the code that writes them.

The schema reference (``schema_doc``) lists these under each column, so a value added to or
removed from an enum changes the documentation with it; ``tests/test_analyst_column_values.py``
compares every list with ``SELECT DISTINCT`` over a lake that exercises them all. Where the code
writes a word from a literal rather than an enum (the evals' outcomes, the failure stages of the
poller and the front door), the literal is named here once, next to where it comes from.

Open columns are not listed: ``failure_reason`` (any stable ``error_type`` of a handler or a
format), ``pages.reader`` beyond its fixed readers (a model's own name reads a page too), and
``daily_costs.model``.
"""

from __future__ import annotations

import functools
import typing

__all__ = ["column_values", "OPEN_NOTE"]


def _literal(model, field: str) -> tuple[str, ...]:
    """The words of a ``Literal[...]`` field of a pydantic model."""
    return tuple(typing.get_args(model.model_fields[field].annotation))


@functools.cache
def column_values() -> dict[tuple[str, str], tuple[str, ...]]:
    """(table, column) -> the values the column can hold, in the order people read them."""
    from evals.weekly import WEEK_BY
    from extract.fields.result import FieldResult
    from extract.fields.strategies import STRATEGIES
    from extract.formats.sniff import Format
    from extract.formats.spreadsheet import READER as SHEET_READER
    from extract.handlers.split import CSV_READER, PDF_KIND, SHEET_KIND, TEXT_DOCUMENT_READER
    from extract.handling import STAGES as HANDLER_STAGES
    from extract.models.base import Outcome
    from extract.readers.blank import BLANK_READER
    from extract.readers.ocr import READER as OCR_READER
    from extract.readers.text import READER as TEXT_READER
    from extract.readers.vision import GeminiReader, SimulatedReader
    from extract.state import JobStatus, UnitStatus
    from lake.views import PAGE_BUCKET_NAMES, STAGE_LANE_NAMES, STAGE_NAMES

    job_statuses = tuple(JobStatus)
    strategies = tuple(STRATEGIES)
    # The stages a failure is recorded at: each queue's handler (extract.handling.STAGES), a
    # message no handler could read ("dispatch", extract.handling), the poller's own failures
    # ("poller", extract.poller) and an upload refused at the front door ("ingest",
    # ingest.uploads).
    failure_stages = ("ingest", "dispatch", *dict.fromkeys(HANDLER_STAGES.values()), "poller")
    values: dict[tuple[str, str], tuple[str, ...]] = {
        ("documents", "status"): job_statuses,
        ("documents", "detected_format"): tuple(Format),
        ("jobs", "status"): job_statuses,
        ("units", "status"): tuple(UnitStatus),
        ("units", "kind"): (PDF_KIND, SHEET_KIND),
        ("pages", "reader"): (TEXT_READER, OCR_READER, BLANK_READER, SHEET_READER, CSV_READER,
                              TEXT_DOCUMENT_READER),
        ("failures", "stage"): failure_stages,
        ("model_calls", "outcome"): tuple(Outcome),
        ("model_calls", "provider"): (GeminiReader.provider, SimulatedReader.provider),
        ("results", "status"): _literal(FieldResult, "status"),
        ("results", "strategy"): strategies,
        ("result_fields", "strategy"): strategies,
        ("stage_timings", "stage"): STAGE_NAMES,
        ("stage_timings", "lane"): STAGE_LANE_NAMES,
        ("job_latency", "page_bucket"): PAGE_BUCKET_NAMES,
        # evals.scoring: one token's fate; evals.score_run: a group's or a document's figures,
        # evals.weekly: a group's weighted by stratum; evals.labels: how values are written.
        ("eval_outcomes", "outcome"): ("hit", "wrong", "missed", "spurious"),
        ("eval_scores", "level"): ("group", "document", "weighted"),
        ("eval_runs", "week_by"): WEEK_BY,
        ("weekly_f1", "week_by"): WEEK_BY,
        ("labels", "value_format"): ("text", "kleister"),
        ("label_values", "value_format"): ("text", "kleister"),
    }
    return {key: tuple(str(v) for v in found) for key, found in values.items()}


OPEN_NOTE: dict[tuple[str, str], str] = {
    ("pages", "reader"): "or the model that read the page, by its name (simulated:<model> for "
                         "--reader simulated)",
}
"""Columns whose listed values are not all: what else they can hold."""
