"""``doclake evals ...``: labels in, scores out, failures, fine-tuning sets and the weekly report.

The work is in ``evals`` (which imports only ``lake``) and the schema knowledge it must not
import is in ``infra.evals_wiring``; this module parses arguments (the home, the time window),
calls them and prints.
"""

from __future__ import annotations

import getpass
import os
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated

import typer

from infra.cli.errors import UserError, WorkflowGroup, at_least, stderr_console
from infra.cli.home import Access, open_settings
from infra.cli.render.output import FormatOption, print_object, print_records, resolve_format

__all__ = ["EVALS_ORDER", "EvalsGroup", "evals_app", "file_format_option", "printed_format",
           "HomeOption", "SinceOption", "UntilOption", "parse_moment", "import_labels",
           "agreement", "score", "NO_LABELS_HINT", "compare", "SCORE_COLUMNS", "score_rows", "page_reader",
           "failures", "export_finetune", "report", "sample"]

# The order `doclake evals --help` lists the commands in: the workflow's (draw a sample, label
# it and import the labels, score, look at the misses, report the week), then the tools.
EVALS_ORDER = ("sample", "import-labels", "agreement", "score", "compare", "failures", "report",
               "export-finetune")


class EvalsGroup(WorkflowGroup):
    """``doclake evals``: its commands in ``EVALS_ORDER``."""

    order = EVALS_ORDER


evals_app = typer.Typer(cls=EvalsGroup, no_args_is_help=True, help="Label documents, score field "
                        "accuracy over live traffic, read failures, export fine-tuning sets.")


def _wiring():
    """``infra.evals_wiring``, imported by the commands that use it: it loads the extract
    package and numpy, which ``doclake --help`` and ``doclake sql`` (this app is registered
    with them) must not wait for."""
    from infra import evals_wiring

    return evals_wiring

HomeOption = Annotated[Path | None, typer.Option("--home", help="State folder "
                       "(default $DOCLAKE_HOME, else ./.doclake).", show_default=False)]
SinceOption = Annotated[str | None, typer.Option(
    "--since", help="Window start: 7d, 24h, 2w, or a date/time (ISO 8601); default: all time.",
    show_default=False)]
UntilOption = Annotated[str | None, typer.Option(
    "--until", help="Window end (same forms; default: now).", show_default=False)]


def file_format_option(formats: str, what: str):
    """``--file-format``: the layout of the file a command reads or writes (``--format`` is
    always how the result on stdout is printed: table, csv or json)."""
    return Annotated[str, typer.Option("--file-format", help=f"{formats}: {what}")]


def printed_format(value: str | None, file_formats) -> str:
    """``--format`` (table|csv|json), with a hint when the value names a file's format (the
    file's format is ``--file-format``)."""
    if value in file_formats:
        raise UserError(f"--format {value!r} is how the result is printed (table, csv or json)",
                        f"give the file's format as --file-format {value}")
    return resolve_format(value)


_AGO = re.compile(r"^(\d+)\s*([mhdw])$")


def parse_moment(value: str | None, now: datetime, option: str) -> datetime | None:
    """'7d' (ago), '24h', '2w', '30m', or an ISO date/time (UTC when no zone is given)."""
    if value is None:
        return None
    match = _AGO.match(value.strip().lower())
    if match:
        amount, unit = int(match.group(1)), match.group(2)
        unit_name = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}[unit]
        return now - timedelta(**{unit_name: amount})
    try:
        moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise UserError(f"{option} {value!r} is not a time",
                        "use 7d, 24h, 2w, 30m or an ISO date such as 2026-05-01") from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _now() -> datetime:
    return datetime.now(UTC)


# --- labels -------------------------------------------------------------------------------------


def _check_label_file(file: Path, file_format: str) -> None:
    """The label file exists and its ``--file-format`` is one the importer reads."""
    from evals.labels import FORMATS

    if file_format not in FORMATS:
        raise UserError(f"--file-format {file_format!r} is not a label format",
                        f"use one of: {', '.join(FORMATS)}")
    if not file.exists():
        raise UserError(f"no such file: {file}", "give the path of the label file")


