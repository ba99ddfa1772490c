"""``doclake dashboard``: one self-contained HTML file of charts drawn from the lake.

Each chart is one named query (``dashboards.queries``) drawn by Vega-Altair and rendered to SVG
by vl-convert in this process, so the file has no script, no font or style fetched from
anywhere, and opens offline (a Content-Security-Policy of ``default-src 'none'`` says so to the
browser). A query with no rows (no evals yet, no failures) shows a sentence, not an empty frame.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass

import altair as alt
import pyarrow as pa

from dashboards import queries

WIDTH, HEIGHT = 640, 260


@dataclass(frozen=True)
class Chart:
    query: str
    title: str
    draw: Callable[[object], alt.TopLevelMixin]
    empty: str


def _frame(table: pa.Table):
    frame = table.to_pandas()
    for column in frame.columns:  # DuckDB sums are DECIMAL: Vega-Lite wants plain numbers
        if frame[column].dtype == object and len(frame) and hasattr(frame[column].iloc[0],
                                                                    "as_tuple"):
            frame[column] = frame[column].astype(float)
    return frame


def _queue_depth(frame) -> alt.TopLevelMixin:
    long = frame.melt("happened_at", ["documents_waiting", "busy_workers"], "series", "count")
    return alt.Chart(long).mark_line(interpolate="step-after").encode(
        x=alt.X("happened_at:T", title="time"), y=alt.Y("count:Q", title="count"),
        color=alt.Color("series:N", title=None))


def _throughput(frame) -> alt.TopLevelMixin:
    rate = frame["documents_per_minute"].iloc[0]
    return alt.Chart(frame).mark_line(interpolate="step-after").encode(
        x=alt.X("happened_at:T", title="time"),
        y=alt.Y("documents_finished:Q", title="documents finished (cumulative)"),
    ).properties(title=f"{rate:,.1f} documents per minute overall")


def _latency(frame) -> alt.TopLevelMixin:
    order = list(frame["page_bucket"])
    long = frame.melt(["page_bucket", "documents"], ["median_s", "p90_s"], "statistic",
                      "seconds")
    return alt.Chart(long).mark_bar().encode(
        x=alt.X("page_bucket:N", sort=order, title="pages"),
        xOffset="statistic:N", y=alt.Y("seconds:Q", title="seconds, job created to done"),
        color=alt.Color("statistic:N", title=None),
        tooltip=["page_bucket", "statistic", "seconds", "documents"])


def _cost(frame) -> alt.TopLevelMixin:
    cost = alt.Chart(frame).mark_bar().encode(
        x=alt.X("model:N", title=None),
        y=alt.Y("cost_per_1000_pages:Q", title="USD per 1,000 pages"))
    tokens = frame.melt("model", ["input_tokens", "output_tokens"], "kind", "tokens")
    by_kind = alt.Chart(tokens).mark_bar().encode(
        x=alt.X("model:N", title=None), y=alt.Y("tokens:Q", title="tokens"),
        color=alt.Color("kind:N", title=None))
    return alt.hconcat(cost.properties(width=WIDTH // 2 - 40),
                       by_kind.properties(width=WIDTH // 2 - 40))


def _failures(frame) -> alt.TopLevelMixin:
    frame = frame.assign(stage_reason=frame["stage"] + ": " + frame["reason"])
    return alt.Chart(frame).mark_bar().encode(
        y=alt.Y("stage_reason:N", sort="-x", title=None),
        x=alt.X("failures:Q", title="failures (all attempts)"),
        color=alt.Color("stage:N", title="stage"))


def _f1(frame) -> alt.TopLevelMixin:
    return alt.Chart(frame).mark_line(point=True).encode(
        x=alt.X("scored_at:T", title="scored at"), y=alt.Y("f1:Q", title="F1",
                                                           scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("field:N", title="field"), strokeDash="strategy:N")


CHARTS = (
    Chart("queue_depth", "Queue depth and busy workers over time", _queue_depth,
          "No jobs in the lake yet."),
    Chart("throughput", "Throughput", _throughput, "No finished jobs yet."),
    Chart("latency_by_size", "End-to-end latency by document size (median and p90)", _latency,
          "No succeeded jobs yet."),
    Chart("cost_by_model", "Cost per 1,000 pages and tokens by model", _cost,
          "No pages read yet."),
    Chart("failures_by_stage", "Failures by stage and reason", _failures, "No failures."),
    Chart("f1_by_field", "F1 by field over time", _f1,
          "No evals yet: `doclake evals score` writes eval_scores."),
)


def _svg(chart: alt.TopLevelMixin) -> str:
    import vl_convert

    if not isinstance(chart, alt.ConcatChart | alt.HConcatChart):
        chart = chart.properties(width=WIDTH, height=HEIGHT)
    return vl_convert.vegalite_to_svg(chart.to_dict(), vl_version=_vl_version())


def render(lake_uri: str) -> str:
    """The whole page: every chart of ``CHARTS`` over the lake at ``lake_uri``."""
    sections = []
    for chart in CHARTS:
        frame = _frame(queries.run(lake_uri, chart.query))
        if len(frame):
            body = f'<div class="chart" data-query="{chart.query}">{_svg(chart.draw(frame))}</div>'
        else:
            body = f'<p class="empty" data-query="{chart.query}">{html.escape(chart.empty)}</p>'
        sections.append(f"<section><h2>{html.escape(chart.title)}</h2>{body}"
                        f"<p class=\"query\">query: dashboards/queries/{chart.query}.sql</p>"
                        "</section>")
    return PAGE.format(lake=html.escape(lake_uri), sections="\n".join(sections), csp=CSP)


CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{csp}">
<title>doclake dashboard</title>
<style>
body {{ font-family: sans-serif; margin: 2em; color: #222; }}
section {{ margin-bottom: 2.5em; }} .query {{ color: #777; font-size: 0.85em; }}
.empty {{ color: #555; font-style: italic; }}
</style></head>
<body><h1>doclake dashboard</h1><p>Lake: {lake}</p>
{sections}
</body></html>
"""


def _vl_version() -> str:
    """The Vega-Lite version this Altair writes (``v6.1.0`` -> ``6.1``), which vl-convert
    renders with its bundled copy: no network either way."""
    major, minor = alt.SCHEMA_VERSION.lstrip("v").split(".")[:2]
    return f"{major}.{minor}"
