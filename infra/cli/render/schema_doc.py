"""The schema reference an analyst reads: the tables, their columns, one line on each.

Column types come from DuckDB (the views defined over an empty lake, so no home is needed) and
column descriptions from the event models' field descriptions (``lake/events.py``), so the
reference cannot drift from the code. Columns that views compute rather than copy (``attempts``,
``seconds``...) are described here, next to the table descriptions.
"""

from __future__ import annotations

import functools
import tempfile
from dataclasses import dataclass

__all__ = ["TABLES", "COMPUTED", "SOURCES", "ColumnDoc", "TableDoc", "describe", "tables", "table"]

# One line per analyst table, in the order people meet them.
TABLES: dict[str, str] = {
    "documents": "one row per document: its latest version's name, hash, size and format",
    "jobs": "one row per processing run of one version of a document, with its outcome",
    "units": "one row per unit of work: a run of PDF pages or one spreadsheet sheet",
    "pages": "one row per stored text part (a PDF page or a sheet) and the reader that read it",
    "failures": "every error at every stage, retried or final",
    "model_calls": "every call to a model provider, with tokens, latency and cost",
    "results": "structured fields extracted from each document (its latest result)",
    "result_fields": "one row per extracted value of every result, for any schema",
    "events": "the envelope of every event of every type, deduplicated",
    "job_latency": "finished jobs: seconds from creation to the end, by page bucket",
    "stage_timings": "one row per job and stage: where the job's time went, stage after stage",
    "daily_costs": "one row per day and model: pages, model calls, tokens and cost",
    "quality_checks": "data-quality expectations evaluated by `doclake lake check`",
    "labels": "one row per imported label of a document (a person's answer key), every version",
    "label_values": "one row per value of every label, with its labeller and whether superseded",
    "eval_runs": "one row per scoring run of `doclake evals score` or `evals report`, with its "
                 "overall figures",
    "eval_scores": "precision, recall and F1 per run, group and field (and per document)",
    "eval_outcomes": "one row per compared value of a scoring run: hit, miss or extra",
    "weekly_f1": "weekly F1 with its interval per model version and strategy, as each week's "
                 "`doclake evals report` recorded it, with the traffic-weighted estimate",
}

