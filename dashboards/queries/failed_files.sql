-- Files whose latest job failed: the path given to `run` (relative to the folder given; where
-- two documents share it, the start of the document_id tells them apart), the reason and the
-- last message.
WITH last_failure AS (
  SELECT job_id, message
  FROM failures
  QUALIFY row_number() OVER (PARTITION BY job_id ORDER BY final DESC, occurred_at DESC) = 1
), named AS (
  SELECT document_id, latest_job_id, source_path, source_name,
         count(*) OVER (PARTITION BY coalesce(source_path, source_name)) AS sharing
  FROM documents
)
SELECT
  coalesce(d.source_path, d.source_name)
    || CASE WHEN d.sharing > 1 THEN ' [' || left(d.document_id, 8) || ']' ELSE '' END
    AS source_path,
  j.failure_reason AS reason,
  f.message,
  j.finished_at
FROM named AS d
JOIN jobs AS j ON j.job_id = d.latest_job_id
LEFT JOIN last_failure AS f ON f.job_id = j.job_id
WHERE j.status = 'failed'
ORDER BY j.finished_at DESC, source_path
LIMIT 100
