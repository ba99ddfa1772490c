"""The Kleister NDA train split end to end: documents through `doclake run --fields nda`, labels
from its expected.tsv, `doclake evals score`; the F1 must equal, to the last digit, the
benchmark's metric computed here independently from the same predictions.

Independent means: the predictions are read from the published result JSON (not from the lake's
result_fields), turned into tokens by the schema (``NdaFields.kleister_tokens``), written as an
out.tsv in in.tsv's order, and scored by the few lines below written from the benchmark's
README, not by ``evals``. Slow (about 40 s: 254 PDFs, 1,636 pages), skipped without the data.
"""

from __future__ import annotations

import json
import lzma
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from conftest import SHARED

from extract.fields.schemas import NdaFields
from lake.catalog import query

SPLIT = SHARED / "data" / "kleister-nda" / "train"

pytestmark = pytest.mark.skipif(not (SPLIT / "expected.tsv").exists(),
                                reason=f"Kleister NDA train split not found at {SPLIT}")


def doclake(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "infra.cli.main", *args], capture_output=True,
                          text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def geval_f1(out_lines: list[str], expected_lines: list[str]) -> tuple[float, int, int, int]:
    """Micro F1 over upper-cased key=value tokens, each gold token matched at most once,
    P and R of an empty set 1.0 (the benchmark's config)."""
    hits = predicted = expected = 0
    for out, gold in zip(out_lines, expected_lines, strict=True):
        o, g = Counter(out.upper().split()), Counter(gold.upper().split())
        hits += sum((o & g).values())
        predicted += sum(o.values())
        expected += sum(g.values())
    p = hits / predicted if predicted else 1.0
    r = hits / expected if expected else 1.0
    return (2 * p * r / (p + r) if p + r else 0.0), hits, predicted, expected


def test_evals_score_equals_the_benchmark_metric_on_the_train_split(tmp_path):
    home = str(tmp_path / "home")
    doclake("run", str(SPLIT / "documents"), "--home", home, "--fields", "nda")
    doclake("evals", "import-labels", str(SPLIT / "expected.tsv"), "--file-format", "kleister",
            "--home", home, "--labeller", "kleister")
    scored = json.loads(doclake("evals", "score", "--home", home, "--format", "json"))

    names = {r["document_id"]: r["source_name"] for r in query(
        str(Path(home) / "lake"), "SELECT document_id, source_name FROM documents").to_pylist()}
    predictions = {}
    for path in (Path(home) / "objects" / "results").glob("*.json"):
        published = json.loads(path.read_text())
        fields = NdaFields(**(published["extracted_fields"] or {}))
        predictions[names[published["document_id"]]] = " ".join(fields.kleister_tokens())
    with lzma.open(SPLIT / "in.tsv.xz", "rt", encoding="utf-8") as rows:
        order = [row.split("\t", 1)[0] for row in rows]
    out_lines = [predictions[name] for name in order]
    expected_lines = (SPLIT / "expected.tsv").read_text(encoding="utf-8").splitlines()
    (tmp_path / "out.tsv").write_text("\n".join(out_lines) + "\n")

    f1, hits, predicted, expected = geval_f1(out_lines, expected_lines)
    overall = scored["overall"]
    print(f"doclake evals score F1 {overall['f1']!r}; independent metric F1 {f1!r}")
    assert len(predictions) == len(order) == scored["scored_documents"] == 254
    assert (overall["hits"], overall["predicted"], overall["expected"]) == (
        hits, predicted, expected)
    assert overall["f1"] == f1  # to the last digit
    assert f"{overall['f1']:.17g}" == f"{f1:.17g}"