# Columns a view computes, or whose meaning there differs from the event field of that name.
COMPUTED: dict[tuple[str, str], str] = {
    ("documents", "created_at"): "when the first version of the document was registered",
    ("documents", "latest_job_id"): "the job of the latest version",
    ("documents", "status"): "the status of the latest version's job (jobs.status of "
                             "latest_job_id)",
    ("documents", "failure_reason"): "why the latest version's job failed (jobs.failure_reason)",
    ("documents", "finished_at"): "when the latest version's job succeeded or failed",
    ("jobs", "created_at"): "when the job was planned",
    ("jobs", "finished_at"): "when the job succeeded or failed, in UTC (empty while it runs)",
    ("jobs", "status"): "the job's status (the latest of its events)",
    ("jobs", "source_name"): "the file's own name, from its document's registration",
    ("jobs", "source_path"): "the file's path relative to the folder given to `doclake run`, "
                             "from its document's registration",
    ("failures", "failure_reason"): "a stable code for the error (corrupt, encrypted, "
                                    "timeout...), the same word as jobs.failure_reason (the "
                                    "event's error_type)",
    ("units", "status"): "where the unit is (pending: planned, no worker took it yet; "
                         "running: a worker has it)",
    ("units", "kind"): "what the unit holds (pdf_pages: a run of a PDF's pages, an Office "
                       "file's once converted; sheet: one spreadsheet sheet, CSV or text file)",
    ("model_calls", "outcome"): "how the call ended (empty: an answer with no text; blocked: "
                                "refused by the provider's safety filter)",
    ("model_calls", "provider"): "who answered the call (simulated: --reader simulated, no "
                                 "real spend)",
    ("results", "status"): "the result's status (not_applicable: the document is not of the "
                           "kind the schema is for, so no values)",
    ("results", "strategy"): "how fields were extracted",
    ("result_fields", "strategy"): "how fields were extracted",
    ("failures", "stage"): "the step that failed: a queue's handler, a message no handler could "
                           "read (dispatch), the poller, or an upload refused (ingest)",
    ("pages", "reader"): "what read the text: the PDF text layer (text), OCR, a blank page, a "
                         "spreadsheet (calamine, csv), a text file (text_file)",
    ("documents", "detected_format"): "the real format, sniffed from the bytes (not the name)",
    ("eval_outcomes", "outcome"): "the token's fate (wrong: a gold value and a different "
                                  "prediction; missed: no prediction; spurious: no gold value)",
    ("eval_scores", "level"): "what the figures are for (group: one model version and "
                              "strategy; document: one scored result; weighted: a group's, "
                              "each stratum weighted by its share of traffic)",
    ("eval_runs", "week_by"): "how a weekly report placed a label in a week (label: the week "
                              "it was labelled; document: the week its document was ingested); "
                              "empty for `doclake evals score`",
    ("weekly_f1", "week_by"): "how the report placed a label in a week (label: the week it was "
                              "labelled; document: the week its document was ingested)",
    ("labels", "value_format"): "how the label's values are written (text: as a reader writes "
                                "it; kleister: key=value tokens, already normalised)",
    ("label_values", "value_format"): "how the label's values are written (text: as a reader "
                                      "writes it; kleister: key=value tokens, normalised)",
    ("job_latency", "pages"): "pages in the document (sheets for a spreadsheet)",
    ("daily_costs", "input_tokens"): "tokens sent to that model that day",
    ("daily_costs", "output_tokens"): "tokens received from that model that day",
    ("units", "attempts"): "deliveries of the unit's message so far",
    ("units", "started_at"): "when the unit's first delivery started",
    ("units", "finished_at"): "when the unit was done or failed for good",
    ("units", "duration_ms"): "milliseconds the attempt that finished the unit took, from the "
                              "moment its worker took the unit's message to the moment every "
                              "page was stored: waiting for a CPU worker or a model slot, "
                              "reading and storing (each page's own reading time is "
                              "pages.duration_ms; stage_timings splits the two)",
    ("stage_timings", "stage"): "what the job was doing, in the order of stage_number (convert "
                                "and waiting for a converter: an Office file; split holds the "
                                "text layer's reading when pages are read at the split)",
    ("stage_timings", "stage_number"): "the stage's place in the job, from 1: ORDER BY it",
    ("stage_timings", "started_at"): "when the stage began: the end of the one before it, or "
                                     "the job's creation",
    ("stage_timings", "finished_at"): "when the stage ended: the start of the next one",
    ("stage_timings", "seconds"): "the stage's length; a job's rows add up to "
                                  "job_latency.end_to_end_seconds, those with after_finished "
                                  "false to job_latency.seconds",
    ("stage_timings", "after_finished"): "true for the stages after the job's status was final "
                                         "(index, waiting for fields, fields, publish)",
    ("stage_timings", "lane"): "what a waiting stage waited for: split (the split queue), "
                               "converter (LibreOffice), ocr, model or cpu (by what read the "
                               "last unit's pages), fields; NULL for a working stage",
    ("job_latency", "end_to_end_seconds"): "seconds from the job's creation to its last event: "
                                           "text indexed and fields published (the sum of its "
                                           "stage_timings rows)",
    ("job_latency", "created_at"): "when the job was planned",
    ("job_latency", "finished_at"): "when the job succeeded or failed",
    ("daily_costs", "is_total"): "true on the row that sums every model of the day (one for "
                                 "real spend, model total; one for simulated calls, "
                                 "simulated:total)",
    ("daily_costs", "simulated"): "true for simulated calls (--reader simulated), kept apart "
                                  "from real spend",
    ("daily_costs", "cost_per_1000_pages"): "cost in US dollars per 1,000 pages read "
                                            "(DECIMAL, rounded to 10 places)",
    ("pages", "read_at"): "when the page's text was stored",
    ("results", "published_at"): "when the result was published",
    ("result_fields", "published_at"): "when the value's result was published",
    ("job_latency", "seconds"): "seconds from the job's creation until its status was final "
                                "(succeeded or failed), before indexing and fields",
    ("job_latency", "page_bucket"): "the job's size in pages; unknown when the job never learnt "
                                    "its page count (it failed first)",
    ("job_latency", "page_bucket_min"): "the bucket's first page count (1, 21, 51, 101, 301): "
                                        "ORDER BY it, the labels do not sort",
    ("results", "values_found"): "how many values the result holds (rows in result_fields); "
                                 "0 when nothing was found",
    ("daily_costs", "dt"): "the UTC day (the jobs' day): one row per dt and model",
    ("daily_costs", "model"): "the reader or model (the text layer counts as a reader)",
    ("daily_costs", "pages"): "pages read that day by that reader or model",
    ("daily_costs", "model_calls"): "calls made that day to that model",
    ("daily_costs", "cost_usd"): "what those calls cost, in US dollars (DECIMAL: sums are "
                                 "exact)",
    ("model_calls", "cost_usd"): "cost of the call in US dollars (DECIMAL: sums are exact)",
    ("results", "effective_date"): "the agreement's effective date; empty when the published "
                                   "value is not a YYYY-MM-DD date (see effective_date_text)",
    ("results", "effective_date_text"): "the effective date as published, text: kept for a "
                                        "schema of your own whose value is not a date",
    ("quality_checks", "table_name"): "the table the expectation was checked on",
    ("labels", "imported_at"): "when the label was imported into the lake",
    ("labels", "superseded"): "true when a later label of the same document version exists",
    ("label_values", "superseded"): "true when a later label of the same document version exists",
    ("eval_runs", "scored_at"): "when the scoring run ran",
    ("eval_scores", "scored_at"): "when the scoring run ran",
    ("eval_outcomes", "scored_at"): "when the scoring run ran",
    ("weekly_f1", "scored_at"): "when the week's report was recorded",
    ("weekly_f1", "documents"): "labelled documents of the week behind the figure",
    ("weekly_f1", "f1_low"): "low end of the 95% interval of F1 (BCa bootstrap over documents)",
    ("weekly_f1", "f1_high"): "high end of the 95% interval of F1",
    ("weekly_f1", "weighted_f1"): "F1 with each stratum (format, size) weighted by its share of "
                                  "the week's traffic",
    ("weekly_f1", "weighted_f1_low"): "low end of the weighted F1's 95% interval",
    ("weekly_f1", "weighted_f1_high"): "high end of the weighted F1's 95% interval",
    ("*", "dt"): "the UTC day the row's partition holds; filter on it to read only those days",
}



