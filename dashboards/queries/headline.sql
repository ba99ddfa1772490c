-- Headline numbers: documents (each once, by its latest job), how they ended, pages read, what
-- the models cost, and the F1 of the latest scoring run.
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
  (SELECT coalesce(sum(cost_usd), 0) FROM model_calls) AS cost_usd,
  (SELECT max(f1) FROM eval_runs WHERE scored_at = (SELECT max(scored_at) FROM eval_runs)) AS f1
