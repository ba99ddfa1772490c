-- Failures by stage and reason; final: the ones that failed their job (the rest were retried).
SELECT
  stage,
  failure_reason AS reason,
  count(*) AS failures,
  sum(CASE WHEN final THEN 1 ELSE 0 END) AS final_failures,
  count(DISTINCT job_id) AS jobs
FROM failures
GROUP BY stage, failure_reason
ORDER BY failures DESC, stage, reason
