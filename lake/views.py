"""The analyst-facing tables, written once in DuckDB SQL and transpiled for Athena.

Layering, the same in both engines:

- ``raw_<type>``: every row of one event type as written (a Parquet glob, an Arrow dataset or a
  Glue table), plus ``dt``, the partition folder it was read from; may hold duplicates after a
  redelivery or during a compaction.
- ``ev_<type>``: the same rows deduplicated by ``event_id`` within their ``dt`` (the earliest
  emission wins). Exact, because the writer puts every copy of an event in the same ``dt``
  (``lake.layout.partition_date``: the day of the job's or document's UUIDv7 id).
- the contract tables (``documents``, ``jobs``, ``units``...) and derived views, over ``ev_*`` only.

**Partition pruning.** Every table has ``dt`` (a DATE), and the SQL is shaped so a filter on it
reaches the file listing in both engines: every window is partitioned by ``dt`` first, every join
of two event tables includes ``a.dt = b.dt``, every aggregate groups by ``dt``, and ``dt`` is never
computed from anything but the partition column. DuckDB then pushes ``dt = ...`` through windows,
joins and unions into ``read_parquet``'s file filter; Trino (Athena) does the same
(``PredicatePushDown.visitWindow`` pushes conjuncts over partition-by symbols; equi-joins
propagate them) down to partition projection. ``tests/test_partitions.py`` checks both.

**Types, the same in both engines.** Times are ``TIMESTAMP`` in UTC with no zone
(``utc_timestamp``, applied in ``ev_<type>``), money ``DECIMAL(18,10)`` (``MONEY``), dates
``DATE``; ``tests/test_analyst_types.py`` checks that Glue declares what DuckDB computes.

**Time in Athena.** The lake stores microseconds; Athena reads Parquet timestamps as
``timestamp(3)``, i.e. rounded to milliseconds. Values that matter are therefore also kept in
numeric columns computed from the events themselves (``duration_ms``, ``latency_ms``,
``processing_ms``, ``job_latency.seconds``), and nothing here compares timestamps at a finer grain
than a millisecond.

Only portable constructs are used (window functions, ``date_diff``, ``UNION ALL``); sqlglot turns
``QUALIFY`` into Trino's form.
"""

from __future__ import annotations

from lake.events import EVENT_TYPES
from lake.schema import ENVELOPE_FIELDS, Column, columns

__all__ = ["TERMINAL", "PARTITION_COLUMN", "MONEY", "ISO_DATE", "raw_view", "dedup_view", "utc_timestamp",
           "dedup_sql", "events_sql", "STAGES", "STAGE_LANES", "STAGE_LANE_NAMES", "STAGE_NAMES",
           "PAGE_BUCKET_NAMES",
           "stage_timings_sql", "DERIVED_VIEWS", "CONTRACT_TABLES", "EVAL_TABLES"]

TERMINAL = "('succeeded', 'failed')"
PARTITION_COLUMN = "dt"
MONEY = "DECIMAL(18,10)"
"""Every money column of every view (``model_calls.cost_usd``, ``daily_costs.cost_usd`` and
``cost_per_1000_pages``), in both engines. The events store a DOUBLE (a shipped field is never
retyped); the views round it to this once, so sums are exact (0.1 + 0.2 = 0.3). Ten decimals: a
price of $0.0001 per million tokens is 1e-10 USD a token, so any price quoted to four decimals
per million gives an exact cost for any token count; eighteen digits leave eight before the
point, up to $99,999,999.99 in one row. DuckDB and Trino both sum a DECIMAL(18,10) into a
DECIMAL(38,10), which the views cast back, so one type reaches the analyst everywhere."""
ISO_DATE = "'^[0-9]{4}-[0-9]{2}-[0-9]{2}$'"
"""The text a DATE is made from (YYYY-MM-DD only): DuckDB's and Trino's casts accept different
spellings beyond it, so only this one is cast, and both engines give the same DATE or NULL."""


