"""``doclake fields ...``: score the offline extractor on the Kleister NDA train split
(k-fold cross-validation, the benchmark's metric) and rebuild the model it ships with; with
``--applicability``, the same for the classifier that decides which documents are NDAs."""

from __future__ import annotations

import json
import os
import statistics
import tempfile
from pathlib import Path
from typing import Annotated

import typer

__all__ = ["fields_app", "NDA_FIELDS", "SPLIT", "DataOption", "CacheOption", "DEFAULT_CACHE", "cv", "train"]

fields_app = typer.Typer(no_args_is_help=True,
                         help="Structured fields: cross-validate and train the offline extractor.")

NDA_FIELDS = ("effective_date", "jurisdiction", "party", "term")
SPLIT = Path("data") / "kleister-nda" / "train"

DataOption = Annotated[Path | None, typer.Option(
    "--data", help="The Kleister NDA train split (in.tsv.xz, expected.tsv, documents/); default "
    "$DOCLAKE_SHARED_DIR/data/kleister-nda/train, else a shared/ folder above this one.",
    show_default=False)]
CacheOption = Annotated[Path, typer.Option(
    "--cache", help="Where page texts read from the PDFs are kept between runs.")]
DEFAULT_CACHE = Path(tempfile.gettempdir()) / "doclake-kleister-pages"


def _installation_folders() -> list[Path]:
    """Where a ``shared/`` folder may sit, found from the installation rather than the current
    folder: the checkout this package runs from (``shared/`` beside the clone, as the team's
    layout has it, or inside it), then the current folder and its parents."""
    package = Path(__file__).resolve()
    return [*package.parents, Path.cwd(), *Path.cwd().parents]


def _split(data: Path | None) -> Path:
    """The Kleister NDA train split: ``--data``, else ``$DOCLAKE_SHARED_DIR``, else a
    ``shared/`` folder beside or above the installation (the checkout's ``../shared``), else
    one above the current folder. A clear error names every place looked at."""
    if data is not None:
        return data
    if os.environ.get("DOCLAKE_SHARED_DIR"):
        return Path(os.environ["DOCLAKE_SHARED_DIR"]) / SPLIT
    for folder in _installation_folders():
        if (folder / "shared" / SPLIT).is_dir():
            return folder / "shared" / SPLIT
    raise typer.BadParameter("cannot find the Kleister NDA train split: pass --data DIR or set "
                             "DOCLAKE_SHARED_DIR (looked for shared/data/kleister-nda/train "
                             f"above {Path(__file__).resolve().parent} and {Path.cwd()})")


def _corpus(data: Path | None) -> Path | None:
    """The shared corpus beside the Kleister data (``<shared>/corpus``), None when absent."""
    split = _split(data)
    for folder in split.parents:
        if (folder / "corpus" / "MANIFEST.tsv").exists():
            return folder / "corpus"
    return None


def _applicability(data: Path | None, cache: Path, folds: int, seed: int, write: Path | None,
                   output_format: str) -> None:
    """Grouped-fold and held-out precision and recall of the NDA classifier; with ``write``,
    the model fitted on the development set written there (with its figures)."""
    from rich.console import Console
    from rich.table import Table

    from extract.fields.kinds import THRESHOLD
    from training.applicability import classifier as training

    folder = _split(data)
    if not (folder / "expected.tsv").exists():
        raise typer.BadParameter(f"{folder} holds no expected.tsv: not a Kleister split")
    dev, held = training.load_examples(folder, cache, _corpus(data))
    out_of_fold = training.cross_validate(dev, folds=folds, seed=seed)
    grouped = training.measure(dev, out_of_fold, THRESHOLD)
    model = training.fit(dev)
    held_scores = [model.score(e.text) for e in held]
    final = training.measure(held, held_scores, THRESHOLD)
    parts = {f"{name} {source}": figures for name, found in (
        ("grouped folds", training.by_source(dev, out_of_fold, THRESHOLD)),
        ("held out", training.by_source(held, held_scores, THRESHOLD)))
        for source, figures in found.items()}
    report = {"threshold": THRESHOLD, "folds": folds, "seed": seed,
              "grouped_folds": grouped.to_dict(), "held_out": final.to_dict(),
              "by_source": {k: v.to_dict() for k, v in parts.items()},
              "model_version": model.version}
    if write is not None:
        model.details = {k: v for k, v in report.items() if k != "model_version"}
        model.threshold = THRESHOLD
        write.write_text(model.to_json() + "\n", encoding="utf-8")
        Console(stderr=True).print(f"wrote {write} ({model.version}, {len(model.weights)} "
                                   "weights)")
    if output_format == "json":
        print(json.dumps(report))
        return
    table = Table("set", "documents", "NDAs", "precision", "recall", "false positives",
                  "false negatives", title=f"NDA classifier at {THRESHOLD}: {folds}-fold grouped "
                  "cross-validation on the development set, then the held-out set")
    for name, f in (("grouped folds", grouped), *[(k, v) for k, v in parts.items()
                                                   if k.startswith("grouped")],
                    ("held out", final), *[(k, v) for k, v in parts.items()
                                           if k.startswith("held")]):
        table.add_row(name, str(f.documents), str(f.positives), f"{f.precision:.3f}",
                      f"{f.recall:.3f}", str(len(f.false_positives)),
                      str(len(f.false_negatives)))
    Console().print(table)
    for name, f in (("grouped folds", grouped), ("held out", final)):
        for wrong in f.false_positives:
            Console().print(f"{name}: taken for an NDA: {wrong}")
        for wrong in f.false_negatives:
            Console().print(f"{name}: NDA missed: {wrong}")


