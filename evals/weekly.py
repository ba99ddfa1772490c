"""The weekly report a quality team runs every Monday: the week that just ended, the weeks before
it as a trend, a breakdown, a traffic-weighted estimate, and a gate.

- **Which week a label counts in** (``week_by``): ``label``, the week the labeller answered (what
  the team did that week), or ``document``, the week the labelled version was ingested (what the
  system processed that week: a labelling lag moves nothing). The report says which.
- Each labelled document is scored by the latest result of each (model version, strategy) group
  for the version it was labelled for, whenever that result was published; stale labels (of an
  older version) are counted, not scored.
- **Trend**: the same figures for the ``weeks`` weeks ending with the reported one (a line chart
  in the HTML). **Breakdown**: by format, size bucket, source folder and schema.
- **Weighted estimate** (``evals.weighting``): the labels come from a stratified sample, so each
  stratum (format and size bucket within a group) is weighted by its share of the week's traffic
  (documents ingested that week) beside the per-stratum figures.
- **Gate** (``evals.gate``): the low end of each group's F1 interval against ``--fail-under``.
- **Recorded**: the reported week's scores are an eval run in ``eval_runs`` (with ``week_start``
  and ``week_by``; the weighted estimate as ``level = 'weighted'`` in ``eval_scores``), and the
  report quotes its id. The ``weekly_f1`` view reads those runs back, one row per week and group.

``weekly_report`` reads the lake and builds a ``WeeklyReport``; ``build_report`` is the pure part.
"""

from __future__ import annotations

import dataclasses
import html
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import PurePosixPath, PureWindowsPath

from uuid6 import uuid7

from evals.accounting import unscored, valued_documents
from evals.bootstrap import INTERVAL, RESAMPLES, SEED, Figures, group_figures
from evals.confidence import FieldConfidence, by_field
from evals.gate import GateCheck, check
from evals.report_sections import confidence_markdown, fields_markdown
from evals.sample import size_bucket
from evals.score_run import ScoreRun, run_events, run_warnings
from evals.scoring import Label, Normalizer, Result, Scored, score_all
from evals.traffic import traffic_by_group, weighted_by_group
from evals.weeks import Week
from evals.weighting import Weighted
from lake.events import EvalScoreComputed, Event

__all__ = ["WEEK_BY", "DIMENSIONS", "WeeklyReport", "WeekPoint", "BreakdownRow", "build_report",
           "weekly_report", "weekly_f1", "weekly_markdown", "to_html", "write_report",
           "record_report", "write_weekly_report"]

WEEK_BY = ("label", "document")
DIMENSIONS = ("format", "size", "folder", "schema")
TREND_WEEKS = 8


@dataclass(frozen=True)
class WeekPoint:
    week: Week
    model_version: str
    strategy: str
    figures: Figures
    weighted: Weighted | None

    def to_dict(self) -> dict:
        ci = self.figures.f1_ci
        return {"week": self.week.label, "week_start": self.week.start.isoformat(),
                "model_version": self.model_version, "strategy": self.strategy,
                "documents": self.figures.documents, "f1": self.figures.score.f1,
                "f1_low": ci[0] if ci else None, "f1_high": ci[1] if ci else None,
                "weighted_f1": self.weighted.f1 if self.weighted else None}


@dataclass(frozen=True)
class BreakdownRow:
    dimension: str
    value: str
    model_version: str
    strategy: str
    figures: Figures