@evals_app.command("import-labels", short_help="Import a filled sheet or a gold set as labels.")
def import_labels(
    file: Annotated[Path, typer.Argument(help="The label file (kleister: expected.tsv or its "
                                         "folder).")],
    home: HomeOption = None,
    file_format: file_format_option("csv|jsonl|kleister|label-studio", "the label file's "
                                  "layout") = "csv",
    labeller: Annotated[str | None, typer.Option(help="Who labelled, when the file does not "
                        "say (default: $USER).", show_default=False)] = None,
    labelled_at: Annotated[str | None, typer.Option("--labelled-at", help="When, when the file "
                           "does not say (default: now).", show_default=False)] = None,
    provenance: Annotated[str, typer.Option(help="How the answers were made, when the file does "
                          "not say: blind|pre-filled|imported|reviewer (a sheet from `evals "
                          "sample` says).")] = "imported",
    report_format: FormatOption = None,
) -> None:
    """Import labels as new versions in the lake (a later label supersedes an earlier one).

    csv: one row per value: sha256 and/or document_id (or source_name), field, value, and
    optionally labeller, labelled_at and provenance; a field with an empty value means "none".
    jsonl: one object per document with "fields": {...}. kleister: expected.tsv beside
    in.tsv(.xz), matched by the sha256 of documents/<name>, else by the file name.
    label-studio: the project's JSON export of tasks from `evals sample --file-format
    label-studio` (each task's latest annotation). A row's
    sha256 names the version labelled: a label of a version that is no longer the latest is
    stale (reported, not scored); a sha256 that is not a version of the row's document_id is
    refused."""
    from evals.label_import import import_labels as run_import
    from evals.labels import FORMATS, PROVENANCES, LabelError

    printed = printed_format(report_format, FORMATS)
    _check_label_file(file, file_format)
    if provenance not in PROVENANCES:
        raise UserError(f"--provenance {provenance!r} is not a provenance",
                        f"use one of: {', '.join(PROVENANCES)}")
    now = _now()
    lake = open_settings(home, Access.WRITE).lake
    try:
        report = run_import(lake, file, file_format, now=now,
                            labeller=labeller or os.environ.get("USER") or getpass.getuser(),
                            labelled_at=parse_moment(labelled_at, now, "--labelled-at"),
                            provenance=provenance)
    except LabelError as error:
        raise UserError(str(error), f"see `doclake evals import-labels -h` for the {file_format} "
                        "layout") from None
    _print_import(report, printed)
    if report.replaced_other_labeller:
        stderr_console().print(f"warning: {report.replaced_other_labeller} labels replace another "
                      "labeller's answer; to measure a second reviewer instead, run `doclake "
                      "evals agreement FILE`")
    if report.read and not report.imported and not report.unchanged:
        raise UserError(f"none of the {report.read} labels matched a document",
                        "labels are matched by document id, sha256 or source file name; "
                        "run the documents first")


def _print_import(report, output_format: str) -> None:
    """The summary on stdout; each refused, unmatched and stale label on stderr."""
    summary = report.to_dict()
    examples = {k: summary.pop(k) for k in ("stale_examples", "refused_examples",
                                            "unmatched_examples")}
    if output_format == "json":
        print_object({**summary, **examples}, "json")
        return
    summary["provenance"] = ", ".join(f"{k} {v}" for k, v in summary["provenance"].items())
    print_object(summary, output_format)
    for example in examples["refused_examples"]:
        stderr_console().print(f"refused {example['where']}: {example['why']}")
    for example in examples["unmatched_examples"]:
        stderr_console().print(f"unmatched {example['where']}: {example['key']} ({example['why']})")
    for example in examples["stale_examples"]:
        stderr_console().print(f"stale {example['where']}: document {example['document_id']} has a newer "
                      "version than the one labelled; not scored until its new content is "
                      "labelled")