def _calibration(data: Path | None, cache: Path, folds: int, seed: int, write: Path | None,
                 output_format: str) -> None:
    """The rules' reliability table and ECE before and after calibration, F1 by confidence
    floor and the chosen floor (grouped out-of-fold on the Kleister split); with ``write``, the
    calibration for the shipped model written there."""
    from rich.console import Console
    from rich.table import Table

    from extract.fields.rules.calibrating import calibrate, out_of_fold_values
    from extract.fields.rules.linear import LinearModel
    from extract.fields.rules.shipped import MODEL_PATH

    documents, _ = _load(data, cache)
    pairs, expected = out_of_fold_values(documents, folds=folds, seed=seed)
    calibration = calibrate(pairs, expected, LinearModel.load(MODEL_PATH).version)
    details = calibration.details
    if write is not None:
        write.write_text(calibration.to_json() + "\n", encoding="utf-8")
        Console(stderr=True).print(f"wrote {write} (for {calibration.model_version})")
    if output_format == "json":
        print(json.dumps({**details, "folds": folds, "seed": seed}))
        return
    table = Table("confidence", "values", "mean before", "right before", "values after",
                  "mean after", "right after",
                  title=f"rules confidence, {folds}-fold grouped out-of-fold on "
                  f"{len(documents)} documents ({details['values']} values)")

    def cell(value) -> str:
        return "" if value is None else f"{value:.3f}"

    for before, after in zip(details["reliability_before"], details["reliability_after"],
                             strict=True):
        table.add_row(f"{before['low']:.1f}-{before['high']:.1f}", str(before["values"]),
                      cell(before["mean_confidence"]), cell(before["share_right"]),
                      str(after["values"]), cell(after["mean_confidence"]),
                      cell(after["share_right"]))
    Console().print(table)
    Console().print(f"ECE before calibration {details['ece_before']:.4f}, after "
                    f"{details['ece_after']:.4f} (each fold calibrated on the others)")
    floors = Table("floor", "values kept", "precision", "recall", "F1",
                   title="dropping calibrated values under a floor")
    for floor, row in details["by_floor"].items():
        floors.add_row(floor, str(row["values"]), f"{100 * row['precision']:.2f}",
                       f"{100 * row['recall']:.2f}", f"{100 * row['f1']:.2f}")
    Console().print(floors)
    Console().print(f"chosen floor (highest F1): {details['floor']:.2f}")


def _load(data: Path | None, cache: Path):
    from rich.console import Console

    from extract.fields.rules.kleister import load_split

    folder = _split(data)
    if not (folder / "expected.tsv").exists():
        raise typer.BadParameter(f"{folder} holds no expected.tsv: not a Kleister split")
    documents = load_split(folder, cache)
    without_text = [d.name for d in documents if not d.has_text]
    if without_text:
        Console(stderr=True).print(f"{len(without_text)} of {len(documents)} PDFs have no text "
                                   "layer (scored as empty predictions until OCR lands)")
    return documents, without_text