@dataclass(frozen=True)
class WeeklyReport:
    week: Week
    week_by: str
    run: ScoreRun
    """The reported week's scores: its ``eval_run_id`` is the run the report quotes."""
    trend: tuple[WeekPoint, ...]
    breakdown: tuple[BreakdownRow, ...]
    weighted: Mapping[tuple[str, str], Weighted]
    weeks: int = TREND_WEEKS
    recorded: bool = False
    gate: tuple[GateCheck, ...] | None = None
    confidence: tuple[FieldConfidence, ...] = ()
    """Per group and field: reliability table, ECE and AUROC of the week's scored values."""

    def with_gate(self, fail_under: float | None) -> WeeklyReport:
        if fail_under is None:
            return self
        return dataclasses.replace(self, gate=tuple(check(
            [(f"{g.strategy} {g.model_version}", g.overall.score.f1, g.overall.f1_ci)
             for g in self.run.groups], fail_under)))

    @property
    def passed(self) -> bool:
        """The gate's verdict (True without one): every group reaches it, and something was
        scored."""
        return self.gate is None or (bool(self.gate) and all(c.passed for c in self.gate))


def folder_of(fact: Mapping) -> str:
    """The folder a document came from: its path's parent within the folder given to `doclake
    run` when it had one, else the name of the folder on disk that held it."""
    path = fact.get("source_path") or ""
    if "/" in path:
        return str(PurePosixPath(path).parent)
    key = fact.get("source_key") or ""
    if key and "://" not in key:
        parent = (PureWindowsPath(key) if "\\" in key else PurePosixPath(key)).parent.name
        return parent or "."
    return "."


def _dimensions(row: Scored, fact: Mapping) -> dict[str, str]:
    return {"format": fact.get("detected_format") or "unknown",
            "size": size_bucket(fact.get("pages")), "folder": folder_of(fact),
            "schema": row.result.schema_name or "unknown"}


def build_report(labels: Sequence[Label], stale: Sequence[Label], results: Sequence[Result],
                 facts: Mapping[str, Mapping], traffic: Sequence[Mapping], *, week: Week,
                 weeks: int = TREND_WEEKS, week_by: str = "label",
                 normalizers: Mapping[str, Normalizer] | None = None,
                 resamples: int = RESAMPLES, seed: int = SEED,
                 training_sets: Sequence = ()) -> WeeklyReport:
    """The report of ``week`` and the ``weeks`` weeks ending with it, from plain records:
    ``facts`` by job id (``lakeio.read_job_facts``), ``traffic`` every published result
    (``lakeio.read_traffic``)."""
    if week_by not in WEEK_BY:
        raise ValueError(f"week_by {week_by!r}: use one of {', '.join(WEEK_BY)}")
    registered: dict[tuple[str, str | None], datetime] = {}
    for fact in facts.values():
        for key in ((fact["document_id"], fact["sha256"]), (fact["document_id"], None)):
            if key not in registered or fact["registered_at"] < registered[key]:
                registered[key] = fact["registered_at"]

    def moment(label: Label) -> datetime | None:
        if week_by == "label":
            return label.labelled_at
        return registered.get((label.document_id, label.sha256))

    scored = score_all(labels, results, normalizers=normalizers)
    when = {label.label_id: moment(label) for label in labels}

    def rows_of(w: Week) -> list[Scored]:
        return [s for s in scored if when[s.label.label_id] and w.holds(when[s.label.label_id])]

    def processed_in(w: Week) -> list[Scored]:  # the weighted estimate's labels: by document
        return [s for s in scored if (m := registered.get((s.label.document_id, s.label.sha256))
                                      ) is not None and w.holds(m)]

    def weighted_of(w: Week) -> dict[tuple[str, str], Weighted]:
        return weighted_by_group(processed_in(w), traffic_by_group(w, traffic, facts), facts,
                                 resamples=resamples, seed=seed)

    trend = []
    for w in week.trend(weeks):
        rows = rows_of(w)
        weighted = weighted_of(w)
        trend += [WeekPoint(w, g.model_version, g.strategy, g.overall,
                            weighted.get((g.model_version, g.strategy)))
                  for g in group_figures(rows, resamples=resamples, seed=seed)]
    reported = rows_of(week)
    groups = group_figures(reported, resamples=resamples, seed=seed)
    breakdown = []
    for dimension in DIMENSIONS:
        values: dict[str, list[Scored]] = {}
        for row in reported:
            values.setdefault(_dimensions(row, facts.get(row.result.job_id, {}))[dimension],
                              []).append(row)
        for value, rows in sorted(values.items()):
            breakdown += [BreakdownRow(dimension, value, g.model_version, g.strategy, g.overall)
                          for g in group_figures(rows, resamples=resamples, seed=seed)]
    stale_here = [x for x in stale if (m := moment(x)) is not None and week.holds(m)]
    labelled_here = [x for x in labels if when[x.label_id] and week.holds(when[x.label_id])]
    run = ScoreRun(str(uuid7()), week.since, week.until,
                   len({s.label.document_id for s in reported}), tuple(reported), tuple(groups),
                   (), resamples, seed, tuple(stale_here), None,
                   tuple(run_warnings(groups, reported, stale_here, training_sets)),
                   tuple(unscored(labelled_here, stale_here, results)))
    return WeeklyReport(week, week_by, run, tuple(trend), tuple(breakdown),
                        weighted_of(week), weeks, confidence=tuple(by_field(reported)))