@evals_app.command(short_help="Cohen's kappa per field between a second reviewer and the current labels.")
def agreement(
    file: Annotated[Path, typer.Argument(help="The second reviewer's label file.")],
    home: HomeOption = None,
    file_format: file_format_option("csv|jsonl|kleister", "the label file's layout") = "csv",
    labeller: Annotated[str | None, typer.Option(help="The second reviewer, when the file does "
                        "not say (default: $USER).", show_default=False)] = None,
    report_format: FormatOption = None,
) -> None:
    """Cohen's kappa per field between a second reviewer's labels and the current ones, over
    the documents both labelled. Writes nothing: the first answer stays the label."""
    from evals.agreement import review_agreement
    from evals.labels import FORMATS, LabelError

    printed = printed_format(report_format, FORMATS)
    _check_label_file(file, file_format)
    try:
        found, compared, unmatched = review_agreement(
            open_settings(home, Access.READ).lake, file, file_format,
            labeller=labeller or os.environ.get("USER") or getpass.getuser(),
            normalizers=_wiring().normalizers())
    except LabelError as error:
        raise UserError(str(error), "see `doclake evals import-labels -h` for the layouts") from None
    if not compared:
        raise UserError("no label in the file is for a labelled document",
                        "import the first reviewer's labels with `doclake evals import-labels`")
    if printed == "json":
        print_object({"documents": compared, "unmatched": unmatched,
                      "fields": [f.to_dict() for f in found]}, "json")
        return
    print_records(("field", "documents", "observed", "kappa"),
                  [(f.field, f.documents, f"{f.observed:.3f}",
                    "undefined" if f.kappa is None else f"{f.kappa:.3f}") for f in found],
                  printed,
                  title=f"agreement on {compared} documents ({unmatched} labels unmatched)")


# --- scores -------------------------------------------------------------------------------------


@evals_app.command(short_help="Precision, recall and F1 per field with bootstrap intervals; a gate for CI.")
def score(
    home: HomeOption = None,
    since: SinceOption = None,
    until: UntilOption = None,
    resamples: Annotated[int, typer.Option(callback=at_least(0), help="Bootstrap resamples "
                         "(0: no intervals).")] = 1000,
    seed: Annotated[int, typer.Option(help="Bootstrap seed (recorded with the run).")] = 13,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print, write nothing to the "
                       "lake.")] = False,
    output_format: FormatOption = None,
    fail_under: Annotated[float | None, typer.Option(
        "--fail-under", help="Exit 1 when the low end of a group's F1 interval (percent, "
        "0-100) is below this: a gate for CI.", min=0, max=100, show_default=False)] = None,
    trained_on: Annotated[list[Path] | None, typer.Option(
        "--trained-on", help="A fine-tuning set's manifest (`evals export-finetune`): warn "
        "when a single-pass or agentic group is scored on documents of its train or validation "
        "split. Repeatable.", show_default=False)] = None,
    tuned_model: Annotated[str, typer.Option(
        "--tuned-model", help="With --trained-on: only groups whose model version starts with "
        "this (the tuned model's name); default every LLM group.")] = "",
) -> None:
    """Precision, recall and F1 per field and overall, by model version and strategy, with
    bootstrap intervals; written to eval_runs, eval_scores and eval_outcomes. Labels of an
    older version of their document are reported as stale, not scored."""
    from evals.score_run import score_lake, write_run

    output_format = resolve_format(output_format)
    now = _now()
    window = {"since": parse_moment(since, now, "--since"),
              "until": parse_moment(until, now, "--until") or now}
    settings = open_settings(home, Access.READ if dry_run else Access.WRITE)
    training_sets = _wiring().training_sets() + [_finetune_set(path, tuned_model)
                                                 for path in trained_on or ()]
    run = score_lake(settings.lake, **window, normalizers=_wiring().normalizers(),
                     resamples=resamples, seed=seed, training_sets=training_sets)
    if not run.labels and not run.stale:
        _no_labels(fail_under)
    if not dry_run:
        write_run(settings.lake, run, now)
    if output_format == "json":
        print_object(run.to_dict(), "json")
    else:
        _print_score(run, output_format)
    _gate(run, fail_under)


