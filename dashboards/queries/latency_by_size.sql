-- End-to-end latency (job created -> succeeded) by document size: the write-up's table.
SELECT
  page_bucket,
  min(pages) AS min_pages,
  count(*) AS documents,
  quantile_cont(seconds, 0.5) AS median_s,
  quantile_cont(seconds, 0.9) AS p90_s
FROM job_latency
WHERE status = 'succeeded' AND page_bucket <> 'unknown'
GROUP BY page_bucket
ORDER BY min_pages
