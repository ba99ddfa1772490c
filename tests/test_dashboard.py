"""The dashboard and the load benchmarks, on a real (small) simulated run.

The browser test renders the page in headless Chromium (Debian's ``chromium``; skipped with a
reason when it is absent) and checks that every chart drew and the page fetched nothing.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
import sqlglot
from support.chromium import chromium, needs_chromium

from dashboards import queries
from dashboards.report import CHARTS, HEADLINE, render
from infra.bench.load import LoadSpec, run_load
from infra.bench.plan import plan


@pytest.fixture(scope="module")
def burst(tmp_path_factory) -> tuple[Path, dict]:
    home = tmp_path_factory.mktemp("burst")
    spec = LoadSpec(docs=12, concurrency=3, service_s=0.15, pages=1, faults=True, seed=3)
    return home, run_load(spec, home)


def test_burst_figures_add_up_and_obey_littles_law(burst):
    _, figures = burst
    assert figures["documents"] == 12 and int(figures["succeeded"]) == 12
    # The decomposition is exact per job, so the means add up to the mean latency.
    parts = figures["queue_wait_mean_s"] + figures["read_mean_s"] + figures["publish_mean_s"]
    assert parts == pytest.approx(figures["latency_mean_s"], abs=0.01)
    # No run beats C / S with S the workers' measured time per document.
    assert figures["throughput_docs_per_min"] <= figures["measured_bound_docs_per_min"] * 1.001
    assert figures["drain_s"] >= 12 * figures["measured_service_s"] / 3 * 0.999
    assert figures["latency_p90_s"] >= figures["latency_p50_s"] > 0


def test_every_named_query_runs_in_duckdb_and_parses_as_trino(burst):
    home, _ = burst
    assert {c.query for c in CHARTS} | {HEADLINE} == set(queries.names())
    for name in queries.names():
        queries.run(str(home / "lake"), name)  # raises on a DuckDB error
        athena = queries.athena_sql(name)
        sqlglot.parse_one(athena, read="trino")
        assert "PERCENTILE_CONT" not in athena.upper() and "QUANTILE_CONT" not in athena.upper()


def test_plan_turns_measured_service_into_concurrency(burst):
    home, figures = burst
    result = plan(str(home / "lake"), docs=1000, within_s=100, bucket=None, utilization=0.5,
                  memory_mb=1024)
    assert result["concurrency"] * 100 * 0.5 >= 1000 * result["service_s"]
    assert (result["concurrency"] - 1) * 100 * 0.5 < 1000 * result["service_s"]
    assert result["predicted_drain_s"] <= 100
    assert result["model_usd"] > 0
    with pytest.raises(LookupError):
        plan(str(home / "lake"), docs=10, within_s=10, bucket="over 300", utilization=0.5,
             memory_mb=1024)


CHECK = """<script>
const out = [...document.querySelectorAll('.chart')].map(c => {
  const svg = c.querySelector('svg'); const box = svg ? svg.getBoundingClientRect() : null;
  const marks = svg ? [...svg.querySelectorAll('path, rect, line')].filter(m => {
    const b = m.getBBox(); return b.width > 0 || b.height > 0; }).length : 0;
  return {query: c.dataset.query, width: box ? box.width : 0, height: box ? box.height : 0,
          marks};
});
const fetched = performance.getEntriesByType('resource').map(e => e.name);
document.body.insertAdjacentHTML('beforeend', '<pre id="check">' +
  JSON.stringify({charts: out, fetched}) + '</pre>');
</script>"""
# Chromium's own background services, which it calls whatever the page does (the net log shows
# them even with --disable-background-networking); anything else would be the page's.
BROWSER_HOSTS = ("google.com", "googleapis.com", "gvt1.com", "gstatic.com")


@needs_chromium
def test_dashboard_draws_every_chart_in_chromium_and_fetches_nothing(burst, tmp_path):
    home, _ = burst
    page = render(str(home / "lake"))
    assert "<script" not in page and not re.search(r"(src|href)=\"https?:", page)
    drawn = [c.query for c in CHARTS if f'data-query="{c.query}"><svg' in page]
    assert len(drawn) >= 4, drawn  # f1 (no evals) may be a sentence, and so may failures
    # 1. The page as shipped: the net log has no request but the browser's own.
    shipped = tmp_path / "report.html"
    shipped.write_text(page)
    net = tmp_path / "net.json"
    dom = chromium(shipped, tmp_path / "p1", f"--log-net-log={net}")
    assert dom.count("<svg") >= len(drawn)
    urls = set(re.findall(r"(?:https?|wss?)://([A-Za-z0-9.-]+)", net.read_text()))
    assert not [u for u in urls if not u.endswith(BROWSER_HOSTS)], urls
    # 2. With a checker script (and without the CSP, so a fetch would not be blocked but seen):
    # every chart has a size and visible marks, and the page fetched no resource at all.
    checked = tmp_path / "checked.html"
    checked.write_text(re.sub(r"<meta http-equiv=\"Content-Security-Policy\"[^>]*>", "", page)
                       .replace("</body>", CHECK + "</body>"))
    found = re.findall(r'<pre id="check">(\{.*?)</pre>', chromium(checked, tmp_path / "p2"),
                       re.S)
    report = json.loads(html.unescape(found[-1]))
    assert report["fetched"] == []
    assert [c["query"] for c in report["charts"]] == drawn
    for chart in report["charts"]:
        assert chart["width"] > 100 and chart["height"] > 50 and chart["marks"] > 3, chart