def _finetune_set(path: Path, tuned_model: str):
    """A fine-tuning manifest as the documents a tuned model has seen (train and validation)."""
    import json

    from evals.finetune import trained_documents
    from evals.score_run import TrainingSet

    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        sha256s, document_ids = trained_documents(manifest)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise UserError(f"--trained-on {path}: not a fine-tuning manifest ({error})",
                        "give the <out>.manifest.json `doclake evals export-finetune` wrote"
                        ) from None
    return TrainingSet(tuned_model, sha256s, document_ids=document_ids,
                       strategies=frozenset({"single-pass", "agentic"}),
                       description=f"train and validation splits of {path.name}")


NO_LABELS_HINT = ("draw documents to label with `doclake evals sample --out sheet.csv`, fill in "
                  "its value column, then `doclake evals import-labels sheet.csv` (or import a "
                  "gold set: --file-format jsonl|kleister)")


def _no_labels(fail_under: float | None) -> None:
    """Nothing to score is a mistake to fix, not an empty table: exit 2, or 1 as a failed gate."""
    if fail_under is None:
        raise UserError("no labels in this home: there is nothing to score", NO_LABELS_HINT)
    stderr_console().print(f"FAIL: no labels in this home, so nothing was scored; {NO_LABELS_HINT}")
    raise typer.Exit(1)


def _gate(run, fail_under: float | None) -> None:
    """``--fail-under``: the low end of every scored group's F1 interval must reach it (the
    point estimate when there is no interval); nothing scored fails too."""
    from evals.gate import check

    if fail_under is None:
        return
    checks = check([(f"{g.strategy} {g.model_version}", g.overall.score.f1, g.overall.f1_ci)
                    for g in run.groups], fail_under)
    for found in checks:
        stderr_console().print(found.message())
    if not checks:
        stderr_console().print("FAIL: nothing was scored")
    if not checks or not all(found.passed for found in checks):
        raise typer.Exit(1)


def _print_score(run, output_format: str) -> None:
    print_records(SCORE_COLUMNS, score_rows(run), output_format,
                  title=f"eval run {run.eval_run_id}: {len(run.scored)} results of "
                  f"{run.labels} labelled documents; {len(run.stale)} stale labels")
    for c in run.comparisons:
        ci = f" [{100 * c.difference_ci[0]:+.2f}, {100 * c.difference_ci[1]:+.2f}]" \
            if c.difference_ci else ""
        stderr_console().print(f"{c.b[1]} {c.b[0]} minus {c.a[1]} {c.a[0]} on {c.documents} documents: "
                      f"F1 {100 * c.difference:+.2f}{ci}")
    for warning in run.warnings:
        stderr_console().print(f"warning: {warning}")
    for item in run.unscored:
        stderr_console().print(f"not scored: {item.document_id} ({item.reason}: {item.detail}"
                               f"{', ' + item.strategy if item.strategy else ''})")
    if not run.scored:
        stderr_console().print("nothing scored: no labelled document has a result in the window "
                      "(import labels with `doclake evals import-labels`)")


def _group(run, spec: str, option: str) -> tuple[str, str]:
    """``STRATEGY`` or ``STRATEGY@VERSION`` (a version prefix will do) -> the one group."""
    strategy, _, version = spec.partition("@")
    found = [(g.model_version, g.strategy) for g in run.groups if g.strategy == strategy
             and g.model_version.startswith(version)]
    if len(found) != 1:
        known = ", ".join(f"{g.strategy}@{g.model_version}" for g in run.groups) or "none"
        raise UserError(f"{option} {spec!r} names {len(found)} scored groups",
                        f"name one as STRATEGY or STRATEGY@VERSION; scored groups: {known}")
    return found[0]


