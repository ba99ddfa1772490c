-- Files whose latest job failed: the path given to `run`, the reason and the last message.
WITH last_failure AS (
  SELECT job_id, message
  FROM failures
  QUALIFY row_number() OVER (PARTITION BY job_id ORDER BY final DESC, occurred_at DESC) = 1
)
SELECT d.source_path, j.failure_reason AS reason, f.message, j.finished_at
FROM documents AS d
JOIN jobs AS j ON j.job_id = d.latest_job_id
LEFT JOIN last_failure AS f ON f.job_id = j.job_id
WHERE j.status = 'failed'
ORDER BY j.finished_at DESC, d.source_path
LIMIT 100
