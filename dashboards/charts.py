"""The dashboard's charts: one Altair chart per named query, rendered to SVG by vl-convert.

Text is laid out by vl-convert, which measures every label with a real font before it sizes the
SVG (Vega's default ``autosize: pad`` makes room for axes, labels and legends). The browser then
draws the text with the font it has. Both must agree, or a label that vl-convert measured short
runs past the SVG's edge and the inline SVG clips it ("ffective_date"). So every chart names its
font: DejaVu Sans, which vl-convert finds on Linux and fontconfig gives Chromium for
``sans-serif``. It is among the widest common sans-serif faces, so where a browser lacks it the
fallback (Arial, Helvetica, Liberation Sans) draws a label narrower than it was measured. No
chart sets its own padding around a label or limits a label's length: the layout makes room.
"""

from __future__ import annotations

import altair as alt

__all__ = ["FONT", "TEXT_PX", "UTC_AXIS", "queue_depth", "throughput", "latency", "cost", "failures",
           "readers", "coverage", "f1_by_field", "weekly_f1", "svg"]

WIDTH, HEIGHT = 700, 260
"""Narrow enough that a page 900 px wide shows a chart near its own size: the SVG is scaled down
to the page's width, and its text with it."""
FONT = "DejaVu Sans, sans-serif"
TEXT_PX = 15
"""Every label, title and number: at 900 px the chart is drawn at about 0.85 of its size, and its
text stays at 11 px or more (``tests/test_dashboard_figures.py`` measures it in Chromium)."""
UTC_AXIS = {"format": "%Y-%m-%d %H:%M:%S", "title": "time (UTC)", "labelAngle": -30,
            "labelOverlap": True}


def _time(field: str) -> alt.X:
    """A time axis in UTC with the date, whatever the zone of the browser."""
    return alt.X(f"{field}:T", scale=alt.Scale(type="utc"), axis=alt.Axis(**UTC_AXIS))


def _whole(top: float) -> alt.Axis:
    """An axis of counts with whole-number ticks only (each tick named once)."""
    top = int(top) if top == top else 0
    if top <= 12:
        return alt.Axis(format="d", values=list(range(0, top + 1)))
    return alt.Axis(format="d", tickMinStep=1)


def _count(field: str, title: str, top: float) -> alt.Y:
    return alt.Y(f"{field}:Q", title=title, axis=_whole(top))


def _legend(title: str | None = None) -> alt.Legend:
    return alt.Legend(title=title, labelLimit=0)


def queue_depth(frame) -> alt.TopLevelMixin:
    long = frame.melt("happened_at", ["documents_waiting", "units_in_flight"], "series", "count")
    long["series"] = long["series"].map({"documents_waiting": "documents waiting",
                                         "units_in_flight": "units in flight (not processes)"})
    return alt.Chart(long).mark_line(interpolate="step-after").encode(
        x=_time("happened_at"), y=_count("count", "count", long["count"].max()),
        color=alt.Color("series:N", legend=_legend()))


def throughput(frame) -> alt.TopLevelMixin:
    rate = frame["documents_per_minute"].iloc[0]
    rate_text = "n/a" if rate is None or rate != rate else f"{rate:,.1f}"
    return alt.Chart(frame).mark_line(interpolate="step-after", point=True).encode(
        x=_time("happened_at"),
        y=_count("documents_finished", "documents finished", frame["documents_finished"].max()),
    ).properties(title=alt.Title(
        f"{rate_text} documents per minute of active time",
        subtitle="cumulative, each document once (its latest job)"))


def latency(frame) -> alt.TopLevelMixin:
    order = list(frame["page_bucket"])
    long = frame.melt(["page_bucket", "documents"], ["median_s", "p95_s"], "statistic",
                      "seconds")
    long["statistic"] = long["statistic"].map({"median_s": "p50 (median)", "p95_s": "p95"})
    return alt.Chart(long).mark_bar().encode(
        x=alt.X("page_bucket:N", sort=order, title="pages", axis=alt.Axis(labelAngle=0)),
        xOffset="statistic:N", y=alt.Y("seconds:Q", title="seconds, created to published"),
        color=alt.Color("statistic:N", legend=_legend()),
        tooltip=["page_bucket", "statistic", "seconds", "documents"])


def cost(frame) -> alt.TopLevelMixin:
    """Two panels side by side, one bar per model: its cost per 1,000 pages, and its tokens.
    Bars run across, so a model's full name sits on one line however many models there are."""
    half = WIDTH // 2 - 100
    frame = frame.assign(spend=frame["simulated"].map(
        {True: "simulated (not billed)", False: "billed"}))
    y = alt.Y("model:N", title=None, sort=list(frame["model"]), axis=alt.Axis(labelLimit=0))
    per_page = alt.Chart(frame).mark_bar().encode(
        y=y, x=alt.X("cost_per_1000_pages:Q", title="USD per 1,000 pages",
                      axis=alt.Axis(tickCount=5)),
        color=alt.Color("spend:N", legend=_legend("spend"),
                        scale=alt.Scale(domain=["billed", "simulated (not billed)"],
                                        range=["#4c78a8", "#bab0ac"])),
        tooltip=["model", "spend", "pages", "model_calls", "cost_usd", "cost_per_1000_pages"])
    tokens = frame.melt(["model", "spend"], ["input_tokens", "output_tokens"], "kind", "tokens")
    by_kind = alt.Chart(tokens).mark_bar().encode(
        y=y, x=alt.X("tokens:Q", title="tokens", axis=alt.Axis(tickCount=5)),
        color=alt.Color("kind:N", legend=_legend("tokens")),
        tooltip=["model", "kind", "tokens"])
    height = max(60, 28 * len(frame))
    return alt.hconcat(per_page.properties(width=half, height=height),
                       by_kind.properties(width=half, height=height)
                       ).resolve_scale(color="independent")


