-- Per field, the share of published results (the latest per document) that found a value.
SELECT
  f.field,
  count(DISTINCT r.document_id) AS documents_with_value,
  count(DISTINCT r.document_id) * 1.0 / nullif((SELECT count(*) FROM results), 0) AS coverage
FROM results AS r
JOIN result_fields AS f ON f.job_id = r.job_id AND f.strategy = r.strategy
GROUP BY f.field
ORDER BY f.field