@evals_app.command(short_help="F1 of B minus F1 of A on the documents both scored, with a paired interval.")
def compare(
    a: Annotated[str, typer.Argument(help="The baseline: STRATEGY or STRATEGY@VERSION.")],
    b: Annotated[str, typer.Argument(help="The candidate: STRATEGY or STRATEGY@VERSION.")],
    home: HomeOption = None,
    since: SinceOption = None,
    until: UntilOption = None,
    resamples: Annotated[int, typer.Option(callback=at_least(0), help="Bootstrap "
                         "resamples.")] = 1000,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 13,
    output_format: FormatOption = None,
) -> None:
    """F1 of B minus F1 of A on the labelled documents both scored, with a paired BCa interval
    (the same document draws for both)."""
    from evals.bootstrap import compare as paired_compare
    from evals.score_run import score_lake

    output_format = resolve_format(output_format)
    now = _now()
    run = score_lake(open_settings(home, Access.READ).lake,
                     since=parse_moment(since, now, "--since"),
                     until=parse_moment(until, now, "--until") or now,
                     normalizers=_wiring().normalizers(), resamples=0)
    first, second = _group(run, a, "A"), _group(run, b, "B")
    result = paired_compare(run.scored, first, second, resamples=resamples, seed=seed)
    if not result.documents:
        raise UserError(f"{a} and {b} share no scored document",
                        "run both on the same labelled documents")
    print_object(result.to_dict(), output_format)


SCORE_COLUMNS = ("model_version", "strategy", "field", "precision", "recall", "f1", "f1_ci",
                 "lenient_f1", "hits", "predicted", "expected", "documents", "with_values",
                 "lenient_rule")


def _pct(value: float) -> str:
    return f"{100 * value:.2f}"


def score_rows(run) -> list[tuple]:
    """One row per group and field (overall last), figures in percent; ``documents`` scored
    and ``with_values``, those of them with a value to score in that field (labelled or
    predicted): the documents the figure really rests on."""
    from evals.accounting import valued_documents
    from evals.kleister_metric import Score
    from evals.lenient import lenient_scores, rule_of

    lenient = lenient_scores(run.scored)
    rows = []
    for group in run.groups:
        key = (group.model_version, group.strategy)
        loose = lenient.get(key, {})
        for name, fig in [*sorted(group.fields.items()), ("overall", group.overall)]:
            s = fig.score
            ci = f"{_pct(fig.f1_ci[0])}-{_pct(fig.f1_ci[1])}" if fig.f1_ci else ""
            other = sum(loose.values(), Score()) if name == "overall" else loose.get(name)
            rows.append((group.model_version, group.strategy, name, _pct(s.precision),
                         _pct(s.recall), _pct(s.f1), ci, _pct(other.f1) if other else "",
                         s.hits, s.predicted, s.expected, fig.documents,
                         valued_documents(run.scored, key, None if name == "overall" else name),
                         "" if name == "overall" else rule_of(name).lenient))
    return rows


# --- failures and fine-tuning sets -------------------------------------------------------------


def page_reader(settings):
    """(document_id, job_id) -> the job's stored pages, from the home's objects."""
    from infra.local.objectstore import FolderObjectStore

    return _wiring().page_reader(FolderObjectStore(settings.home / "objects"))