# The event models each table's columns come from, first match wins: a column is described by
# its own table's event, never by another table's field of the same name.
SOURCES: dict[str, tuple[str, ...]] = {
    "documents": ("document_registered", "format_detected"),
    "jobs": ("job_created", "job_failed", "job_split"),
    "units": ("unit_planned", "unit_done"),
    "pages": ("page_read",),
    "failures": ("failure",),
    "model_calls": ("model_call",),
    "results": ("result_published",),
    "result_fields": ("result_field",),
    "events": (),
    "job_latency": ("job_created",),
    "stage_timings": (),
    "daily_costs": (),
    "quality_checks": ("expectation_checked",),
    "labels": ("label",),
    "label_values": ("label_value", "label"),
    "eval_runs": ("eval_run",),
    "eval_scores": ("eval_score",),
    "eval_outcomes": ("eval_outcome",),
    "weekly_f1": ("eval_run", "eval_score"),
}


@dataclass(frozen=True)
class ColumnDoc:
    name: str
    type: str
    description: str
    values: tuple[str, ...] = ()
    """Every value the column can hold (``column_values``), empty for an open column."""


@dataclass(frozen=True)
class TableDoc:
    name: str
    description: str
    columns: tuple[ColumnDoc, ...]


def _event_descriptions(table: str) -> dict[str, str]:
    """Column name -> its description in this table's own event models (``SOURCES``), then
    the envelope every event carries."""
    from lake.events import EVENT_TYPES, Event

    found: dict[str, str] = {}
    for model in (*(EVENT_TYPES[t] for t in SOURCES.get(table, ())), Event):
        for name, info in model.model_fields.items():
            if info.description and name not in found:
                found[name] = info.description
    found.setdefault("event_type", "what happened, e.g. page_read or job_failed")
    return found


def _in_utc(kind: str, description: str) -> str:
    """Every view's times are TIMESTAMP in UTC, in DuckDB and Athena alike
    (``lake.views.utc_timestamp``): a timestamp column's line says so when its own does not."""
    if kind == "TIMESTAMP" and "UTC" not in description:
        return f"{description} (UTC)" if description else "UTC"
    return description


def _with_values(description: str, values: tuple[str, ...], note: str | None) -> str:
    """The description, then the values the column can hold (and what else, for an open one)."""
    if not values:
        return description
    listed = ", ".join(values)
    return f"{description}; one of: {listed}" + (f", {note}" if note else "")


def describe(table: str, column: str, kind: str) -> ColumnDoc:
    """One column of one table: its own description (``COMPUTED``, then its table's events),
    with the values it can hold."""
    from infra.cli.render.column_values import OPEN_NOTE, column_values

    described = _event_descriptions(table)
    text = (COMPUTED.get((table, column)) or COMPUTED.get(("*", column))
            or described.get(column, ""))
    values = column_values().get((table, column), ())
    return ColumnDoc(column, kind, _with_values(_in_utc(kind, text), values,
                                                OPEN_NOTE.get((table, column))), values)


@functools.cache
def tables() -> tuple[TableDoc, ...]:
    """Every analyst table with its columns, types and descriptions."""
    from lake.catalog import connect

    with tempfile.TemporaryDirectory(prefix="doclake-schema-") as empty_lake:
        con = connect(empty_lake)
        try:
            docs = []
            for table, about in TABLES.items():
                rows = con.execute(f"DESCRIBE {table}").fetchall()
                docs.append(TableDoc(table, about, tuple(
                    describe(table, name, kind) for name, kind, *_ in rows)))
        finally:
            con.close()
    return tuple(docs)


def table(name: str) -> TableDoc | None:
    return next((t for t in tables() if t.name == name), None)
