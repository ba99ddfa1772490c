-- The ten documents whose latest job took longest end to end (created -> text indexed and fields
-- published), with the time until its status was final beside it. A document is named by its
-- path relative to the folder given to `run`, with what read its pages; where two documents
-- share a path (a changed copy, another run), the start of its document_id tells them apart.
WITH readers AS (
  SELECT job_id, string_agg(DISTINCT reader, ', ' ORDER BY reader) AS read_by
  FROM pages
  GROUP BY job_id
), named AS (
  SELECT document_id, latest_job_id, source_path, source_name,
         count(*) OVER (PARTITION BY coalesce(source_path, source_name)) AS sharing
  FROM documents
)
SELECT
  coalesce(n.source_path, n.source_name)
    || CASE WHEN n.sharing > 1 THEN ' [' || left(n.document_id, 8) || ']' ELSE '' END
    AS source_path,
  r.read_by AS reader,
  l.pages,
  l.end_to_end_seconds,
  l.seconds AS until_final_seconds,
  l.finished_at
FROM job_latency AS l
JOIN named AS n ON n.latest_job_id = l.job_id
LEFT JOIN readers AS r ON r.job_id = l.job_id
WHERE l.status = 'succeeded'
ORDER BY l.end_to_end_seconds DESC, source_path
LIMIT 10
