"""The lake side of evals: read labels, results and documents; write label and score events.

Everything else in ``evals`` is pure and takes plain records; this module is the only one that
runs SQL (``lake.catalog``) or writes Parquet (``lake.writer``), so the rules stay testable
without a lake and the queries stay in one place. Results are read from ``ev_result_published``
(every result, not only a document's latest as in ``results``) and their values from
``result_fields``, so any schema can be scored.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

from evals.scoring import Label, Result
from lake.events import Event

__all__ = ["read_call_costs", "read_current_versions", "read_documents", "read_job_facts",
           "read_labels", "read_results", "read_traffic", "write_events", "read_rows"]


def read_rows(lake_uri: str, sql: str, parameters: list | None = None) -> list[dict]:
    """Rows of one statement as dicts (the catalog relists files first)."""
    from lake.catalog import query

    return query(lake_uri, sql, parameters).to_pylist()


def _utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def read_documents(lake_uri: str) -> list[dict]:
    """Every registered version: document_id, sha256, source_name."""
    return read_rows(lake_uri, "SELECT DISTINCT document_id, sha256, source_name "
                     "FROM ev_document_registered")


def read_current_versions(lake_uri: str) -> dict[str, str]:
    """document_id -> SHA-256 of its latest version: what a label must have been written for."""
    return {r["document_id"]: r["sha256"]
            for r in read_rows(lake_uri, "SELECT document_id, sha256 FROM documents")}


def read_labels(lake_uri: str, *, include_superseded: bool = False) -> list[Label]:
    """The current label of every labelled document version (every label with the flag): a
    document relabelled after a new version has one for each version it was labelled at."""
    where = "" if include_superseded else "WHERE NOT l.superseded"
    rows = read_rows(lake_uri, f"""
        SELECT l.document_id, l.label_id, l.labeller, l.labelled_at, l.fields_labelled,
               l.value_format, l.sha256, l.provenance, v.field, v.value, v.value_index
        FROM labels AS l
        LEFT JOIN label_values AS v ON v.dt = l.dt AND v.label_id = l.label_id
        {where}
        ORDER BY l.document_id, l.labelled_at, l.label_id, v.field, v.value_index""")
    labels: dict[str, dict] = {}
    for row in rows:
        entry = labels.setdefault(row["label_id"], {
            "row": row, "values": {name: [] for name in row["fields_labelled"] or []}})
        if row["field"] is not None:
            entry["values"].setdefault(row["field"], []).append(row["value"])
    return [Label(document_id=e["row"]["document_id"], label_id=lid,
                  labeller=e["row"]["labeller"], labelled_at=_utc(e["row"]["labelled_at"]),
                  values={k: tuple(v) for k, v in e["values"].items()},
                  value_format=e["row"]["value_format"], sha256=e["row"]["sha256"],
                  provenance=e["row"]["provenance"])
            for lid, e in labels.items()]


def read_results(lake_uri: str, document_ids: Iterable[str] | None = None) -> list[Result]:
    """Every published result (of the given documents) with its values in index order."""
    ids = sorted(set(document_ids)) if document_ids is not None else None
    if ids is not None and not ids:
        return []
    where = "WHERE r.document_id IN (SELECT unnest(?))" if ids is not None else ""
    rows = read_rows(lake_uri, f"""
        SELECT r.document_id, r.job_id, r.strategy, r.model_version, r.schema_name, r.status,
               r.occurred_at AS published_at, r.failure_reason, r.processing_ms,
               r.input_tokens + r.output_tokens AS tokens, d.sha256,
               f.field, f.value, f.value_index, f.page_number, f.confidence
        FROM ev_result_published AS r
        LEFT JOIN ev_document_registered AS d ON d.dt = r.dt AND d.job_id = r.job_id
        LEFT JOIN result_fields AS f
          ON f.dt = r.dt AND f.job_id = r.job_id AND f.strategy = r.strategy
        {where}
        ORDER BY r.document_id, r.occurred_at, r.job_id, f.field, f.value_index""",
                     [ids] if ids is not None else None)
    results: dict[tuple[str, str], dict] = {}
    for row in rows:
        entry = results.setdefault((row["job_id"], row["strategy"]),
                                   {"row": row, "values": {}, "confidences": {}})
        if row["field"] is not None:
            entry["values"].setdefault(row["field"], []).append((row["value"], row["page_number"]))
            entry["confidences"].setdefault(row["field"], []).append(row["confidence"])
    return [Result(document_id=e["row"]["document_id"], job_id=job, strategy=strategy,
                   model_version=e["row"]["model_version"],
                   published_at=_utc(e["row"]["published_at"]), status=e["row"]["status"],
                   schema_name=e["row"]["schema_name"],
                   values={k: tuple(v) for k, v in e["values"].items()},
                   failure_reason=e["row"]["failure_reason"], sha256=e["row"]["sha256"],
                   processing_ms=e["row"]["processing_ms"], tokens=e["row"]["tokens"] or 0,
                   confidences={k: tuple(v) for k, v in e["confidences"].items()})
            for (job, strategy), e in results.items()]


def read_job_facts(lake_uri: str) -> dict[str, dict]:
    """job_id -> what the weekly report breaks figures down by: the version's detected_format,
    pages, source_path and source_key, and when the version was registered (its document date)."""
    rows = read_rows(lake_uri, """
        SELECT d.job_id, d.document_id, d.sha256, d.source_path, d.source_key,
               d.occurred_at AS registered_at, f.detected_format, s.pages
        FROM ev_document_registered AS d
        LEFT JOIN ev_format_detected AS f ON f.dt = d.dt AND f.job_id = d.job_id
        LEFT JOIN ev_job_split AS s ON s.job_id = d.job_id
        QUALIFY row_number() OVER (PARTITION BY d.job_id ORDER BY d.occurred_at) = 1""")
    return {r["job_id"]: {**r, "registered_at": _utc(r["registered_at"])} for r in rows}


def read_traffic(lake_uri: str) -> list[dict]:
    """Every published result without its values: document_id, job_id, strategy,
    model_version, status, failure_reason, published_at (what the weekly report weighs labels
    by)."""
    rows = read_rows(lake_uri, """
        SELECT document_id, job_id, strategy, model_version, status, failure_reason,
               occurred_at AS published_at
        FROM ev_result_published ORDER BY occurred_at, job_id""")
    return [{**r, "published_at": _utc(r["published_at"])} for r in rows]


def read_call_costs(lake_uri: str, job_ids: Iterable[str]) -> dict[str, dict]:
    """job_id -> model calls made to extract its fields (purpose ``extract_fields``): calls,
    tokens and US dollars. A job extracted by two LLM strategies has their calls together."""
    ids = sorted(set(job_ids))
    if not ids:
        return {}
    rows = read_rows(lake_uri, """
        SELECT job_id, count(*) AS calls, sum(input_tokens + output_tokens) AS tokens,
               sum(cost_usd) AS cost_usd
        FROM model_calls WHERE purpose = 'extract_fields' AND job_id IN (SELECT unnest(?))
        GROUP BY job_id""", [ids])
    return {r["job_id"]: r for r in rows}


def write_events(lake_uri: str, events: Sequence[Event]) -> None:
    """Durable on return (the writer fsyncs and renames)."""
    from lake.writer import ParquetEventWriter

    if not events:
        return
    writer = ParquetEventWriter.for_uri(lake_uri)
    try:
        writer.write(list(events))
    finally:
        writer.close()
