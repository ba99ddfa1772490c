-- Weekly F1 with its interval: for each week (starting Monday, UTC) and each model version and
-- strategy, the overall F1 of the latest `doclake evals score` run of that week, with that run's
-- bootstrap interval over documents (f1_low and f1_high: its 2.5th and 97.5th percentiles).
SELECT
  CAST(date_trunc('week', scored_at) AS DATE) AS week,
  model_version,
  strategy,
  f1,
  f1_low,
  f1_high,
  scored_documents,
  eval_run_id,
  scored_at
FROM eval_scores
WHERE level = 'group' AND field = 'overall'
QUALIFY row_number() OVER (
  PARTITION BY date_trunc('week', scored_at), model_version, strategy
  ORDER BY scored_at DESC, eval_run_id DESC) = 1
ORDER BY week, model_version, strategy
