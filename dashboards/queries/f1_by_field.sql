-- F1 by field over time, from the evals' scoring runs (one point per run, model and strategy).
SELECT
  scored_at,
  field,
  model_version,
  strategy,
  f1,
  scored_documents
FROM eval_scores
WHERE level = 'group'
ORDER BY scored_at, field
