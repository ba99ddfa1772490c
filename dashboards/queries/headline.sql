-- Headline numbers: documents (each once, by its latest job), how they ended, pages read,
-- end-to-end latency (p50 and p95 over succeeded jobs), model spend (billed providers) apart
-- from the simulated provider's (priced as the real model would be, never billed), and the F1
-- of the latest scoring run.
WITH latest AS (
  SELECT d.document_id, j.status
  FROM documents AS d
  JOIN jobs AS j ON j.job_id = d.latest_job_id
)
SELECT
  (SELECT count(*) FROM latest) AS documents,
  (SELECT count(*) FROM latest WHERE status = 'succeeded') AS succeeded,
  (SELECT count(*) FROM latest WHERE status = 'failed') AS failed,
  (SELECT count(*) FROM pages) AS pages_read,
  (SELECT quantile_cont(seconds, 0.5) FROM job_latency WHERE status = 'succeeded')
    AS latency_p50_s,
  (SELECT quantile_cont(seconds, 0.95) FROM job_latency WHERE status = 'succeeded')
    AS latency_p95_s,
  (SELECT coalesce(sum(cost_usd), 0) FROM model_calls WHERE provider <> 'simulated')
    AS cost_usd,
  (SELECT count(*) FROM model_calls WHERE provider = 'simulated') AS simulated_calls,
  (SELECT coalesce(sum(cost_usd), 0) FROM model_calls WHERE provider = 'simulated')
    AS simulated_cost_usd,
  (SELECT max(f1) FROM eval_runs WHERE scored_at = (SELECT max(scored_at) FROM eval_runs)) AS f1
