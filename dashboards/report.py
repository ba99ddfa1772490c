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
from datetime import UTC, date, datetime

import altair as alt
import pyarrow as pa

from dashboards import charts, queries

__all__ = ["Chart", "CHARTS", "HEADLINE", "HEADERS", "HINT_HEADER", "seconds_text", "FILTERED_VIEWS",
           "windowed", "render",
           "CSP", "PAGE"]


@dataclass(frozen=True)
class Chart:
    """One panel of the page: a chart drawn by ``draw`` (an Altair chart), or, with ``table``,
    an HTML table of the query's rows (``draw`` unused)."""

    query: str
    title: str
    draw: Callable[[object], alt.TopLevelMixin] | None
    empty: str
    table: bool = False


def _frame(table: pa.Table):
    frame = table.to_pandas(date_as_object=False)  # a DATE (a week) becomes a UTC midnight
    for column in frame.columns:  # money is DECIMAL: Vega-Lite wants plain numbers
        if frame[column].dtype == object and len(frame) and hasattr(frame[column].iloc[0],
                                                                    "as_tuple"):
            frame[column] = frame[column].astype(float)
        elif getattr(frame[column].dtype, "kind", "") == "M" \
                and getattr(frame[column].dtype, "tz", None) is None:
            # The views' times are TIMESTAMP in UTC with no zone (lake.views.utc_timestamp);
            # said so here, or the browser would read them in its own zone.
            frame[column] = frame[column].dt.tz_localize("UTC")
    return frame


CHARTS = (
    Chart("failed_files", "Failed files (latest job of each document)", None,
          "No document's latest job failed.", table=True),
    Chart("throughput", "Throughput", charts.throughput, "No finished jobs yet."),
    Chart("queue_depth", "Queue depth and units in flight over time", charts.queue_depth,
          "No jobs in the lake yet."),
    Chart("latency_by_size", "End-to-end latency (created to published) by document size, p50 and p95",
          charts.latency, "No succeeded jobs yet."),
    Chart("slowest_documents", "Slowest documents (end to end)", None, "No succeeded jobs yet.", table=True),
    Chart("reader_share", "Pages by reader", charts.readers, "No pages read yet."),
    Chart("field_coverage", "Field coverage over the documents whose fields were extracted",
          charts.coverage, "No fields extracted from a document its schema applies to yet "
          "(`doclake run --fields nda`)."),
    Chart("failures_by_stage", "Failures by stage and reason", charts.failures, "No failures."),
    Chart("cost_by_model", "Cost per 1,000 pages and tokens by model (simulated: not billed)",
          charts.cost,
          "No model was called: text-layer, OCR and sheet pages cost nothing."),
    Chart("weekly_f1", "Weekly F1 with its 95% interval (latest scoring run of each week)",
          charts.weekly_f1, "No evals yet: `doclake evals score` writes eval_scores."),
    Chart("f1_by_field", "F1 by field over time", charts.f1_by_field,
          "No evals yet: `doclake evals score` writes eval_scores."),
)
HEADLINE = "headline"


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:,.2f}"
    if isinstance(value, datetime):  # the views' times are UTC, with no zone attached
        moment = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
        return moment.strftime("%Y-%m-%d %H:%M:%S UTC")
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)


def _is_word_column(name: str) -> bool:
    """A column of single words or stamps (a reason, a status, a time): its cells keep each
    value on one line. Paths and messages may break anywhere, so a long one never widens the
    page; that same freedom let the browser squeeze a reason column to ``unsupported_f|ormat``."""
    return name in ("reason", "status", "outcome", "stage", "reader", "field") or name.endswith(
        ("_reason", "_status", "_at"))


def _path_html(text: str) -> str:
    """A path, escaped, that breaks after a ``/`` or ``_`` before it breaks inside a word."""
    return html.escape(text).replace("/", "/<wbr>").replace("_", "_<wbr>")


HEADERS = {"source_path": "file (path in the room)", "end_to_end_seconds": "end to end (s)",
           "until_final_seconds": "until final status (s)", "finished_at": "finished (UTC)"}
HINT_HEADER = "what to do"
"""The column a table with a ``reason`` gets beside it: the hint for that reason (the same words
as the run's summary, ``doclake status`` and ``doclake show``), never a figure of the query."""