@evals_app.command(short_help="Mismatches: expected, got, document, and the page where each value occurs.")
def failures(
    home: HomeOption = None,
    since: SinceOption = None,
    until: UntilOption = None,
    field: Annotated[str | None, typer.Option(help="Only this field.")] = None,
    limit: Annotated[int, typer.Option(callback=at_least(1), help="Most rows printed.")] = 50,
    out: Annotated[Path | None, typer.Option(help="Also write every failure as a Markdown "
                                             "report.", show_default=False)] = None,
    output_format: FormatOption = None,
) -> None:
    """Mismatches: expected, got, document, and the page where each value occurs."""
    from evals import failures as found
    from evals.score_run import score_lake

    output_format = resolve_format(output_format)
    now = _now()
    settings = open_settings(home, Access.READ)
    run = score_lake(settings.lake, since=parse_moment(since, now, "--since"),
                     until=parse_moment(until, now, "--until") or now,
                     normalizers=_wiring().normalizers(), resamples=0)
    rows = found.failures(run.scored, page_reader(settings), field=field)
    if out is not None:
        out.write_text(found.markdown(rows), encoding="utf-8")
        stderr_console().print(f"wrote {len(rows)} failures to {out}")
    print_records(found.COLUMNS, found.rows(rows[:limit]), output_format)
    if len(rows) > limit:
        stderr_console().print(f"{len(rows) - limit} more not shown (--limit, or --out for all)")


@evals_app.command("export-finetune", short_help="Fine-tuning JSONL (Gemini or OpenAI) from labels.")
def export_finetune(
    home: HomeOption = None,
    out: Annotated[Path, typer.Option(help="The train JSONL; validation and manifest are "
                                      "written beside it.")] = ...,
    file_format: file_format_option("gemini|openai", "the JSONL's layout: gemini (Vertex AI "
                                  "supervised tuning) or openai") = "gemini",
    include: Annotated[str, typer.Option(help="labelled (labelled documents only) or agreement "
                       "(also unlabelled documents whose latest results from two or more model "
                       "versions or strategies agree on every value).")] = "labelled",
    validation_percent: Annotated[int, typer.Option(help="Share of document groups for "
                                  "validation.", min=0, max=100)] = 10,
    test_percent: Annotated[int, typer.Option(help="Share of document groups held out for "
                            "testing the tuned model.", min=0, max=100)] = 10,
) -> None:
    """Fine-tuning JSONL (Gemini or OpenAI): production's single-pass request as input, an
    instance of its response schema (fields and evidence) as target; split into train,
    validation and test on document groups with near-duplicates kept together; a manifest
    naming each split's documents (`evals score --trained-on` reads it)."""
    import importlib.util

    if importlib.util.find_spec("datasketch") is None:  # the `finetune` extra: not in the demo
        raise UserError("`doclake evals export-finetune` needs datasketch, which the runtime "
                        "install (`make demo`, `pip install -e .`) leaves out",
                        "pip install -e '.[finetune]' (`make test` installs it with the rest)")
    from evals.finetune import FORMATS, build_examples, write_set
    from evals.finetune_sources import finetune_documents

    if file_format not in FORMATS:
        raise UserError(f"--file-format {file_format!r} is not a fine-tuning format",
                        f"use one of: {', '.join(FORMATS)}")
    if include not in ("labelled", "agreement"):
        raise UserError(f"--include {include!r} is not a rule", "use labelled or agreement")
    if validation_percent + test_percent > 100:
        raise UserError(f"--validation-percent {validation_percent} and --test-percent "
                        f"{test_percent} add up to more than 100", "lower one of them")
    if out.is_dir():
        raise UserError(f"--out {out} is a folder: it names the train JSONL file",
                        f"give a file name, e.g. --out {out / 'train.jsonl'}")
    settings = open_settings(home, Access.READ)
    documents = finetune_documents(settings.lake, page_reader(settings), include)
    examples, skipped = build_examples(documents, _wiring().target_schema)
    if not examples:
        raise UserError("nothing to export: no labelled document has a result with text of the "
                        "version it was labelled for",
                        "import labels first (doclake evals import-labels)")
    out.parent.mkdir(parents=True, exist_ok=True)
    manifest = write_set(examples, out, file_format, validation_percent=validation_percent,
                         test_percent=test_percent, skipped=skipped)
    for warning in manifest.warnings:
        stderr_console().print(f"warning: {warning}")
    print_object({**manifest.counts, "manifest": str(out.with_name(f"{out.stem}.manifest.json"))},
                 resolve_format(None))


