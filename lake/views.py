"""The analyst-facing tables, written once in DuckDB SQL and transpiled for Athena.

Layering, the same in both engines:

- ``raw_<type>``: every row of one event type as written (a Parquet glob, an Arrow dataset or a
  Glue table); may hold duplicates after a redelivery or during a compaction.
- ``ev_<type>``: the same rows deduplicated by ``event_id`` (the earliest emission wins).
- the contract tables (``documents``, ``jobs``, ``units``...) and derived views, over ``ev_*`` only.

Only portable constructs are used (window functions, ``arg_max``, ``date_diff``); sqlglot turns
``QUALIFY`` and ``arg_max`` into Trino's forms.
"""

from __future__ import annotations

from lake.events import EVENT_TYPES
from lake.schema import ENVELOPE_FIELDS, columns

TERMINAL = "('succeeded', 'failed')"


def raw_view(event_type: str) -> str:
    return f"raw_{event_type}"


def dedup_view(event_type: str) -> str:
    return f"ev_{event_type}"


def dedup_sql(event_type: str) -> str:
    """``ev_<type>``: one row per event id, the earliest emission."""
    cols = ", ".join(c.name for c in columns(EVENT_TYPES[event_type]))
    return (
        f"SELECT {cols} FROM {raw_view(event_type)} "
        "QUALIFY row_number() OVER (PARTITION BY event_id ORDER BY occurred_at, event_id) = 1"
    )


def events_sql() -> str:
    """``events``: the envelope of every event of every type, deduplicated."""
    cols = ", ".join(ENVELOPE_FIELDS)
    return "\nUNION ALL\n".join(f"SELECT {cols} FROM {dedup_view(t)}" for t in EVENT_TYPES)