def _header(column: str) -> str:
    """A column as a person reads it: ``source_path`` is "file (path in the room)"."""
    return HEADERS.get(column, column.replace("_", " "))


def _table(rows: pa.Table, hint: Callable[[str], str] | None = None) -> str:
    """The rows as an HTML table; with ``hint``, a ``reason`` column is followed by what to do
    about each reason."""
    words = [_is_word_column(c) for c in rows.column_names]
    paths = [c.endswith(("path", "source_name")) for c in rows.column_names]
    hinted = hint is not None and "reason" in rows.column_names

    def hint_cell(column: str, value: object) -> str:
        if not hinted or column != "reason":
            return ""
        return f'<td class="hint">{html.escape(hint(str(value)) if value else "")}</td>'

    head = "".join(f"<th>{html.escape(_header(c))}</th>"
                   + (f"<th>{HINT_HEADER}</th>" if hinted and c == "reason" else "")
                   for c in rows.column_names)
    body = "".join(
        "<tr>" + "".join(('<td class="word">' if word else "<td>")
                         + (_path_html(_cell(v)) if path else html.escape(_cell(v))) + "</td>"
                         + hint_cell(c, v)
                         for (c, v), word, path in zip(r.items(), words, paths, strict=True))
        + "</tr>" for r in rows.to_pylist())
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def seconds_text(seconds: float | None) -> str:
    """A duration as a person reads it: ``8.4 s``, ``2 min 30 s``, ``n/a`` when unknown."""
    if seconds is None or seconds != seconds:
        return "n/a"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes:,} min {rest} s"


def _pair(first: float | None, second: float | None) -> str:
    return "n/a" if first is None else f"{seconds_text(first)} / {seconds_text(second)}"


def _headline(rows: pa.Table, title: str) -> str:
    """One row of cards, each a column of the ``headline`` query (its SQL is on the page).
    Spend on billed providers and the simulated provider's priced-but-unbilled spend are two
    cards, the second only where simulated calls exist. Latency is end to end (until the text
    is indexed and the fields published); until the status was final is its own card."""
    figures = rows.to_pylist()[0] if rows.num_rows else {}
    documents = figures.get("documents") or 0
    finished = (figures.get("succeeded") or 0) + (figures.get("failed") or 0)
    rate = f"{100 * (figures.get('succeeded') or 0) / finished:.1f}%" if finished else "n/a"
    f1 = figures.get("f1")
    cards = [("documents", f"{documents:,}"), ("succeeded", rate),
             ("failed", f"{figures.get('failed') or 0:,}"),
             ("pages read", f"{figures.get('pages_read') or 0:,}"),
             ("end-to-end latency p50 / p95",
              _pair(figures.get("end_to_end_p50_s"), figures.get("end_to_end_p95_s"))),
             ("until final status p50 / p95",
              _pair(figures.get("until_final_p50_s"), figures.get("until_final_p95_s"))),
             ("documents no schema applied to", f"{figures.get('no_schema_applied') or 0:,}"),
             ("model calls ok / error, blocked or empty",
              f"{figures.get('model_calls_ok') or 0:,} / {figures.get('model_calls_not_ok') or 0:,}"),
             ("model spend", f"${float(figures.get('cost_usd') or 0):,.4f}")]
    if figures.get("simulated_calls"):
        cards.append(("simulated spend (not billed)",
                      f"${float(figures.get('simulated_cost_usd') or 0):,.4f}"))
    cards.append(("F1 (latest eval)", "n/a" if f1 is None else f"{float(f1):.3f}"))
    return (f'<h2 class="window">{html.escape(title)}</h2>'
            '<div class="cards" data-query="headline">' + "".join(
                f'<div class="card"><div class="figure">{html.escape(v)}</div>'
                f'<div class="label">{html.escape(k)}</div></div>' for k, v in cards) + "</div>")


def _sql_shown(name: str) -> str:
    """The named query as run (before the window is applied), folded under its file's name."""
    return (f'<details class="sql"><summary class="query">query: dashboards/queries/{name}.sql'
            f'</summary><pre>{html.escape(queries.sql(name))}</pre></details>')


FILTERED_VIEWS = ("documents", "jobs", "units", "pages", "failures", "model_calls", "results",
                  "result_fields", "job_latency", "daily_costs", "eval_runs", "eval_scores")


