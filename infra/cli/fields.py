"""``doclake fields ...``: score the offline extractor on the Kleister NDA train split
(k-fold cross-validation, the benchmark's metric) and rebuild the model it ships with."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Annotated

import typer

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


def _split(data: Path | None) -> Path:
    if data is not None:
        return data
    if os.environ.get("DOCLAKE_SHARED_DIR"):
        return Path(os.environ["DOCLAKE_SHARED_DIR"]) / SPLIT
    for folder in [Path.cwd(), *Path.cwd().parents]:
        if (folder / "shared" / SPLIT).is_dir():
            return folder / "shared" / SPLIT
    raise typer.BadParameter("cannot find the Kleister NDA train split; pass --data DIR")


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
) -> None:
    """Cross-validated precision, recall and F1 (Kleister micro F1), overall and per field."""
    from rich.console import Console
    from rich.table import Table

    from evals.kleister_metric import score
    from extract.fields.rules.training import cross_validate

    if output_format not in ("table", "json"):
        raise typer.BadParameter(f"format {output_format!r}: use table or json")
    documents, without_text = _load(data, cache)
    predictions = cross_validate(documents, folds=folds, seed=seed, grouped=grouped)
    report = score(predictions, [d.gold for d in documents], fields=NDA_FIELDS)
    if output_format == "json":
        print(json.dumps({**report.to_dict(), "documents": len(documents), "folds": folds,
                          "seed": seed, "grouped": grouped,
                          "documents_without_text": len(without_text)}))
        return
    table = Table("field", "precision", "recall", "F1", "hits", "predicted", "expected",
                  title=f"rules, {folds}-fold {'grouped ' if grouped else ''}cross-validation "
                  f"on {len(documents)} documents")
    rows = [*sorted(report.fields.items()), ("overall", report.overall)]
    for name, s in rows:
        table.add_row(name, f"{100 * s.precision:.2f}", f"{100 * s.recall:.2f}", f"{100 * s.f1:.2f}",
                      str(s.hits), str(s.predicted), str(s.expected))
    Console().print(table)


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
) -> None:
    """Fit the rules model on the whole train split and write it as JSON (deterministic)."""
    from rich.console import Console

    from extract.fields.rules.strategy import MODEL_PATH
    from extract.fields.rules.training import fit

    documents, _ = _load(data, cache)
    model = fit(documents)
    target = out or MODEL_PATH
    target.write_text(model.to_json() + "\n", encoding="utf-8")
    _write_training_set(target, model.version, _split(data), [d.name for d in documents])
    weights = sum(len(m.weights) for m in model.fields.values())
    Console().print(f"wrote {target} ({model.version}, {weights} weights, "
                    f"{target.stat().st_size // 1024} KiB)")
