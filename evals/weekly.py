"""The weekly report: this week's scores, the change since last week, the worst fields, as
Markdown and HTML. ``write_weekly_report`` is the one call a scheduler makes (the CLI locally; on
AWS a weekly rule invoking a Lambda that calls it with the lake and results bucket URIs)."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta

from evals.bootstrap import Comparison, paired
from evals.score_run import ScoreRun, score_lake
from evals.scoring import Normalizer, group_of

__all__ = ["weekly_markdown", "to_html", "write_weekly_report"]


def _pct(value: float | None) -> str:
    return "" if value is None else f"{100 * value:.2f}"


def week_over_week(this: ScoreRun, last: ScoreRun, group: tuple[str, str], *,
                   resamples: int, seed: int) -> Comparison | None:
    """The group's F1 this week minus last week on the documents both weeks scored (each
    week's latest result), with a paired interval; None when they share no document."""
    def latest(run: ScoreRun) -> dict:
        return {s.label.document_id: s.overall for s in run.scored
                if s.latest_in_group and group_of(s.result) == group}

    now, before = latest(this), latest(last)
    shared = sorted(set(now) & set(before))
    if not shared:
        return None
    return paired(group, group, [before[d] for d in shared], [now[d] for d in shared],
                  resamples=resamples, seed=seed)


def weekly_markdown(this: ScoreRun, last: ScoreRun, now: datetime) -> str:
    before = {(g.model_version, g.strategy): g for g in last.groups}
    lines = [f"# Field accuracy, week to {now:%Y-%m-%d}", "",
             f"{len(this.scored)} results of {this.labels} labelled documents scored "
             f"(eval run {this.eval_run_id}), {len(this.stale)} stale labels. Micro F1 over "
             "key=value tokens by group (model version and strategy); 95% BCa bootstrap "
             "intervals over documents. The change is paired: this week minus last week on the "
             "documents both weeks scored.", "",
             "| model version | strategy | documents | F1 | interval | last week | shared | "
             "change | change interval |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    worst = []
    for g in this.groups:
        key = (g.model_version, g.strategy)
        prev = before.get(key)
        f1, old = g.overall.score.f1, prev.overall.score.f1 if prev else None
        ci = f"{_pct(g.overall.f1_ci[0])}-{_pct(g.overall.f1_ci[1])}" if g.overall.f1_ci else ""
        change = week_over_week(this, last, key, resamples=this.resamples, seed=this.seed)
        if change is None:
            moved, moved_ci, shared = ("new" if prev is None else "no shared documents"), "", 0
        else:
            moved, shared = f"{100 * change.difference:+.2f}", change.documents
            moved_ci = (f"{100 * change.difference_ci[0]:+.2f} to "
                        f"{100 * change.difference_ci[1]:+.2f}") if change.difference_ci else ""
        lines.append(f"| {g.model_version} | {g.strategy} | {g.overall.documents} | {_pct(f1)} "
                     f"| {ci} | {_pct(old)} | {shared} | {moved} | {moved_ci} |")
        worst += [(fig.score.f1, name, g.model_version, g.strategy, fig.score)
                  for name, fig in g.fields.items()]
    lines += ["", "## Worst fields", "", "| field | model version | strategy | F1 | missed | "
              "spurious |", "| --- | --- | --- | --- | --- | --- |"]
    for f1, name, version, strategy, s in sorted(worst)[:5]:
        lines.append(f"| {name} | {version} | {strategy} | {_pct(f1)} | {s.expected - s.hits} "
                     f"| {s.predicted - s.hits} |")
    if not this.groups:
        lines += ["", "Nothing was scored this week: no labelled document has a result in it."]
    if this.warnings:
        lines += ["", "## Warnings", "", *[f"- {w}" for w in this.warnings]]
    return "\n".join(lines) + "\n"


def to_html(markdown: str) -> str:
    """The same report as a standalone page (headings, paragraphs and pipe tables only)."""
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
        elif line.startswith("# "):
            body.append(f"<h1>{html.escape(line[2:])}</h1>")
        elif line.strip():
            body.append(f"<p>{html.escape(line)}</p>")
    flush()
    return ("<!doctype html><meta charset='utf-8'><title>doclake weekly evals</title><style>"
            "body{font-family:sans-serif;max-width:60em;margin:2em auto}table{border-collapse:"
            "collapse}td,th{border:1px solid #ccc;padding:.2em .6em;text-align:left}</style>\n"
            + "\n".join(body) + "\n")


def write_weekly_report(lake_uri: str, out_prefix: str, now: datetime, *,
                        normalizers: Mapping[str, Normalizer] | None = None,
                        training_sets: Sequence = ()) -> dict[str, str]:
    """Score this week and last week, write ``<prefix>.md`` and ``<prefix>.html`` (a local path
    or an ``s3://`` URI), return their locations. Writes no eval events: ``evals score`` does."""
    import pyarrow.fs as pafs

    this = score_lake(lake_uri, since=now - timedelta(days=7), until=now, normalizers=normalizers,
                      training_sets=training_sets)
    last = score_lake(lake_uri, since=now - timedelta(days=14), until=now - timedelta(days=7),
                      normalizers=normalizers, resamples=0)
    markdown = weekly_markdown(this, last, now)
    written = {}
    for suffix, text in ((".md", markdown), (".html", to_html(markdown))):
        target = out_prefix + suffix
        fs, path = pafs.FileSystem.from_uri(target) if "://" in target else (
            pafs.LocalFileSystem(), target)
        with fs.open_output_stream(path) as stream:
            stream.write(text.encode("utf-8"))
        written[suffix.lstrip(".")] = target
    return written
