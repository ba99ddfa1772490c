-- Headline numbers: documents (each once, by its latest job), how they ended, pages read,
-- latency p50 and p95 over succeeded jobs, end to end (created -> text indexed and fields
-- published: job_latency.end_to_end_seconds) and until the status was final (job_latency.seconds),
-- documents no schema applied to, model calls by outcome, model spend (billed providers) apart
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
  (SELECT quantile_cont(end_to_end_seconds, 0.5) FROM job_latency WHERE status = 'succeeded')
    AS end_to_end_p50_s,
  (SELECT quantile_cont(end_to_end_seconds, 0.95) FROM job_latency WHERE status = 'succeeded')
    AS end_to_end_p95_s,
  (SELECT quantile_cont(seconds, 0.5) FROM job_latency WHERE status = 'succeeded')
    AS until_final_p50_s,
  (SELECT quantile_cont(seconds, 0.95) FROM job_latency WHERE status = 'succeeded')
    AS until_final_p95_s,
  (SELECT count(DISTINCT document_id) FROM results WHERE status = 'not_applicable')
    AS no_schema_applied,
  (SELECT count(*) FROM model_calls WHERE outcome = 'ok') AS model_calls_ok,
  (SELECT count(*) FROM model_calls WHERE outcome <> 'ok') AS model_calls_not_ok,
  (SELECT coalesce(sum(cost_usd), 0) FROM model_calls WHERE provider <> 'simulated')
    AS cost_usd,
  (SELECT count(*) FROM model_calls WHERE provider = 'simulated') AS simulated_calls,
  (SELECT coalesce(sum(cost_usd), 0) FROM model_calls WHERE provider = 'simulated')
    AS simulated_cost_usd,
  (SELECT max(f1) FROM eval_runs WHERE scored_at = (SELECT max(scored_at) FROM eval_runs)) AS f1
