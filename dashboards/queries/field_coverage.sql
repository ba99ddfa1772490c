-- Per schema and field, the share of the documents whose fields were extracted (results.status
-- succeeded: the job succeeded and the schema applies) that have a value for the field: the
-- analysts' recipe "How often is each field found?" (docs/analysts.md). A document of another
-- kind (not_applicable) and a failed, corrupt or encrypted file are left out of the count.
WITH applicable AS (
  SELECT dt, document_id, job_id, strategy, coalesce(schema_name, '') AS schema_name
  FROM results
  WHERE status = 'succeeded'
), per_schema AS (
  SELECT schema_name, count(DISTINCT document_id) AS applicable_documents
  FROM applicable
  GROUP BY schema_name
)
SELECT
  a.schema_name,
  f.field,
  count(DISTINCT a.document_id) AS documents_with_value,
  p.applicable_documents,
  count(DISTINCT a.document_id) * 1.0 / p.applicable_documents AS coverage
FROM applicable AS a
JOIN result_fields AS f ON f.dt = a.dt AND f.job_id = a.job_id AND f.strategy = a.strategy
JOIN per_schema AS p ON p.schema_name = a.schema_name
GROUP BY a.schema_name, f.field, p.applicable_documents
ORDER BY a.schema_name, f.field