def _numbered(bars: alt.Chart, field: str, fmt: str = "d") -> alt.TopLevelMixin:
    """Bars across with their value written at each bar's end: a thin bar is read, not guessed."""
    return bars + bars.mark_text(align="left", dx=4, color="#222").encode(
        text=alt.Text(field, format=fmt), color=alt.value("#222"))


def failures(frame) -> alt.TopLevelMixin:
    frame = frame.assign(stage_reason=frame["stage"] + ": " + frame["reason"])
    return _numbered(alt.Chart(frame).mark_bar().encode(
        y=alt.Y("stage_reason:N", sort="-x", title=None, axis=alt.Axis(labelLimit=0)),
        x=alt.X("jobs:Q", title="jobs that met it", axis=_whole(frame["jobs"].max())),
        color=alt.Color("stage:N", legend=_legend("stage")),
        tooltip=["stage", "reason", "failures", "final_failures", "jobs"]), "jobs:Q")


def readers(frame) -> alt.TopLevelMixin:
    return _numbered(alt.Chart(frame).mark_bar().encode(
        y=alt.Y("reader:N", sort="-x", title=None, axis=alt.Axis(labelLimit=0)),
        x=alt.X("pages:Q", title="pages read", axis=_whole(frame["pages"].max())),
        color=alt.Color("reader:N", legend=None), tooltip=["reader", "pages"]), "pages:Q")


def coverage(frame) -> alt.TopLevelMixin:
    """One bar per field; with more than one schema in the lake, named ``schema.field``."""
    several = frame["schema_name"].nunique() > 1
    frame = frame.assign(label=(frame["schema_name"] + "." + frame["field"]) if several
                         else frame["field"])
    return _numbered(alt.Chart(frame).mark_bar().encode(
        y=alt.Y("label:N", sort="-x", title=None, axis=alt.Axis(labelLimit=0)),
        x=alt.X("coverage:Q", title="share of extracted documents with a value",
                scale=alt.Scale(domain=[0, 1]), axis=alt.Axis(format="%")),
        tooltip=["schema_name", "field", "documents_with_value", "applicable_documents",
                 alt.Tooltip("coverage:Q", format=".1%")]), "coverage:Q", ".0%")


def f1_by_field(frame) -> alt.TopLevelMixin:
    return alt.Chart(frame).mark_line(point=True).encode(
        x=_time("scored_at"), y=alt.Y("f1:Q", title="F1", scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("field:N", legend=_legend("field")),
        strokeDash=alt.StrokeDash("strategy:N", legend=_legend("strategy")))


def weekly_f1(frame) -> alt.TopLevelMixin:
    """One point per week and group (strategy and model version), a bar across its interval.
    Weeks are named by their Monday and spaced evenly, one tick each."""
    frame = frame.assign(
        group=frame["strategy"].fillna("?") + " \u00b7 " + frame["model_version"].fillna("?"),
        week=frame["week"].dt.strftime("%Y-%m-%d"))
    week = alt.X("week:O", title="week (starting Monday, UTC)", axis=alt.Axis(labelAngle=0))
    color = alt.Color("group:N", legend=_legend("strategy \u00b7 model version"))
    tooltip = ["week:O", "group:N", alt.Tooltip("f1:Q", format=".3f"),
               alt.Tooltip("f1_low:Q", format=".3f"), alt.Tooltip("f1_high:Q", format=".3f"),
               "scored_documents:Q", "eval_run_id:N"]
    base = alt.Chart(frame).encode(x=week, xOffset="group:N", color=color, tooltip=tooltip)
    y = alt.Y("f1:Q", title="F1 (overall) and its 95% interval", scale=alt.Scale(domain=[0, 1]))
    interval = base.mark_errorbar(ticks={"size": 14}, thickness=2).encode(
        y=alt.Y("f1_low:Q", title="F1 (overall) and its 95% interval",
                scale=alt.Scale(domain=[0, 1])), y2="f1_high:Q")
    return interval + base.mark_point(filled=True, size=70).encode(y=y)


def svg(chart: alt.TopLevelMixin) -> str:
    """The chart as one SVG element, sized by vl-convert with ``FONT``'s own metrics."""
    import vl_convert

    if not isinstance(chart, alt.ConcatChart | alt.HConcatChart):
        chart = chart.properties(width=WIDTH, height=HEIGHT)
    chart = chart.properties(padding=5).configure(font=FONT).configure_axis(
        labelFontSize=TEXT_PX, titleFontSize=TEXT_PX).configure_legend(
        labelFontSize=TEXT_PX, titleFontSize=TEXT_PX).configure_title(
        fontSize=TEXT_PX + 1, subtitleFontSize=TEXT_PX).configure_text(fontSize=TEXT_PX)
    return vl_convert.vegalite_to_svg(chart.to_dict(), vl_version=_vl_version())


def _vl_version() -> str:
    """The Vega-Lite version this Altair writes (``v6.1.0`` -> ``6.1``), which vl-convert
    renders with its bundled copy: no network either way."""
    major, minor = alt.SCHEMA_VERSION.lstrip("v").split(".")[:2]
    return f"{major}.{minor}"
