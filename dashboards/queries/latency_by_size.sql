-- End-to-end latency (job created -> text indexed and fields published) by document size: the write-up's table, with
-- the median (p50) and the p95 the rest of the product quotes.
SELECT
  page_bucket,
  min(pages) AS min_pages,
  count(*) AS documents,
  quantile_cont(end_to_end_seconds, 0.5) AS median_s,
  quantile_cont(end_to_end_seconds, 0.95) AS p95_s
FROM job_latency
WHERE status = 'succeeded' AND page_bucket <> 'unknown'
GROUP BY page_bucket
ORDER BY min_pages
