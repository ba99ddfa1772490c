-- Throughput: documents (each once, by its latest job) and pages finished, cumulative over time,
-- and documents per minute of *active* time: the spans when some job was between created and
-- finished, so the idle hours between two runs do not dilute the rate.
WITH finished AS (
  SELECT d.document_id, j.created_at, j.finished_at, coalesce(j.pages, 0) AS pages
  FROM documents AS d
  JOIN jobs AS j ON j.job_id = d.latest_job_id
  WHERE j.finished_at IS NOT NULL
), ordered AS (
  SELECT document_id, created_at, finished_at, pages,
         max(finished_at) OVER (ORDER BY created_at, document_id
                                ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS busy_until
  FROM finished
), spans AS (
  SELECT created_at, finished_at,
         sum(CASE WHEN busy_until IS NULL OR created_at > busy_until THEN 1 ELSE 0 END)
           OVER (ORDER BY created_at, document_id
                 ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS span
  FROM ordered
), active AS (
  SELECT sum(ms) AS active_ms
  FROM (SELECT date_diff('millisecond', min(created_at), max(finished_at)) AS ms
        FROM spans GROUP BY span) AS per_span
)
SELECT
  f.finished_at AS happened_at,
  count(*) OVER (ORDER BY f.finished_at, f.document_id
                 ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS documents_finished,
  sum(f.pages) OVER (ORDER BY f.finished_at, f.document_id
                     ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS pages_finished,
  count(*) OVER () * 60000.0 / nullif(a.active_ms, 0) AS documents_per_minute
FROM finished AS f
CROSS JOIN active AS a
ORDER BY happened_at