def raw_view(event_type: str) -> str:
    return f"raw_{event_type}"


def dedup_view(event_type: str) -> str:
    return f"ev_{event_type}"


def utc_timestamp(column: Column) -> str:
    """A raw column as the views show it: a timestamp as ``TIMESTAMP`` in UTC, the rest as is.

    The Parquet files hold UTC instants (``isAdjustedToUTC``), which DuckDB reads as
    ``TIMESTAMPTZ`` and Athena as a plain ``timestamp`` in UTC (Glue has no zoned type). The
    views give both engines the second: ``AT TIME ZONE 'UTC'`` turns DuckDB's instant into the
    UTC wall-clock time whatever the session's zone, and ``lake.athena`` drops it for Trino,
    whose column already is that. One type, ``TIMESTAMP`` (UTC, no zone), in every view of
    both engines."""
    if column.duckdb == "TIMESTAMPTZ":
        return f"{column.name} AT TIME ZONE 'UTC' AS {column.name}"
    return column.name


def dedup_sql(event_type: str) -> str:
    """``ev_<type>``: one row per event id, the earliest emission, with its ``dt`` (a DATE) and
    its timestamps as ``TIMESTAMP`` in UTC (``utc_timestamp``).

    ``dt`` is passed through untouched: a DATE in DuckDB (``hive_types``) and in Glue
    (``lake.glue.PARTITION_TYPE``), so a filter on it in any view is a filter on the partition
    key itself, the form partition projection prunes by."""
    own = columns(EVENT_TYPES[event_type])
    cols = ", ".join(c.name for c in own)
    typed = ", ".join(utc_timestamp(c) for c in own)
    return (
        f"SELECT {cols}, dt FROM ("
        f"SELECT {typed}, dt FROM {raw_view(event_type)}) AS r "
        "QUALIFY row_number() OVER (PARTITION BY dt, event_id ORDER BY occurred_at, event_id) = 1"
    )


def events_sql() -> str:
    """``events``: the envelope of every event of every type, deduplicated, with ``dt``."""
    cols = ", ".join((*ENVELOPE_FIELDS, PARTITION_COLUMN))
    return "\nUNION ALL\n".join(f"SELECT {cols} FROM {dedup_view(t)}" for t in EVENT_TYPES)


STAGES: tuple[tuple[str, str, str], ...] = (
    # (stage, where it ends as milliseconds after the job's creation, the event it needs)
    ("queued", "date_diff('millisecond', j.created_at, f.detected_at)", "f.detected_at"),
    ("waiting for a converter",
     "date_diff('millisecond', j.created_at, s.split_at) - s.conversion_ms", "s.conversion_ms"),
    ("split", "date_diff('millisecond', j.created_at, s.split_at)", "s.split_at"),
    ("waiting for a worker",
     "date_diff('millisecond', j.created_at, u.done_at) - least(coalesce(u.read_ms, u.span_ms), "
     "u.span_ms)", "u.done_at"),
    ("read", "date_diff('millisecond', j.created_at, u.done_at)", "u.done_at"),
    ("finish", "date_diff('millisecond', j.created_at, j.finished_at)", "j.finished_at"),
    ("index", "date_diff('millisecond', j.created_at, i.indexed_at)", "i.indexed_at"),
    ("waiting for fields",
     "date_diff('millisecond', j.created_at, r.extracted_at) - r.processing_ms", "r.extracted_at"),
    ("fields", "date_diff('millisecond', j.created_at, r.extracted_at)", "r.extracted_at"),
    ("publish", "date_diff('millisecond', j.created_at, r.published_at)", "r.published_at"),
)
"""The stages of ``stage_timings``, in order. Each ends where the next begins: a stage's end is
the running maximum of the ends so far (an event that came out of order shortens the stage
after it, never overlaps), so a job's stages add up to the time from its creation to its last
event. A stage whose event is missing has no row (and no length). The two stages between
``split`` and ``waiting for a worker`` are told apart by ``conversion_ms``: an Office file's
``split`` row is named ``convert`` (LibreOffice's own time and the split of its PDF), and the
time before it is ``waiting for a converter``. The last unit to finish decides the read stages:
its pages' own reading time (``pages.duration_ms``) is ``read``, the rest of the time since
the split (its message queued, earlier attempts, waiting for a CPU worker or a model slot,
storing) is ``waiting for a worker``."""
STAGE_LANES = {
    "queued": "'split'",
    "waiting for a converter": "'converter'",
    "waiting for a worker": ("CASE lane_rank WHEN 2 THEN 'ocr' WHEN 1 THEN 'model' "
                             "WHEN 0 THEN 'cpu' END"),
    "waiting for fields": "'fields'",
}
"""``stage_timings.lane``: what a waiting stage waited for (SQL over ``bounds``). The split
queue (``queued``); LibreOffice (``converter``); for the last unit, by what read its pages: the
OCR lane (``ocr``: tesseract), a model slot (``model``), or the CPU lane of text layers and sheets
(``cpu``); the fields queue (``fields``). Other stages have none."""
STAGE_LANE_NAMES = ("split", "converter", "ocr", "model", "cpu", "fields")
"""Every value ``stage_timings.lane`` can hold (besides NULL)."""
STAGE_NAMES = tuple(name for name, _, _ in STAGES[:2]) + ("split", "convert") + tuple(
    name for name, _, _ in STAGES[3:])
