-- The ten documents whose latest job took longest end to end (created -> text indexed and fields
-- published), with the time until its status was final beside it.
SELECT d.source_path, l.pages, l.end_to_end_seconds, l.seconds AS until_final_seconds,
       l.finished_at
FROM job_latency AS l
JOIN documents AS d ON d.latest_job_id = l.job_id
WHERE l.status = 'succeeded'
ORDER BY l.end_to_end_seconds DESC, d.source_path
LIMIT 10