@fields_app.command()
def cv(
    data: DataOption = None,
    folds: Annotated[int, typer.Option(help="Number of folds.", min=2)] = 5,
    seed: Annotated[int, typer.Option(help="Shuffle seed for the folds.")] = 0,
    grouped: Annotated[bool, typer.Option(
        "--grouped/--ungrouped", help="Keep near-duplicate documents (shingle Jaccard >= 0.5) "
        "in one fold (the honest figure), or shuffle documents at random.")] = True,
    cache: CacheOption = DEFAULT_CACHE,
    output_format: Annotated[str, typer.Option("--format", help="table|json")] = "table",
    applicability: Annotated[bool, typer.Option(
        "--applicability", help="Measure the NDA classifier instead (which documents get NDA "
        "values): precision and recall on grouped folds (a Kleister near-duplicate group or a "
        "kind of written document never in two folds) and on the held-out set.")] = False,
    calibration: Annotated[bool, typer.Option(
        "--calibration", help="Measure the rules' confidences instead: the reliability table "
        "and ECE before and after calibration, and F1 by confidence floor.")] = False,
    last_check: Annotated[bool, typer.Option(
        "--last-check/--no-last-check", help="Also score the held-out part (a fifth of the "
        "split, never used to choose) with a model fitted on the development part.")] = True,
) -> None:
    """Cross-validated precision, recall and F1 (Kleister micro F1) on the development part,
    overall and per field, with the folds' spread, confidence AUROC per field and the last
    check on the held-out part;
    with --applicability the NDA classifier's precision and recall; with --calibration the
    confidences' reliability."""
    if output_format not in ("table", "json"):
        raise typer.BadParameter(f"format {output_format!r}: use table or json")
    if applicability:
        _applicability(data, cache, folds, seed, None, output_format)
        return
    if calibration:
        _calibration(data, cache, folds, seed, None, output_format)
        return
    documents, without_text = _load(data, cache)
    report = _rules_figures(documents, folds=folds, seed=seed, grouped=grouped,
                            last_check=last_check)
    if output_format == "json":
        print(json.dumps({**report, "documents": len(documents), "folds": folds, "seed": seed,
                          "grouped": grouped, "documents_without_text": len(without_text)}))
        return
    _print_rules_figures(report, folds, grouped)


def _rules_figures(documents, *, folds: int, seed: int, grouped: bool,
                   last_check: bool) -> dict:
    """The cross-validated figures on the development part (pooled, per fold, the folds'
    spread, confidence AUROC per field) and the last check on the held-out part."""
    from evals.kleister_metric import score
    from extract.fields.rules.calibrating import auroc
    from extract.fields.rules.training import evaluate, held_out_split

    development, held_out = held_out_split(documents)
    dev = [documents[i] for i in development]
    evaluation = evaluate(dev, folds=folds, seed=seed, grouped=grouped)
    pooled = score(evaluation.predictions, [d.gold for d in dev], fields=NDA_FIELDS).to_dict()
    per_fold = []
    for fold in range(folds):
        inside = evaluation.fold_documents(fold)
        per_fold.append(score([evaluation.predictions[i] for i in inside],
                              [dev[i].gold for i in inside], fields=NDA_FIELDS).to_dict())
    spread = {}
    for name in ("overall", *NDA_FIELDS):
        f1s = [(f["overall"] if name == "overall" else f["fields"].get(name, {})).get("f1")
               for f in per_fold]
        f1s = [v for v in f1s if v is not None]
        spread[name] = {"min": min(f1s), "max": max(f1s),
                        "sd": statistics.pstdev(f1s) if len(f1s) > 1 else 0.0}
    confidence = {}
    for name in NDA_FIELDS:
        values = [v for v in evaluation.values if v.field == name]
        confidence[name] = {"values": len(values), "wrong": sum(not v.right for v in values),
                            "auroc": auroc([v.probability for v in values],
                                           [v.right for v in values])}
    report = {"development_documents": len(dev), "held_out_documents": len(held_out),
              "cross_validation": pooled, "folds_f1": spread, "per_fold": per_fold,
              "confidence": confidence}
    if last_check:
        test = [documents[i] for i in held_out]
        final = evaluate(dev, test=test)
        report["last_check"] = score(final.predictions, [d.gold for d in test],
                                     fields=NDA_FIELDS).to_dict()
    return report