@evals_app.command(short_help="The weekly report (Markdown and HTML): F1 by group, the trend, a gate.")
def report(
    home: HomeOption = None,
    out: Annotated[str, typer.Option(help="Path prefix (or s3:// URI prefix): <out>-<week>.md and "
                                     "<out>-<week>.html are written, one pair per week, "
                                     "kept.")] = "evals-weekly",
    week: Annotated[str | None, typer.Option(help="The week to report: 2026-W18 or a date in "
                    "it (default: the last complete week, Monday to Sunday, UTC).",
                    show_default=False)] = None,
    week_by: Annotated[str, typer.Option("--week-by", help="label: a label counts in the week "
                       "it was labelled; document: in the week its document version was "
                       "ingested.")] = "label",
    weeks: Annotated[int, typer.Option(callback=at_least(1), help="Weeks in the trend, ending "
                     "with the reported one.")] = 8,
    fail_under: Annotated[float | None, typer.Option(
        "--fail-under", help="Exit 1 when the low end of a group's F1 interval this week "
        "(percent, 0-100) is below this, or nothing was scored.", min=0, max=100,
        show_default=False)] = None,
    resamples: Annotated[int, typer.Option(callback=at_least(0), help="Bootstrap "
                         "resamples.")] = 1000,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 13,
) -> None:
    """The weekly report: the week's F1 by group with intervals and a traffic-weighted
    estimate, the trend over the last weeks (a chart in the HTML), a breakdown by format, size,
    source folder and schema, and a gate. The week's scores are recorded as an eval run
    (eval_runs, and the weekly_f1 view), which the report quotes."""
    from evals.weekly import WEEK_BY, record_report, weekly_report, write_report
    from evals.weeks import Week

    if week_by not in WEEK_BY:
        raise UserError(f"--week-by {week_by!r} is not a way to place labels in weeks",
                        f"use one of: {', '.join(WEEK_BY)}")
    now = _now()
    try:
        chosen = Week.parse(week) if week else Week.last_complete(now)
    except ValueError as error:
        raise UserError(f"--week {week!r} is not a week", str(error)) from None
    settings = open_settings(home, Access.WRITE)
    found = weekly_report(settings.lake, chosen, weeks=weeks, week_by=week_by,
                          normalizers=_wiring().normalizers(), resamples=resamples, seed=seed,
                          training_sets=_wiring().training_sets()).with_gate(fail_under)
    if found.run.labels or found.run.stale:
        found = record_report(settings.lake, found, now)
    written = write_report(found, f"{out}-{chosen.label}")
    stderr_console().print("wrote " + " and ".join(written.values()))
    stderr_console().print(f"week {chosen.label} by {week_by} date: {found.run.labels} labelled "
                           f"documents, {len(found.run.stale)} stale; " + (
                               f"eval run {found.run.eval_run_id}" if found.recorded else
                               "nothing scored, no eval run recorded"))
    if not found.run.labels and not found.run.stale:
        stderr_console().print("hint: label a sample first: `doclake evals sample` writes a sheet "
                               "to fill in, `doclake evals import-labels SHEET` takes it back "
                               "(docs/quality.md)")
    for line in found.gate or ():
        stderr_console().print(line.message())
    if found.gate is not None and not found.gate:
        stderr_console().print("FAIL: nothing was scored this week")
    if not found.passed:
        raise typer.Exit(1)


def _review(settings, candidates: list[dict], out: Path, n: int, seed: int) -> None:
    """``evals sample --strategy review``: the review sheet, and each field's rule printed."""
    from evals.confidence import by_field
    from evals.review import choose, write_review
    from evals.score_run import score_lake

    run = score_lake(settings.lake, since=None, until=None,
                     normalizers=_wiring().normalizers(), resamples=0)
    items, rules = choose(candidates, by_field(run.scored), n, seed)
    rows = write_review(out, items)
    for name, rule in rules.items():
        stderr_console().print(f"{name}: {rule}")
    stderr_console().print(f"wrote {rows} values of {len(items)} document fields to review to "
                           f"{out}")