# Contract tables and derived views, in dependency order. Keys are view names.
DERIVED_VIEWS: dict[str, str] = {
    "documents": """
SELECT
  r.document_id,
  r.source_name,
  r.sha256,
  r.bytes,
  f.detected_format,
  c.created_at,
  r.version,
  r.job_id AS latest_job_id
FROM (
  SELECT document_id, source_name, sha256, bytes, version, job_id
  FROM ev_document_registered
  QUALIFY row_number() OVER (PARTITION BY document_id ORDER BY version DESC, occurred_at DESC) = 1
) AS r
JOIN (
  SELECT document_id, min(occurred_at) AS created_at
  FROM ev_document_registered GROUP BY document_id
) AS c ON c.document_id = r.document_id
LEFT JOIN ev_format_detected AS f ON f.job_id = r.job_id
""",
    "jobs": f"""
WITH transitions AS (
  SELECT job_id, status, occurred_at, CAST(NULL AS VARCHAR) AS failure_reason FROM ev_job_created
  UNION ALL
  SELECT job_id, status, occurred_at, CAST(NULL AS VARCHAR) FROM ev_job_extracting
  UNION ALL
  SELECT job_id, status, occurred_at, CAST(NULL AS VARCHAR) FROM ev_job_succeeded
  UNION ALL
  SELECT job_id, status, occurred_at, failure_reason FROM ev_job_failed
), latest AS (
  SELECT job_id, status, occurred_at, failure_reason
  FROM transitions
  QUALIFY row_number() OVER (
    PARTITION BY job_id
    ORDER BY CASE WHEN status IN {TERMINAL} THEN 1 ELSE 0 END DESC, occurred_at DESC
  ) = 1
)
SELECT
  c.job_id,
  c.document_id,
  l.status,
  c.occurred_at AS created_at,
  CASE WHEN l.status IN {TERMINAL} THEN l.occurred_at END AS finished_at,
  s.pages,
  s.units,
  l.failure_reason
FROM ev_job_created AS c
JOIN latest AS l ON l.job_id = c.job_id
LEFT JOIN ev_job_split AS s ON s.job_id = c.job_id
""",
    "units": """
WITH state AS (
  SELECT job_id, unit_id, 'running' AS status, occurred_at, 0 AS rank FROM ev_unit_started
  UNION ALL
  SELECT job_id, unit_id, 'done', occurred_at, 2 FROM ev_unit_done
  UNION ALL
  SELECT job_id, unit_id, 'failed', occurred_at, 1 FROM ev_unit_failed
), latest AS (
  SELECT job_id, unit_id, status
  FROM state
  QUALIFY row_number() OVER (PARTITION BY job_id, unit_id ORDER BY rank DESC, occurred_at DESC) = 1
), tries AS (
  SELECT job_id, unit_id, count(*) AS attempts FROM ev_unit_started GROUP BY job_id, unit_id
)
SELECT
  p.job_id,
  p.unit_id,
  p.kind,
  p.first_page,
  p.last_page,
  p.sheet_name,
  coalesce(l.status, 'pending') AS status,
  coalesce(t.attempts, 0) AS attempts,
  p.document_id
FROM ev_unit_planned AS p
LEFT JOIN latest AS l ON l.job_id = p.job_id AND l.unit_id = p.unit_id
LEFT JOIN tries AS t ON t.job_id = p.job_id AND t.unit_id = p.unit_id
""",
    "pages": """
SELECT job_id, document_id, page_number, reader, chars, unit_id, occurred_at AS read_at
FROM ev_page_read
""",
    "failures": """
SELECT occurred_at, job_id, document_id, unit_id, stage, error_type, message, final, attempt,
       message_id
FROM ev_failure
""",
    "model_calls": """
SELECT call_id, job_id, document_id, purpose, provider, model, outcome, http_status,
       input_tokens, output_tokens, latency_ms, cost_usd, attempt, occurred_at, page_number
FROM ev_model_call
""",
    "results": """
SELECT document_id, job_id, status, effective_date, jurisdiction, party, term, strategy,
       model_version, input_tokens, output_tokens, processing_ms, occurred_at AS published_at
FROM ev_result_published
QUALIFY row_number() OVER (PARTITION BY document_id ORDER BY occurred_at DESC) = 1
""",
    "quality_checks": """
SELECT occurred_at, run_id, table_name, expectation, success, unexpected_count, details
FROM ev_expectation_checked
""",
    "job_latency": """
SELECT
  job_id,
  document_id,
  status,
  pages,
  date_diff('millisecond', created_at, finished_at) / 1000.0 AS seconds,
  CASE
    WHEN pages IS NULL THEN 'unknown'
    WHEN pages <= 20 THEN '1-20'
    WHEN pages <= 50 THEN '21-50'
    WHEN pages <= 100 THEN '51-100'
    WHEN pages <= 300 THEN '101-300'
    ELSE 'over 300'
  END AS page_bucket,
  created_at,
  finished_at
FROM jobs
WHERE finished_at IS NOT NULL
""",
    "daily_costs": """
WITH read AS (
  SELECT CAST(occurred_at AS DATE) AS day, reader AS model, count(*) AS pages
  FROM ev_page_read GROUP BY 1, 2
), calls AS (
  SELECT CAST(occurred_at AS DATE) AS day, model, count(*) AS model_calls,
         CAST(sum(input_tokens) AS BIGINT) AS input_tokens,
         CAST(sum(output_tokens) AS BIGINT) AS output_tokens,
         sum(cost_usd) AS cost_usd
  FROM ev_model_call GROUP BY 1, 2
)
SELECT
  coalesce(r.day, c.day) AS day,
  coalesce(r.model, c.model) AS model,
  coalesce(r.pages, 0) AS pages,
  coalesce(c.model_calls, 0) AS model_calls,
  coalesce(c.input_tokens, 0) AS input_tokens,
  coalesce(c.output_tokens, 0) AS output_tokens,
  coalesce(c.cost_usd, 0.0) AS cost_usd
FROM read AS r
FULL OUTER JOIN calls AS c ON c.day = r.day AND c.model = r.model
""",
}

CONTRACT_TABLES = (
    "events",
    "documents",
    "jobs",
    "units",
    "pages",
    "model_calls",
    "failures",
    "results",
)