"""Every value ``stage_timings.stage`` can hold."""
PAGE_BUCKET_NAMES = ("1-20", "21-50", "51-100", "101-300", "over 300", "unknown")
"""Every value ``job_latency.page_bucket`` can hold (the words of its CASE in ``DERIVED_VIEWS``):
``unknown`` for a job that never learnt its page count, because it failed before."""


def stage_timings_sql() -> str:
    """``stage_timings``: one row per job and stage (``STAGES``), from the events of the job's
    own day (``dt``: every join equates it)."""
    ends = []
    for k in range(len(STAGES)):
        parts = ", ".join(f"coalesce({e}, 0)" for _, e, _ in STAGES[:k + 1])
        ends.append(f"CAST(greatest(0, {parts}) AS DOUBLE) AS end_{k}")
    rows = []
    for k, (name, _, needs) in enumerate(STAGES):
        start = "0" if k == 0 else f"end_{k - 1}"
        label = (f"'{name}'" if name != "split"
                 else "CASE WHEN conversion_ms IS NULL THEN 'split' ELSE 'convert' END")
        needed = needs.split(".", 1)[1]
        rows.append(
            f"SELECT dt, job_id, document_id, {k + 1} AS stage_number, {label} AS stage, "
            f"{start} AS start_ms, end_{k} AS end_ms, created_at, finished_at, "
            f"{'true' if k >= 6 else 'false'} AS after_finished, "
            f"{STAGE_LANES.get(name, 'CAST(NULL AS VARCHAR)')} AS lane FROM bounds "
            f"WHERE {needed} IS NOT NULL")
    union = "\n  UNION ALL\n  ".join(rows)
    return f"""
WITH units_last AS (  -- the job's last unit to finish: its last attempt and its pages' reading
  SELECT d.dt, d.job_id, d.occurred_at AS done_at,
         CAST(coalesce(date_diff('millisecond', t.last_started_at, d.occurred_at), 0)
              AS DOUBLE) AS span_ms,
         p.read_ms, p.lane_rank
  FROM ev_unit_done AS d
  LEFT JOIN (
    SELECT dt, job_id, unit_id, max(occurred_at) AS last_started_at
    FROM ev_unit_started GROUP BY dt, job_id, unit_id
  ) AS t ON t.dt = d.dt AND t.job_id = d.job_id AND t.unit_id = d.unit_id
  LEFT JOIN (
    SELECT dt, job_id, unit_id, sum(duration_ms) AS read_ms,
           max(CASE WHEN reader = 'ocr' THEN 2
                    WHEN reader IN ('text', 'blank', 'calamine', 'csv', 'text_file') THEN 0
                    ELSE 1 END) AS lane_rank
    FROM ev_page_read GROUP BY dt, job_id, unit_id
  ) AS p ON p.dt = d.dt AND p.job_id = d.job_id AND p.unit_id = d.unit_id
  QUALIFY row_number() OVER (
    PARTITION BY d.dt, d.job_id ORDER BY d.occurred_at DESC, d.unit_id) = 1
), bounds AS (
  SELECT j.dt, j.job_id, j.document_id, j.created_at, j.finished_at, f.detected_at,
         s.split_at, s.conversion_ms, u.done_at, u.lane_rank, i.indexed_at, r.extracted_at,
         r.published_at,
         {(", " + chr(10) + "         ").join(ends)}
  FROM jobs AS j
  LEFT JOIN (
    SELECT dt, job_id, min(occurred_at) AS detected_at FROM ev_format_detected
    GROUP BY dt, job_id
  ) AS f ON f.dt = j.dt AND f.job_id = j.job_id
  LEFT JOIN (
    SELECT dt, job_id, min(occurred_at) AS split_at, max(conversion_ms) AS conversion_ms
    FROM ev_job_split GROUP BY dt, job_id
  ) AS s ON s.dt = j.dt AND s.job_id = j.job_id
  LEFT JOIN units_last AS u ON u.dt = j.dt AND u.job_id = j.job_id
  LEFT JOIN (
    SELECT dt, job_id, max(occurred_at) AS indexed_at FROM ev_document_indexed
    GROUP BY dt, job_id
  ) AS i ON i.dt = j.dt AND i.job_id = j.job_id
  LEFT JOIN (
    SELECT dt, job_id, occurred_at AS published_at,
           coalesce(extracted_at, occurred_at) AS extracted_at,
           coalesce(processing_ms, 0) AS processing_ms
    FROM ev_result_published
    QUALIFY row_number() OVER (PARTITION BY dt, job_id ORDER BY occurred_at DESC) = 1
  ) AS r ON r.dt = j.dt AND r.job_id = j.job_id
), stages AS (
  {union}
)
SELECT job_id, document_id, stage_number, stage,
       created_at + to_milliseconds(CAST(round(start_ms) AS BIGINT)) AS started_at,
       created_at + to_milliseconds(CAST(round(end_ms) AS BIGINT)) AS finished_at,
       (end_ms - start_ms) / 1000.0 AS seconds,
       after_finished, lane, dt
FROM stages
"""


