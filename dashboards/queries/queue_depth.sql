-- Queue depth and units in flight over time, reconstructed from per-document timings (the lake has
-- no queue samples): a document waits from its job's creation until its first unit starts (or
-- the job ends without one); a unit is in flight from its start to its finish (units of many
-- documents run at once in one worker process: this is not a count of processes).
WITH first_start AS (
  SELECT j.dt, j.job_id, coalesce(min(u.started_at), j.finished_at) AS left_queue_at
  FROM jobs AS j
  LEFT JOIN units AS u ON u.dt = j.dt AND u.job_id = j.job_id
  GROUP BY j.dt, j.job_id, j.finished_at
), deltas AS (
  SELECT created_at AS happened_at, 1 AS waiting, 0 AS busy FROM jobs
  UNION ALL
  SELECT left_queue_at, -1, 0 FROM first_start WHERE left_queue_at IS NOT NULL
  UNION ALL
  SELECT started_at, 0, 1 FROM units WHERE started_at IS NOT NULL
  UNION ALL
  SELECT finished_at, 0, -1 FROM units WHERE started_at IS NOT NULL AND finished_at IS NOT NULL
)
SELECT
  happened_at,
  sum(waiting) OVER (ORDER BY happened_at, waiting DESC, busy DESC
                     ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS documents_waiting,
  sum(busy) OVER (ORDER BY happened_at, waiting DESC, busy DESC
                  ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS units_in_flight
FROM deltas
ORDER BY happened_at