def _print_rules_figures(report: dict, folds: int, grouped: bool) -> None:
    from rich.console import Console
    from rich.table import Table

    pooled, spread = report["cross_validation"], report["folds_f1"]
    final = report.get("last_check")
    table = Table("field", "P", "R", "F1", "folds' F1 (sd)", "hits", "pred", "gold",
                  "AUROC (wrong)", "last check",
                  title=f"rules, {folds}-fold {'grouped ' if grouped else ''}cross-validation "
                  f"on {report['development_documents']} development documents; last check on "
                  f"{report['held_out_documents']} held-out documents (never used to choose)")
    for name in (*NDA_FIELDS, "overall"):
        label = {"effective_date": "date", "jurisdiction": "juris."}.get(name, name)
        s = pooled["overall"] if name == "overall" else pooled["fields"].get(name)
        if s is None:
            continue
        f = spread[name]
        c = report["confidence"].get(name)
        cell = ("" if c is None else "n/a" if c["auroc"] is None
                else f"{c['auroc']:.3f} ({c['wrong']})")
        held = None if final is None else (final["overall"] if name == "overall"
                                           else final["fields"].get(name))
        inside = held is not None and f["min"] <= held["f1"] <= f["max"]
        table.add_row(label, f"{100 * s['precision']:.2f}", f"{100 * s['recall']:.2f}",
                      f"{100 * s['f1']:.2f}",
                      f"{100 * f['min']:.1f}-{100 * f['max']:.1f} ({100 * f['sd']:.1f})",
                      str(s["hits"]), str(s["predicted"]), str(s["expected"]), cell,
                      "" if held is None else f"{100 * held['f1']:.2f}"
                      + ("" if inside else " *"))
    Console().print(table)
    Console().print("AUROC: the chance a right value's confidence is above a wrong one's "
                    "(out of fold; wrong values in brackets). *: the last check falls outside the "
                    "folds' range.")


def _write_training_set(model_path: Path, version: str, folder: Path, names: list[str]) -> None:
    """``<model>.training.json`` beside the model: the documents it was fitted on (name and
    SHA-256), so `doclake evals score` can warn when it scores the model on its own training set."""
    import hashlib
    import json

    documents = [{"name": name, "sha256": hashlib.sha256(
        (folder / "documents" / name).read_bytes()).hexdigest()
        if (folder / "documents" / name).is_file() else None} for name in sorted(names)]
    model_path.with_name(f"{model_path.stem}.training.json").write_text(json.dumps(
        {"model_version": version, "split": str(folder.name), "documents": documents},
        indent=0) + "\n", encoding="utf-8")


@fields_app.command()
def train(
    data: DataOption = None,
    cache: CacheOption = DEFAULT_CACHE,
    out: Annotated[Path | None, typer.Option(help="Where to write the model (default: the "
                                             "one the package ships).", show_default=False)] = None,
    applicability: Annotated[bool, typer.Option(
        "--applicability", help="Fit the NDA classifier instead, on its development set (the "
        "held-out set stays out), and write it with its measured figures.")] = False,
    calibration: Annotated[bool, typer.Option(
        "--calibration", help="Fit the calibration of the shipped rules model's confidences "
        "on grouped out-of-fold values and write it with its figures.")] = False,
) -> None:
    """Fit the rules model on the whole train split and write it as JSON (deterministic)."""
    from rich.console import Console

    from extract.fields.rules.shipped import MODEL_PATH
    from extract.fields.rules.training import fit

    if applicability:
        from extract.fields.applicability.model import NDA_MODEL_PATH

        _applicability(data, cache, 5, 0, out or NDA_MODEL_PATH, "table")
        return
    if calibration:
        from extract.fields.rules.calibration import CALIBRATION_PATH

        _calibration(data, cache, 5, 0, out or CALIBRATION_PATH, "table")
        return

    documents, _ = _load(data, cache)
    model = fit(documents)
    target = out or MODEL_PATH
    target.write_text(model.to_json() + "\n", encoding="utf-8")
    _write_training_set(target, model.version, _split(data), [d.name for d in documents])
    weights = sum(len(m.weights) for m in model.fields.values())
    Console().print(f"wrote {target} ({model.version}, {weights} weights, "
                    f"{target.stat().st_size // 1024} KiB)")