def windowed(sql: str, since: date | None, until: date | None) -> str:
    """A named query over only the days from ``since`` to ``until``: each analyst view it reads
    becomes a subquery of that view filtered on ``dt`` (so partitions outside are not read)."""
    if since is None and until is None:
        return sql
    import sqlglot
    from sqlglot import exp

    conditions = []
    if since is not None:
        conditions.append(f"dt >= DATE '{since.isoformat()}'")
    if until is not None:
        conditions.append(f"dt <= DATE '{until.isoformat()}'")
    tree = sqlglot.parse_one(sql, read="duckdb")
    ctes = {cte.alias for cte in tree.find_all(exp.CTE)}

    def window(node: exp.Expression) -> exp.Expression:
        if (isinstance(node, exp.Table) and not node.db and node.name in FILTERED_VIEWS
                and node.name not in ctes):
            inner = sqlglot.parse_one(f"SELECT * FROM main.{node.name} "
                                      f"WHERE {' AND '.join(conditions)}", read="duckdb")
            return exp.Subquery(this=inner, alias=exp.TableAlias(
                this=exp.to_identifier(node.alias or node.name)))
        return node

    return tree.transform(window).sql(dialect="duckdb")


def render(lake_uri: str, *, since: date | None = None, until: date | None = None,
           now: datetime | None = None, hint: Callable[[str], str] | None = None) -> str:
    """The whole page: headline figures, then every panel of ``CHARTS``, over the lake at
    ``lake_uri`` (only the days from ``since`` to ``until``, UTC, when given); ``hint`` gives
    what to do about a failure reason, shown beside each failed file (``doclake dashboard``
    passes the run summary's hints; this package does not import the command's)."""
    from lake.catalog import connect

    now = now or datetime.now(UTC)
    sections = []
    window = f"{since or 'the first day'} to {until or 'today'}" if since or until else "every day"
    with connect(lake_uri) as session:
        headline = ""
        if since or until:
            headline = _headline(session.table(windowed(queries.sql(HEADLINE), since, until)),
                                 f"Days {window} (UTC)")
        headline += _headline(session.table(queries.sql(HEADLINE)), "All time")
        headline += _sql_shown(HEADLINE)
        for chart in CHARTS:
            rows = session.table(windowed(queries.sql(chart.query), since, until))
            if not rows.num_rows:
                body = f'<p class="empty" data-query="{chart.query}">{html.escape(chart.empty)}</p>'
            elif chart.table:
                body = (f'<div class="table" data-query="{chart.query}">'
                        f"{_table(rows, hint)}</div>")
            else:
                body = (f'<div class="chart" data-query="{chart.query}">'
                        f"{charts.svg(chart.draw(_frame(rows)))}</div>")
            sections.append(f"<section><h2>{html.escape(chart.title)}</h2>{body}"
                            f"{_sql_shown(chart.query)}</section>")
    return PAGE.format(lake=html.escape(lake_uri), sections="\n".join(sections), csp=CSP,
                       headline=headline, window=html.escape(window),
                       generated=now.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC"))


CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{csp}">
<title>doclake dashboard</title>
<style>
body {{ font-family: sans-serif; margin: 1.5em 2em; color: #222; }}
section {{ margin-bottom: 2em; }} .query {{ color: #777; font-size: 0.85em; }}
.empty {{ color: #555; font-style: italic; }}
.chart svg {{ max-width: 100%; height: auto; }}
.meta {{ color: #555; }}
.cards {{ display: flex; flex-wrap: wrap; gap: 1em; margin: 1em 0 2em; }}
.card {{ border: 1px solid #ddd; border-radius: 6px; padding: 0.8em 1.2em; min-width: 9em; }}
.card .figure {{ font-size: 1.8em; font-weight: bold; }} .card .label {{ color: #555; }}
details.sql pre {{ font-size: 0.85em; background: #f6f6f6; padding: 0.6em; overflow-x: auto; }}
table {{ border-collapse: collapse; width: 100%; font-size: 0.9em; }}
th, td {{ border-bottom: 1px solid #e4e4e4; padding: 0.3em 0.6em; text-align: left;
          vertical-align: top; overflow-wrap: anywhere; }}
td.word {{ white-space: nowrap; overflow-wrap: normal; }}
</style></head>
<body><h1>doclake dashboard</h1>
<p class="meta">Lake: {lake} &middot; days: {window} &middot; generated {generated}</p>
{headline}
{sections}
</body></html>
"""