def weekly_report(lake_uri: str, week: Week, *, weeks: int = TREND_WEEKS,
                  week_by: str = "label", normalizers: Mapping[str, Normalizer] | None = None,
                  resamples: int = RESAMPLES, seed: int = SEED,
                  training_sets: Sequence = ()) -> WeeklyReport:
    """``build_report`` over the lake."""
    from evals.lakeio import (
        read_current_versions,
        read_job_facts,
        read_labels,
        read_results,
        read_traffic,
    )
    from evals.scoring import split_stale

    labels, stale = split_stale(read_labels(lake_uri), read_current_versions(lake_uri))
    results = read_results(lake_uri, [label.document_id for label in labels])
    return build_report(labels, stale, results, read_job_facts(lake_uri), read_traffic(lake_uri),
                        week=week, weeks=weeks, week_by=week_by, normalizers=normalizers,
                        resamples=resamples, seed=seed, training_sets=training_sets)


def weekly_f1(lake_uri: str, now: datetime, *, weeks: int = TREND_WEEKS,
              week_by: str = "label", normalizers: Mapping[str, Normalizer] | None = None,
              resamples: int = RESAMPLES, seed: int = SEED) -> list[dict]:
    """Weekly F1 with its interval, one dict per (week, model version, strategy), for the
    ``weeks`` complete weeks before ``now``, oldest first: week, week_start, model_version,
    strategy, documents, f1, f1_low, f1_high, weighted_f1 (fractions, 0-1). Computed from the
    lake now; the ``weekly_f1`` view holds the same figures as recorded by each week's report."""
    report = weekly_report(lake_uri, Week.last_complete(now), weeks=weeks, week_by=week_by,
                           normalizers=normalizers, resamples=resamples, seed=seed)
    return [point.to_dict() for point in report.trend]


# --- rendering -----------------------------------------------------------------------------------


def _pct(value: float | None) -> str:
    return "" if value is None else f"{100 * value:.2f}"


def _ci(ci: tuple[float, float] | None) -> str:
    return f"{_pct(ci[0])}-{_pct(ci[1])}" if ci else ""


BY_TEXT = {"label": "by label date (the week each labeller answered; `--week-by document` counts "
                    "a label in the week its document version was ingested)",
           "document": "by document date (the week each labelled document version was "
                       "ingested; `--week-by label` counts the week the labeller answered)"}