# Contract tables and derived views, in dependency order. Keys are view names.
DERIVED_VIEWS: dict[str, str] = {
    "jobs": f"""
WITH transitions AS (
  SELECT dt, job_id, status, occurred_at, CAST(NULL AS VARCHAR) AS failure_reason
  FROM ev_job_created
  UNION ALL
  SELECT dt, job_id, status, occurred_at, CAST(NULL AS VARCHAR) FROM ev_job_extracting
  UNION ALL
  SELECT dt, job_id, status, occurred_at, CAST(NULL AS VARCHAR) FROM ev_job_succeeded
  UNION ALL
  SELECT dt, job_id, status, occurred_at, failure_reason FROM ev_job_failed
), latest AS (
  SELECT dt, job_id, status, occurred_at, failure_reason
  FROM transitions
  QUALIFY row_number() OVER (
    PARTITION BY dt, job_id
    ORDER BY CASE WHEN status IN {TERMINAL} THEN 1 ELSE 0 END DESC, occurred_at DESC
  ) = 1
)
SELECT
  c.job_id,
  c.document_id,
  r.source_name,
  r.source_path,
  l.status,
  c.occurred_at AS created_at,
  CASE WHEN l.status IN {TERMINAL} THEN l.occurred_at END AS finished_at,
  s.pages,
  s.units,
  l.failure_reason,
  c.dt
FROM ev_job_created AS c
JOIN latest AS l ON l.dt = c.dt AND l.job_id = c.job_id
LEFT JOIN ev_job_split AS s ON s.dt = c.dt AND s.job_id = c.job_id
LEFT JOIN ev_document_registered AS r ON r.dt = c.dt AND r.job_id = c.job_id
""",
    # One row per document: its latest version. dt is the document's day (every version's
    # registration lives there), so the latest version is chosen without leaving the partition.
    "documents": """
SELECT
  r.document_id,
  r.source_name,
  r.source_path,
  r.sha256,
  r.bytes,
  f.detected_format,
  c.created_at,
  r.version,
  r.job_id AS latest_job_id,
  j.status,
  j.failure_reason,
  j.finished_at,
  r.dt
FROM (
  SELECT dt, document_id, source_name, source_path, sha256, bytes, version, job_id
  FROM ev_document_registered
  QUALIFY row_number() OVER (
    PARTITION BY dt, document_id ORDER BY version DESC, occurred_at DESC) = 1
) AS r
JOIN (
  SELECT dt, document_id, min(occurred_at) AS created_at
  FROM ev_document_registered GROUP BY dt, document_id
) AS c ON c.dt = r.dt AND c.document_id = r.document_id
LEFT JOIN ev_format_detected AS f ON f.dt = r.dt AND f.job_id = r.job_id
LEFT JOIN (
  SELECT dt, job_id, status, failure_reason, finished_at FROM jobs
) AS j ON j.dt = r.dt AND j.job_id = r.job_id
""",
    # started_at: the first attempt's start; finished_at: when the unit was done (or failed);
    # duration_ms: the worker's own measure of the attempt that finished it (unit_done), else
    # finished_at minus the last attempt's start. A number, so Athena's millisecond timestamps
    # do not round it.
    "units": """
WITH state AS (
  SELECT dt, job_id, unit_id, 'running' AS status, occurred_at, 0 AS rank,
         CAST(NULL AS DOUBLE) AS duration_ms, CAST(NULL AS BIGINT) AS pages_skipped
  FROM ev_unit_started
  UNION ALL
  SELECT dt, job_id, unit_id, 'done', occurred_at, 2, duration_ms, pages_skipped
  FROM ev_unit_done
  UNION ALL
  SELECT dt, job_id, unit_id, 'failed', occurred_at, 1, CAST(NULL AS DOUBLE),
         CAST(NULL AS BIGINT)
  FROM ev_unit_failed
), latest AS (
  SELECT dt, job_id, unit_id, status, occurred_at, duration_ms, pages_skipped
  FROM state
  QUALIFY row_number() OVER (
    PARTITION BY dt, job_id, unit_id ORDER BY rank DESC, occurred_at DESC) = 1
), tries AS (
  SELECT dt, job_id, unit_id, count(*) AS attempts, min(occurred_at) AS started_at,
         max(occurred_at) AS last_started_at
  FROM ev_unit_started GROUP BY dt, job_id, unit_id
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
  t.started_at,
  CASE WHEN l.status IN ('done', 'failed') THEN l.occurred_at END AS finished_at,
  CASE WHEN l.status IN ('done', 'failed') THEN coalesce(
    l.duration_ms,
    CAST(date_diff('millisecond', t.last_started_at, l.occurred_at) AS DOUBLE)) END
    AS duration_ms,
  l.pages_skipped,
  p.document_id,
  p.dt
FROM ev_unit_planned AS p
LEFT JOIN latest AS l ON l.dt = p.dt AND l.job_id = p.job_id AND l.unit_id = p.unit_id
LEFT JOIN tries AS t ON t.dt = p.dt AND t.job_id = p.job_id AND t.unit_id = p.unit_id
""",
    "pages": """
SELECT job_id, document_id, page_number, reader, chars, unit_id, occurred_at AS read_at,
       duration_ms, dt
FROM ev_page_read
""",
    "failures": """
SELECT occurred_at, job_id, document_id, unit_id, stage, error_type AS failure_reason,
       message, final, attempt, message_id, dt
FROM ev_failure
""",
    "model_calls": f"""
SELECT call_id, job_id, document_id, purpose, provider, model, outcome, http_status,
       input_tokens, output_tokens, latency_ms, CAST(cost_usd AS {MONEY}) AS cost_usd, attempt,
       occurred_at, page_number, call_attempt, detail, unit_id,
       coalesce(tokens_estimated, false) AS tokens_estimated, dt
FROM ev_model_call
""",
    # The latest result per document; dt is the document's day, as in documents.
    # effective_date: a DATE where the published text is one (YYYY-MM-DD), else NULL; the text
    # itself stays in effective_date_text (a schema of your own may publish any string there).
    "results": f"""
SELECT r.document_id, r.job_id, r.status,
       CASE WHEN regexp_matches(r.effective_date, {ISO_DATE})
            THEN TRY_CAST(r.effective_date AS DATE) END AS effective_date,
       r.effective_date AS effective_date_text, r.jurisdiction, r.party, r.term,
       r.strategy, r.model_version, r.input_tokens, r.output_tokens, r.processing_ms,
       r.published_at, r.schema_name, r.failure_reason, r.document_kind, r.applies,
       r.applicability_score, coalesce(v.values_found, 0) AS values_found, r.dt
FROM (
  SELECT document_id, job_id, status, effective_date, jurisdiction, party, term, strategy,
         model_version, input_tokens, output_tokens, processing_ms, occurred_at AS published_at,
         schema_name, failure_reason, document_kind, applies, applicability_score, dt
  FROM ev_result_published
  QUALIFY row_number() OVER (PARTITION BY dt, document_id ORDER BY occurred_at DESC) = 1
) AS r
LEFT JOIN (
  SELECT dt, job_id, strategy, count(*) AS values_found
  FROM ev_result_field GROUP BY dt, job_id, strategy
) AS v ON v.dt = r.dt AND v.job_id = r.job_id AND v.strategy IS NOT DISTINCT FROM r.strategy
""",
    # One row per extracted value of every published result (every version, every strategy),
    # for any schema; dt is the document's day, as in results. Join to results on
    # (dt, job_id, strategy) for the latest one.
    "result_fields": """
SELECT document_id, job_id, field, value, value_index, strategy, model_version, schema_name,
       page_number, char_offset, confidence, evidence, evidence_start, evidence_end, flag,
       occurred_at AS published_at, dt
FROM ev_result_field
""",
    "quality_checks": """
SELECT occurred_at, run_id, table_name, expectation, success, unexpected_count, details, dt
FROM ev_expectation_checked
""",
    # Evals. Labels live in their document's day; superseded: a later label of the same
    # document version (its sha256) exists (every label stays, nothing is overwritten). A label
    # of an older version is not superseded by one of the new version: it is stale, which
    # `doclake evals score` reports.
    "labels": """
SELECT document_id, label_id, labeller, labelled_at, fields_labelled, value_count, value_format,
       sha256, source, provenance, occurred_at AS imported_at,
       row_number() OVER (
         PARTITION BY dt, document_id, sha256
         ORDER BY labelled_at DESC, occurred_at DESC, label_id DESC
       ) > 1 AS superseded,
       dt
FROM ev_label
""",
    "label_values": """
SELECT v.document_id, v.label_id, v.field, v.value, v.value_index, l.labeller, l.labelled_at,
       l.value_format, l.superseded, v.dt
FROM ev_label_value AS v
JOIN labels AS l ON l.dt = v.dt AND l.label_id = v.label_id
""",
    "eval_runs": """
SELECT eval_run_id, occurred_at AS scored_at, since, until, documents, scored_results, groups,
       precision, recall, f1, resamples, seed, week_start, week_by, dt
FROM ev_eval_run
""",
    "eval_scores": """
SELECT eval_run_id, level, model_version, strategy, field, precision, recall, f1, hits,
       predicted, expected, scored_documents, precision_low, precision_high, recall_low,
       recall_high, f1_low, f1_high, document_id, job_id, label_id, as_labelled,
       occurred_at AS scored_at, dt
FROM ev_eval_score
""",
    # Weekly F1 with its interval, one row per (week, week_by, model version, strategy) and day
    # the week's report was recorded (`doclake evals report`; the latest run of that day), with
    # the group figure and its traffic-weighted estimate. A week reported on two days has two
    # rows: take the latest scored_at (the window keeps dt, so a filter on dt prunes).
    "weekly_f1": """
SELECT r.week_start, r.week_by, g.model_version, g.strategy, g.scored_documents AS documents,
       g.f1, g.f1_low, g.f1_high, w.f1 AS weighted_f1, w.f1_low AS weighted_f1_low,
       w.f1_high AS weighted_f1_high, r.eval_run_id, r.scored_at, r.dt
FROM (
  SELECT eval_run_id, week_start, week_by, scored_at, dt
  FROM eval_runs
  WHERE week_start IS NOT NULL
  QUALIFY row_number() OVER (
    PARTITION BY dt, week_start, week_by ORDER BY scored_at DESC, eval_run_id DESC) = 1
) AS r
JOIN eval_scores AS g
  ON g.dt = r.dt AND g.eval_run_id = r.eval_run_id AND g.level = 'group' AND g.field = 'overall'
LEFT JOIN eval_scores AS w
  ON w.dt = r.dt AND w.eval_run_id = r.eval_run_id AND w.level = 'weighted'
  AND w.field = 'overall' AND w.model_version IS NOT DISTINCT FROM g.model_version
  AND w.strategy IS NOT DISTINCT FROM g.strategy
""",
    "eval_outcomes": """
SELECT eval_run_id, document_id, job_id, label_id, strategy, model_version, field, outcome,
       expected, got, outcome_index, page_number, as_labelled, occurred_at AS scored_at, dt
FROM ev_eval_outcome
""",
    "stage_timings": stage_timings_sql(),
    # seconds: creation to the job's final status (the stage_timings rows up to finish);
    # end_to_end_seconds: to its last event, the text indexed and the fields published (every
    # stage_timings row of the job).
    "job_latency": """
SELECT
  j.job_id,
  j.document_id,
  j.status,
  j.pages,
  date_diff('millisecond', j.created_at, j.finished_at) / 1000.0 AS seconds,
  date_diff('millisecond', j.created_at, greatest(
    j.finished_at, coalesce(i.indexed_at, j.finished_at),
    coalesce(r.published_at, j.finished_at))) / 1000.0 AS end_to_end_seconds,
  CASE
    WHEN j.pages IS NULL THEN 'unknown'
    WHEN j.pages <= 20 THEN '1-20'
    WHEN j.pages <= 50 THEN '21-50'
    WHEN j.pages <= 100 THEN '51-100'
    WHEN j.pages <= 300 THEN '101-300'
    ELSE 'over 300'
  END AS page_bucket,
  CASE
    WHEN j.pages IS NULL THEN NULL
    WHEN j.pages <= 20 THEN 1
    WHEN j.pages <= 50 THEN 21
    WHEN j.pages <= 100 THEN 51
    WHEN j.pages <= 300 THEN 101
    ELSE 301
  END AS page_bucket_min,
  j.created_at,
  j.finished_at,
  j.dt
FROM jobs AS j
LEFT JOIN (
  SELECT dt, job_id, max(occurred_at) AS indexed_at FROM ev_document_indexed GROUP BY dt, job_id
) AS i ON i.dt = j.dt AND i.job_id = j.job_id
LEFT JOIN (
  SELECT dt, job_id, max(occurred_at) AS published_at FROM ev_result_published
  GROUP BY dt, job_id
) AS r ON r.dt = j.dt AND r.job_id = j.job_id
WHERE j.finished_at IS NOT NULL
""",
    # One row per day (dt: the jobs' day) and model, plus one total row per day (is_total,
    # model 'total'). A page counts for the model that read it: the model of its latest
    # successful ('ok') model call, else its reader (text, ocr, calamine: no cost). Pages and
    # calls are summed in one UNION ALL, never joined, so a day never splits into a row with
    # the pages and another with the cost. Sum either the model rows or the total rows, not both.
    "daily_costs": f"""
WITH page_model AS (  -- a simulated call is kept apart from real spend: model simulated:...
  SELECT p.dt, coalesce(c.key, p.reader) AS model, count(*) AS pages
  FROM ev_page_read AS p
  LEFT JOIN (
    SELECT dt, job_id, page_number,
           CASE WHEN provider = 'simulated' THEN 'simulated:' || model ELSE model END AS key
    FROM ev_model_call
    WHERE outcome = 'ok' AND page_number IS NOT NULL
    QUALIFY row_number() OVER (
      PARTITION BY dt, job_id, page_number ORDER BY occurred_at DESC, call_id) = 1
  ) AS c ON c.dt = p.dt AND c.job_id = p.job_id AND c.page_number = p.page_number
  GROUP BY p.dt, coalesce(c.key, p.reader)
), per_model AS (
  SELECT dt, model, CAST(sum(pages) AS BIGINT) AS pages,
         CAST(sum(model_calls) AS BIGINT) AS model_calls,
         CAST(sum(input_tokens) AS BIGINT) AS input_tokens,
         CAST(sum(output_tokens) AS BIGINT) AS output_tokens,
         CAST(sum(cost_usd) AS {MONEY}) AS cost_usd
  FROM (
    SELECT dt, model, pages, 0 AS model_calls, 0 AS input_tokens, 0 AS output_tokens,
           CAST(0 AS {MONEY}) AS cost_usd
    FROM page_model
    UNION ALL
    SELECT dt, CASE WHEN provider = 'simulated' THEN 'simulated:' || model ELSE model END,
           0, count(*), sum(input_tokens), sum(output_tokens),
           CAST(sum(CAST(cost_usd AS {MONEY})) AS {MONEY})
    FROM ev_model_call
    GROUP BY dt, CASE WHEN provider = 'simulated' THEN 'simulated:' || model ELSE model END
  ) AS parts
  GROUP BY dt, model
), flagged AS (
  SELECT *, starts_with(model, 'simulated:') AS simulated FROM per_model
), with_total AS (
  SELECT dt, model, simulated, FALSE AS is_total, pages, model_calls, input_tokens,
         output_tokens, cost_usd
  FROM flagged
  UNION ALL
  SELECT dt, CASE WHEN simulated THEN 'simulated:total' ELSE 'total' END, simulated, TRUE,
         CAST(sum(pages) AS BIGINT), CAST(sum(model_calls) AS BIGINT),
         CAST(sum(input_tokens) AS BIGINT), CAST(sum(output_tokens) AS BIGINT),
         CAST(sum(cost_usd) AS {MONEY})
  FROM flagged GROUP BY dt, simulated
)
SELECT
  model,
  is_total,
  simulated,
  pages,
  model_calls,
  input_tokens,
  output_tokens,
  cost_usd,
  CASE WHEN pages > 0 THEN CAST(cost_usd * 1000 / pages AS {MONEY}) END AS cost_per_1000_pages,
  dt
FROM with_total
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
    "result_fields",
    "daily_costs",
    "job_latency",
)

EVAL_TABLES = ("labels", "label_values", "eval_runs", "eval_scores", "eval_outcomes",
               "weekly_f1")
"""Written by ``doclake evals`` (issue 13): labels as versions, scoring runs and their outcomes."""