@evals_app.command(short_help="Draw documents to label and write a sheet (CSV or Label Studio tasks).")
def sample(
    home: HomeOption = None,
    out: Annotated[Path, typer.Option(help="The labelling sheet (CSV) or Label Studio tasks "
                                      "(JSON) to write.")] = Path("labelling-sheet.csv"),
    n: Annotated[int, typer.Option("--n", callback=at_least(1), help="Documents to pick.")] = 50,
    since: SinceOption = None,
    seed: Annotated[int, typer.Option(help="Seed of the draw.")] = 13,
    include_labelled: Annotated[bool, typer.Option("--include-labelled", help="Also documents "
                                "already labelled.")] = False,
    include_unscorable: Annotated[bool, typer.Option("--include-unscorable", help="Also "
                                  "documents whose latest job failed (a label of them cannot "
                                  "be scored).")] = False,
    blind: Annotated[bool, typer.Option("--blind/--pre-filled", help="Blind (the default): "
                     "the value column empty and the model's values and version hidden, so the "
                     "labeller is not anchored on the model's answer; --pre-filled shows them "
                     "(faster, biased towards the model; the labels record which).")] = True,
    sheet_format: file_format_option("csv|label-studio", "csv (a sheet) or label-studio (Label "
                                   "Studio JSON tasks with each document's pages as text, and "
                                   "<out>.label-config.xml, the labelling interface)") = "csv",
    strategy: Annotated[str, typer.Option("--strategy", help="stratified (documents to label, "
                        "the default) or review (values to check: per field, the least "
                        "confident first where confidence ranks errors on the labels so far, "
                        "at random elsewhere; --n values per field).")] = "stratified",
) -> None:
    """Pick documents that can be scored (latest job succeeded) to label, stratified by
    applicability and format (the design is printed), and
    write a blind sheet (or --pre-filled with the extracted values); fill in `value` and import
    it with `doclake evals import-labels SHEET` (Label Studio: import the project's JSON export
    with --file-format label-studio). The sha256 of each document binds the answer to the bytes the
    labeller read."""
    from evals.sample import draw, sample_candidates, write_sheet

    if sheet_format not in ("csv", "label-studio"):
        raise UserError(f"--file-format {sheet_format!r} is not a sheet format",
                        "use csv or label-studio")
    if strategy not in ("stratified", "review"):
        raise UserError(f"--strategy {strategy!r} is not a way to sample",
                        "use stratified or review")
    if strategy == "review" and sheet_format != "csv":
        raise UserError("--strategy review writes a CSV sheet", "leave out --file-format")
    now = _now()
    settings = open_settings(home, Access.READ)
    candidates = sample_candidates(settings.lake, parse_moment(since, now, "--since"),
                                   include_labelled=include_labelled,
                                   include_unscorable=include_unscorable)
    if strategy == "review":
        _review(settings, candidates, out, n, seed)
        return
    picked, design = draw(candidates, n, seed)
    for line in design.lines():
        stderr_console().print(line)

    def fields(row: dict) -> tuple[str, ...]:
        return _wiring().schema_fields(row.get("schema_name") or "nda")

    if sheet_format == "label-studio":
        import json

        from evals.label_studio import label_config, tasks

        made = tasks(picked, fields, page_reader(settings), blind=blind)
        out.write_text(json.dumps(made, ensure_ascii=False, indent=1), encoding="utf-8")
        names = list(dict.fromkeys(name for row in picked for name in fields(row)))
        config = out.with_name(f"{out.stem}.label-config.xml")
        config.write_text(label_config(names), encoding="utf-8")
        stderr_console().print(f"wrote {len(made)} tasks of {len(candidates)} candidates to {out}"
                               f" and the labelling interface to {config}")
        return
    written = write_sheet(out, picked, fields, blind=blind)
    stderr_console().print(f"wrote {written} documents of {len(candidates)} candidates to {out}")
