"""The fine-tuning export of labelled NDAs teaches what production's prompt asks: names as the
document writes them ("Copy names as the document writes them"), evidence quotes that start and
end on word boundaries, and a manifest whose hashes are the files'. Labels are the labeller's
spelling (the Kleister answers written out with spaces: "Redprairie Holding Inc."), run on 24
Kleister NDAs; skipped without the data."""

from __future__ import annotations

import hashlib
import json
import lzma
import re
import shutil
from pathlib import Path

import pytest
from conftest import SHARED
from test_fields_cli import invoke

SPLIT = SHARED / "data" / "kleister-nda" / "train"
DOCUMENTS = 24

pytestmark = pytest.mark.skipif(not (SPLIT / "expected.tsv").exists(),
                                reason=f"Kleister NDA train split not found at {SPLIT}")


def _squashed(text: str) -> str:
    return " ".join(text.split())


def _labels(folder: Path, out: Path) -> dict[str, list[str]]:
    """A sheet (source_name, field, value) of the first documents, values as a labeller types
    them: the Kleister answer with spaces for underscores."""
    with lzma.open(SPLIT / "in.tsv.xz", "rt") as handle:
        names = [line.split("\t", 1)[0] for line in handle]
    expected = (SPLIT / "expected.tsv").read_text().splitlines()
    rows, parties = ["source_name,field,value"], {}
    for name, gold in list(zip(names, expected, strict=True))[:DOCUMENTS]:
        shutil.copy(SPLIT / "documents" / name, folder / name)
        given = {"effective_date": [], "jurisdiction": [], "party": [], "term": []}
        for token in gold.split():
            key, _, value = token.partition("=")
            given[key].append(value.replace("_", " "))
        for key, values in given.items():
            rows += [f'{name},{key},"{v}"' for v in values] or [f"{name},{key},"]
        parties[name] = given["party"]
    out.write_text("\n".join(rows) + "\n")
    return parties


def _on_word_boundaries(quote: str, text: str) -> bool:
    at = text.find(quote)
    assert at >= 0, quote
    before = text[at - 1] if at else " "
    after = text[at + len(quote)] if at + len(quote) < len(text) else " "
    return not (quote[0].isalnum() and before.isalnum()) and not (
        quote[-1].isalnum() and after.isalnum())


def test_targets_spell_names_as_the_document_does_and_the_manifest_hashes_the_files(tmp_path):
    docs, home = tmp_path / "docs", str(tmp_path / "home")
    docs.mkdir()
    labelled = _labels(docs, tmp_path / "labels.csv")
    assert invoke("run", str(docs), "--home", home, "--fields", "nda").exit_code == 0
    imported = invoke("evals", "import-labels", str(tmp_path / "labels.csv"), "--home", home)
    assert imported.exit_code == 0, imported.output
    out = tmp_path / "set" / "nda.jsonl"
    exported = invoke("evals", "export-finetune", "--home", home, "--out", str(out),
                      "--file-format", "openai")
    assert exported.exit_code == 0, exported.output
    manifest = json.loads(out.with_name("nda.manifest.json").read_text())

    parties = quotes = respelled = 0
    label_spellings = {v for values in labelled.values() for v in values}
    for side, written in manifest["outputs"].items():
        body = Path(written["path"]).read_bytes()
        assert written["sha256"] == hashlib.sha256(body).hexdigest(), side
        lines = [json.loads(line) for line in body.decode().splitlines()]
        assert written["rows"] == len(lines) == manifest["counts"][side]
        for line in lines:
            text = line["messages"][1]["content"]
            answer = json.loads(line["messages"][2]["content"])
            for party in answer["fields"]["party"]:
                assert _squashed(party) in _squashed(text), party
                parties += 1
                respelled += party not in label_spellings
            for item in answer["evidence"]:
                assert _on_word_boundaries(item["quote"], text), item["quote"]
                quotes += 1
    assert parties >= 20 and quotes >= 40, (parties, quotes)
    assert respelled >= 5  # the labeller's "Nike Inc." is taught as the page's "NIKE, Inc."
    left_out = manifest["counts"]["skipped_value_without_span"]
    assert manifest["counts"]["labelled"] + left_out + manifest["counts"][
        "skipped_no_evidence"] + manifest["counts"]["skipped_partial_label"] == DOCUMENTS
    assert re.fullmatch(r"[0-9a-f]{64}", manifest["outputs"]["train"]["sha256"])
