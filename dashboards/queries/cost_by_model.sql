-- Cost per 1,000 pages and tokens by model, over every day in the lake (text, OCR and sheets
-- read pages at no model cost: only models that were called appear). A simulated model is named
-- simulated:<model> and flagged simulated: priced as the real one would be, never billed.
SELECT
  model,
  bool_or(simulated) AS simulated,
  sum(pages) AS pages,
  sum(model_calls) AS model_calls,
  sum(input_tokens) AS input_tokens,
  sum(output_tokens) AS output_tokens,
  sum(cost_usd) AS cost_usd,
  1000.0 * sum(cost_usd) / nullif(sum(pages), 0) AS cost_per_1000_pages
FROM daily_costs
WHERE NOT is_total
GROUP BY model
HAVING sum(model_calls) > 0
ORDER BY simulated, cost_usd DESC, model