def weekly_markdown(report: WeeklyReport) -> str:
    run, week = report.run, report.week
    last = week.until.date().toordinal() - 1
    kinds = Counter({s.label.label_id: s.label.provenance or "unrecorded"
                     for s in run.scored}.values())
    made = ", ".join(f"{kind} {count}" for kind, count in sorted(kinds.items())) or "none"
    quoted = (f"eval run {run.eval_run_id} (in eval_runs)" if report.recorded else
              "not recorded in eval_runs (a read-only run)")
    lines = [f"# Field accuracy, week {week.label} ({week.start} to "
             f"{datetime.fromordinal(last).date()}), {report.week_by} date", "",
             f"Weeks counted {BY_TEXT[report.week_by]}. {run.labels} labelled documents in the "
             f"week, {len(run.stale)} stale labels (of a version that is no longer the "
             f"document's latest: not scored); labels by provenance: {made} (pre-filled "
             f"labels lean towards the model's answer); {quoted}. Micro F1 over key=value tokens by "
             f"group (model version and strategy); intervals: {INTERVAL}. Documents: the "
             "labelled documents behind the figure; with values: those of them with a value to "
             "score (a correct negative has none). Sample design (`evals sample`): stratified by "
             "applicability and format, one document per stratum and the rest to the documents "
             "the schema applies to. Weighted F1: every document processed this week counts, "
             "in its stratum (applicability and format; `failed`: the job failed, no label can "
             "be scored); each labelled document of a stratum processed this week weighs its "
             "stratum's traffic over its labelled documents; covered: the share of the traffic "
             "in strata with a labelled document. Blank only with no traffic.", "",
             "## This week", "",
             "| model version | strategy | documents | with values | F1 | interval | weighted F1 "
             "| weighted interval | traffic | covered |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for g in run.groups:
        w = report.weighted.get((g.model_version, g.strategy))
        lines.append(f"| {g.model_version} | {g.strategy} | {g.overall.documents} | "
                     f"{valued_documents(run.scored, (g.model_version, g.strategy))} | "
                     f"{_pct(g.overall.score.f1)} | {_ci(g.overall.f1_ci)} | "
                     f"{_pct(w.f1) if w else ''} | {_ci(w.f1_ci) if w else ''} | "
                     f"{w.traffic if w else ''} | {_pct(w.covered_share) if w and w.traffic else ''} |")
    shown = {(g.model_version, g.strategy) for g in run.groups}
    for (version, strategy), w in sorted(report.weighted.items()):
        if (version, strategy) not in shown and w.traffic:
            lines.append(f"| {version} | {strategy} | 0 | 0 | | | {_pct(w.f1)} | {_ci(w.f1_ci)} "
                         f"| {w.traffic} | {_pct(w.covered_share)} |")
    if not run.groups:
        lines += ["", "Nothing was scored this week: no label of the week has a result."]
    lines += ["", f"## Trend, {report.weeks} weeks to {week.label}", "",
              "| week | model version | strategy | documents | F1 | interval | weighted F1 |",
              "| --- | --- | --- | --- | --- | --- | --- |"]
    for p in sorted(report.trend, key=lambda p: (p.strategy, p.model_version, p.week)):
        lines.append(f"| {p.week.label} | {p.model_version} | {p.strategy} | "
                     f"{p.figures.documents} | {_pct(p.figures.score.f1)} | "
                     f"{_ci(p.figures.f1_ci)} | {_pct(p.weighted.f1) if p.weighted else ''} |")
    if not report.trend:
        lines += ["", "No week of the trend has a scored label."]
    lines += ["", "## Breakdown", "",
              "| by | value | model version | strategy | documents | F1 | interval |",
              "| --- | --- | --- | --- | --- | --- | --- |"]
    lines += [f"| {b.dimension} | {b.value} | {b.model_version} | {b.strategy} | "
              f"{b.figures.documents} | {_pct(b.figures.score.f1)} | {_ci(b.figures.f1_ci)} |"
              for b in report.breakdown]
    lines += ["", "## Strata and weights", "",
              "| model version | strategy | applicability | format | traffic | labelled | "
              "labelled share | weight | F1 |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for (version, strategy), w in sorted(report.weighted.items()):
        lines += [f"| {version} | {strategy} | {s[0]} | {s[1]} | {n} | {k} | "
                  f"{_pct(k / n) if n else ''} | {f'{n / k:.2f}' if n and k else '0'} | "
                  f"{_pct(f)} |" for s, n, k, f in w.strata]
    worst = sorted((fig.score.f1, name, g.model_version, g.strategy, fig.score)
                   for g in run.groups for name, fig in g.fields.items())[:5]
    lines += ["", "## Worst fields", "", "| field | model version | strategy | F1 | missed | "
              "spurious |", "| --- | --- | --- | --- | --- | --- |"]
    lines += [f"| {name} | {version} | {strategy} | {_pct(f1)} | {s.expected - s.hits} | "
              f"{s.predicted - s.hits} |" for f1, name, version, strategy, s in worst]
    if report.gate is not None:
        lines += ["", "## Gate", "", *[f"- {c.message()}" for c in report.gate]]
        if not report.gate:
            lines.append("- FAIL: nothing was scored this week")
    lines += fields_markdown(run.groups, run.scored)
    lines += confidence_markdown(report.confidence)
    if run.unscored:
        lines += ["", "## Labels not scored", "",
                  "Every label of the week that no figure above scores, and why: `failed` (the "
                  "job failed, nothing to score), `stale` (labelled for an older version), "
                  "`no_result`, `correct_negative` (not applicable and labelled empty: right, "
                  "with no value to score).", "",
                  "| document | reason | detail | strategy |", "| --- | --- | --- | --- |"]
        lines += [f"| {u.document_id} | {u.reason} | {u.detail} | {u.strategy or ''} |"
                  for u in run.unscored]
    if run.warnings:
        lines += ["", "## Warnings", "", *[f"- {w}" for w in run.warnings]]
    return "\n".join(lines) + "\n"


def trend_chart(report: WeeklyReport) -> str | None:
    """The trend as an inline SVG line chart (F1 per group per week, the interval as a band);
    None when there is nothing to draw or the chart libraries are not installed."""
    if not report.trend:
        return None
    try:
        import altair as alt
        import pandas as pd
        import vl_convert
    except ImportError:
        return None
    frame = pd.DataFrame([{**p.to_dict(), "group": f"{p.strategy} {p.model_version}",
                           "F1": 100 * p.figures.score.f1,
                           "low": 100 * p.figures.f1_ci[0] if p.figures.f1_ci else None,
                           "high": 100 * p.figures.f1_ci[1] if p.figures.f1_ci else None}
                          for p in report.trend])
    x = alt.X("week:O", title="week", sort=[w.label for w in report.week.trend(report.weeks)])
    band = alt.Chart(frame).mark_area(opacity=0.2).encode(
        x=x, y=alt.Y("low:Q", title="F1 (%)", scale=alt.Scale(domain=[0, 100])), y2="high:Q",
        color="group:N")
    line = alt.Chart(frame).mark_line(point=True).encode(
        x=x, y="F1:Q", color=alt.Color("group:N", title=None),
        tooltip=["week", "group", "documents", "F1", "low", "high"])
    chart = (band + line).properties(width=640, height=260, padding=5).configure(
        font="DejaVu Sans")
    major, minor = alt.SCHEMA_VERSION.lstrip("v").split(".")[:2]
    return vl_convert.vegalite_to_svg(chart.to_dict(), vl_version=f"{major}.{minor}")


def to_html(markdown: str, chart_svg: str | None = None) -> str:
    """The same report as a standalone page (headings, paragraphs, lists and pipe tables), with
    the trend chart, when given, under the trend's heading."""
    body, table = [], []

    def flush() -> None:
        if table:
            head, *rows = [r for r in table if not set(r.replace("|", "").strip()) <= {"-", " "}]
            cells = lambda row, tag: "".join(  # noqa: E731
                f"<{tag}>{html.escape(c.strip())}</{tag}>" for c in row.strip("|").split(" | "))
            body.append("<table><thead><tr>" + cells(head, "th") + "</tr></thead><tbody>"
                        + "".join(f"<tr>{cells(r, 'td')}</tr>" for r in rows)
                        + "</tbody></table>")
            table.clear()

    for line in markdown.splitlines():
        if line.startswith("|"):
            table.append(line)
            continue
        flush()
        if line.startswith("## "):
            body.append(f"<h2>{html.escape(line[3:])}</h2>")
            if line.startswith("## Trend") and chart_svg:
                body.append(f"<figure class='trend'>{chart_svg}</figure>")
        elif line.startswith("### "):
            body.append(f"<h3>{html.escape(line[4:])}</h3>")
        elif line.startswith("# "):
            body.append(f"<h1>{html.escape(line[2:])}</h1>")
        elif line.startswith("- "):
            body.append(f"<li>{html.escape(line[2:])}</li>")
        elif line.strip():
            body.append(f"<p>{html.escape(line)}</p>")
    flush()
    return ("<!doctype html><meta charset='utf-8'><title>doclake weekly evals</title><style>"
            "body{font-family:sans-serif;max-width:70em;margin:2em auto}table{border-collapse:"
            "collapse}td,th{border:1px solid #ccc;padding:.2em .6em;text-align:left}</style>\n"
            + "\n".join(body) + "\n")


# --- writing and recording ---------------------------------------------------------------------


def write_report(report: WeeklyReport, out_prefix: str) -> dict[str, str]:
    """``<prefix>.md`` and ``<prefix>.html`` (a local path or an ``s3://`` URI)."""
    import pyarrow.fs as pafs

    markdown = weekly_markdown(report)
    written = {}
    for suffix, text in ((".md", markdown), (".html", to_html(markdown, trend_chart(report)))):
        target = out_prefix + suffix
        if "://" in target:
            fs, path = pafs.FileSystem.from_uri(target)
        else:
            from pathlib import Path

            Path(target).parent.mkdir(parents=True, exist_ok=True)
            fs, path = pafs.LocalFileSystem(), target
        with fs.open_output_stream(path) as stream:
            stream.write(text.encode("utf-8"))
        written[suffix.lstrip(".")] = target
    return written


def report_events(report: WeeklyReport, now: datetime) -> list[Event]:
    """The reported week as an eval run: ``evals.score_run.run_events`` with the week on the
    run and each group's weighted estimate as a ``weighted`` score."""
    first, *rest = run_events(report.run, now)
    events: list[Event] = [first.model_copy(update={
        "week_start": report.week.since, "week_by": report.week_by}), *rest]
    for (version, strategy), w in sorted(report.weighted.items()):
        if w.f1 is None:
            continue
        events.append(EvalScoreComputed(
            eval_run_id=report.run.eval_run_id, level="weighted", model_version=version,
            strategy=strategy, field="overall", precision=w.f1, recall=w.f1, f1=w.f1, hits=0,
            predicted=0, expected=0, scored_documents=w.labelled,
            f1_low=w.f1_ci[0] if w.f1_ci else None, f1_high=w.f1_ci[1] if w.f1_ci else None,
            occurred_at=now))
    return events


def record_report(lake_uri: str, report: WeeklyReport, now: datetime) -> WeeklyReport:
    """Write the reported week's run to the lake; the report then quotes its id."""
    from evals.lakeio import write_events

    write_events(lake_uri, report_events(report, now))
    return dataclasses.replace(report, recorded=True)


def write_weekly_report(lake_uri: str, out_prefix: str, now: datetime, *,
                        normalizers: Mapping[str, Normalizer] | None = None,
                        training_sets: Sequence = (), week: Week | None = None,
                        weeks: int = TREND_WEEKS, week_by: str = "label",
                        fail_under: float | None = None, record: bool = False,
                        resamples: int = RESAMPLES, seed: int = SEED) -> dict[str, str]:
    """The one call a scheduler makes: report the last complete week before ``now`` (or
    ``week``), record it when ``record`` (the lake must then be writable), write the files."""
    report = weekly_report(lake_uri, week or Week.last_complete(now), weeks=weeks,
                           week_by=week_by, normalizers=normalizers, resamples=resamples,
                           seed=seed, training_sets=training_sets).with_gate(fail_under)
    if record:
        report = record_report(lake_uri, report, now)
    return write_report(report, out_prefix)
