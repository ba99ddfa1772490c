"""``doclake bench plan``: the concurrency that drains a burst in time, from measured service.

Little's law turned around: a burst of N documents, each holding a worker S seconds, drains in
N S / (C u) with C workers busy a share u of the time, so C = ceil(N S / (T u)) drains it within
T. S is measured, never assumed: the workers' own time per document (``units.duration_ms``
summed per job) of the lake's succeeded jobs, by size bucket; u is what our burst benchmark
measured (README), adjustable. Cost does not depend on C (each page is read and paid once):
the model's per document from the ledger, plus Lambda compute, N S GB-seconds at the memory set.
"""

from __future__ import annotations

import math

__all__ = ["SERVICE_SQL", "LAMBDA_USD_PER_GB_S", "plan"]

SERVICE_SQL = """
WITH per_job AS (
  SELECT l.job_id, l.page_bucket, l.pages, sum(u.duration_ms) / 1000.0 AS worker_s
  FROM job_latency AS l JOIN units AS u ON u.dt = l.dt AND u.job_id = l.job_id
  WHERE l.status = 'succeeded'
  GROUP BY l.job_id, l.page_bucket, l.pages
), cost AS (
  SELECT job_id, sum(cost_usd) AS cost_usd FROM model_calls GROUP BY job_id
)
SELECT count(*) AS documents, avg(p.worker_s) AS service_s,
       quantile_cont(p.worker_s, 0.9) AS service_p90_s, avg(p.pages) AS pages,
       avg(coalesce(c.cost_usd, 0)) AS model_usd_per_document
FROM per_job AS p LEFT JOIN cost AS c ON c.job_id = p.job_id
WHERE {where}
"""
LAMBDA_USD_PER_GB_S = 0.0000166667  # x86, us-east-1, first tier (AWS Lambda pricing, 2025)


def plan(lake_uri: str, *, docs: int, within_s: float, bucket: str | None,
         utilization: float, memory_mb: int) -> dict:
    """The plan as one object; raises ``LookupError`` when the lake has no such jobs."""
    from lake.catalog import query

    where = "TRUE" if bucket is None else "p.page_bucket = ?"
    row = query(lake_uri, SERVICE_SQL.format(where=where),
                None if bucket is None else [bucket]).to_pylist()[0]
    if not row["documents"]:
        raise LookupError(f"no succeeded jobs{'' if bucket is None else ' of ' + bucket} pages")
    service_s = float(row["service_s"])
    concurrency = max(1, math.ceil(docs * service_s / (within_s * utilization)))
    compute_usd = docs * service_s * memory_mb / 1024 * LAMBDA_USD_PER_GB_S
    model_usd = docs * float(row["model_usd_per_document"])
    return {
        "documents": docs, "within_s": within_s, "page_bucket": bucket or "all",
        "measured_documents": row["documents"], "measured_pages_per_document": row["pages"],
        "service_s": service_s, "service_p90_s": row["service_p90_s"],
        "utilization": utilization, "concurrency": concurrency,
        "predicted_drain_s": docs * service_s / (concurrency * utilization),
        "throughput_docs_per_min": 60.0 * concurrency * utilization / service_s,
        "model_usd": model_usd, "compute_usd": compute_usd,
        "total_usd": model_usd + compute_usd, "memory_mb": memory_mb,
    }
