-- The ten documents whose latest job took longest, job created to succeeded.
SELECT d.source_path, l.pages, l.seconds, l.finished_at
FROM job_latency AS l
JOIN documents AS d ON d.latest_job_id = l.job_id
WHERE l.status = 'succeeded'
ORDER BY l.seconds DESC, d.source_path
LIMIT 10
