"""Reading a labels file of any supported format: the one place that knows every parser.

``evals.labels`` parses the sheet formats and ``evals.label_studio`` Label Studio's export, which
itself builds on ``evals.labels``; the dispatch lives here so neither imports the other back.
"""

from __future__ import annotations

from pathlib import Path

from evals.label_studio import parse_annotations
from evals.labels import FORMATS, LabelError, LabelInput, parse_csv, parse_jsonl, parse_kleister

__all__ = ["parse_labels"]


def parse_labels(path: Path, file_format: str) -> list[LabelInput]:
    """Every label in the file, in file order; raises ``LabelError``."""
    parsers = {"csv": parse_csv, "jsonl": parse_jsonl, "kleister": parse_kleister,
               "label-studio": parse_annotations}
    if file_format not in parsers:
        raise LabelError(f"format {file_format!r}: use one of {', '.join(FORMATS)}")
    return parsers[file_format](path)
