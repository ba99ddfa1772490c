-- Throughput: documents and pages finished, cumulative over time (the slope is the rate), and
-- the whole lake's documents per minute between the first job created and the last finished.
SELECT
  finished_at AS happened_at,
  count(*) OVER (ORDER BY finished_at, job_id
                 ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS documents_finished,
  sum(coalesce(pages, 0)) OVER (ORDER BY finished_at, job_id
                                ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS pages_finished,
  count(*) OVER () * 60000.0
    / nullif(date_diff('millisecond', min(created_at) OVER (), max(finished_at) OVER ()), 0)
    AS documents_per_minute
FROM jobs
WHERE finished_at IS NOT NULL
ORDER BY happened_at
