"""Fine-tuning sets: each format's JSONL shape; the prompt is production's (same builder, schema
with descriptions, same page rendering); Kleister targets in the text's surface form, nulls
explicit, any schema typed; a split no near-duplicate crosses; the provider's minimum warned;
failure pages found in the text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evals.failures import find_page
from evals.finetune import FinetuneDocument, build_examples, surface_form, write_set
from evals.split import near_duplicate_groups, side_of
from extract.fields.base import PageText
from extract.fields.llm.prompts import SINGLE_PASS_SYSTEM, single_pass_prompt
from extract.fields.llm.shared import DEFAULT_MAX_CHARS
from infra.evals_wiring import target_schema

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa",
         "lambda", "mu", "nu", "xi", "omicron", "pi", "rho", "sigma", "tau", "upsilon", "phi",
         "chi", "psi", "omega"]


def _body(i: int) -> str:
    """A text of its own per i: 120 words drawn by a simple generator seeded with i."""
    state, words = i * 7919 + 13, []
    for _ in range(120):
        state = (state * 1103515245 + 12345) % 2**31
        words.append(WORDS[state % len(WORDS)])
    return " ".join(words)


KLEISTER = {"party": ("Acme_Inc.", "Beta_LP"), "term": ("2_years",), "jurisdiction": (),
            "effective_date": ("2015-03-03",)}


def _documents(n: int = 60, duplicate_every: int = 10):
    docs = []
    for i in range(n):
        body = _body(i // duplicate_every if i % duplicate_every == 0 else i)
        docs.append(FinetuneDocument(
            f"d{i:03d}", "labelled",
            [(1, f"{body} between ACME, Inc. and Beta L.P."), (2, "for two (2) years")],
            KLEISTER, "kleister", "nda"))
    return docs


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _check_gemini(line: dict) -> str:
    assert set(line) <= {"systemInstruction", "contents"}
    assert line["systemInstruction"]["parts"][0]["text"]
    roles = [c["role"] for c in line["contents"]]
    assert roles == ["user", "model"]
    for content in line["contents"]:
        assert set(content) == {"role", "parts"}
        assert all(set(p) == {"text"} and isinstance(p["text"], str) for p in content["parts"])
    json.loads(line["contents"][-1]["parts"][0]["text"])
    return line["contents"][0]["parts"][0]["text"]


def _check_openai(line: dict) -> str:
    assert set(line) == {"messages"}
    assert [m["role"] for m in line["messages"]] == ["system", "user", "assistant"]
    assert all(set(m) == {"role", "content"} and isinstance(m["content"], str)
               for m in line["messages"])
    json.loads(line["messages"][-1]["content"])
    return line["messages"][1]["content"]


@pytest.mark.parametrize(("file_format", "check"), [("gemini", _check_gemini),
                                                     ("openai", _check_openai)])
def test_each_format_has_its_shape_and_the_split_does_not_leak(tmp_path, file_format, check):
    examples, skipped = build_examples(_documents(), target_schema)
    assert len(examples) == 60 and not any(skipped.values())
    out = tmp_path / "set.jsonl"
    manifest = write_set(examples, out, file_format, validation_percent=30)
    train = [check(line) for line in _lines(out)]
    validation = [check(line) for line in _lines(tmp_path / "set.validation.jsonl")]
    assert not set(train) & set(validation)  # no text on both sides
    assert len(set(train)) == len(train) and len(set(validation)) == len(validation)
    assert manifest.counts["duplicates_removed"] == 5  # d010..d050 repeat the texts of d001..d005
    assert manifest.counts["train"] + manifest.counts["validation"] == 55
    assert manifest.counts["validation"] > 0 and manifest.counts["train"] > 0
    written = json.loads((tmp_path / "set.manifest.json").read_text())
    assert "near-duplicate" in written["split_rule"] and written["counts"] == manifest.counts


def test_the_prompt_is_the_one_production_sends_with_the_schema_and_its_descriptions():
    """Finding 4: same builder, same rendering; the schema's descriptions are in the prompt."""
    from extract.fields.schemas import NdaFields

    doc = _documents(1)[0]
    (example,), _ = build_examples([doc], target_schema)
    production = single_pass_prompt([PageText(n, t) for n, t in doc.pages], NdaFields,
                                    DEFAULT_MAX_CHARS)
    assert example.text == production.text
    assert example.system.startswith(SINGLE_PASS_SYSTEM)
    assert "governing-law clause" in example.system  # a field description
    assert json.dumps(production.response_schema, ensure_ascii=False) in example.system


def test_kleister_targets_take_the_texts_surface_form_and_nulls_are_explicit():
    """Finding 4: 'Acme_Inc.' is written as the text spells it, not 'Acme Inc.'; an empty field
    is null, not omitted; a date stays ISO as the schema asks."""
    (example,), _ = build_examples(_documents(1), target_schema)
    assert example.answer == {"effective_date": "2015-03-03", "jurisdiction": None,
                              "party": ["ACME, Inc.", "Beta L.P."], "term": "2 years"}
    assert surface_form("Nike_Inc.", "by and between NIKE, Inc., an Oregon corporation") == (
        "NIKE, Inc.")
    assert surface_form("Telenor_Asa", "Telenor ASA (\"Telenor\")") == "Telenor ASA"
    assert surface_form("Leonard_Green_and_Partners_LP",
                        "Leonard Green & Partners, L.P.") == "Leonard Green & Partners, L.P."
    assert surface_form("Gamma_Corp.", "no such name here") is None


def test_a_partial_label_is_left_out_rather_than_teaching_a_wrong_null():
    doc = _documents(1)[0]._replace(values={"party": ("Acme_Inc.",)})
    examples, skipped = build_examples([doc], target_schema)
    assert examples == [] and skipped["partial_label"] == 1


def test_below_the_providers_minimum_the_export_warns(tmp_path):
    examples, _ = build_examples(_documents(8, duplicate_every=100), target_schema)
    manifest = write_set(examples, tmp_path / "set.jsonl", "openai", validation_percent=0)
    assert manifest.counts["train"] == 8
    assert manifest.warnings == ["8 training examples: openai tuning needs at least 10"]
    written = json.loads((tmp_path / "set.manifest.json").read_text())
    assert written["warnings"] == manifest.warnings


def test_near_duplicates_share_a_group_and_a_side():
    """Finding 5: an edited copy of a document (a few words changed) is on the side of the
    original, whatever the split percentage; unrelated texts are not grouped."""
    original = _body(1) + " " + _body(2)
    edited = original.replace("alpha", "ALPHA-2", 3) + " signed"
    texts = {"a": original, "b": _body(3) + " " + _body(4), "z": edited, "c": _body(5)}
    groups = near_duplicate_groups(texts)
    assert groups["z"] == groups["a"] == "a"
    assert len({groups["a"], groups["b"], groups["c"]}) == 3
    for percent in (10, 30, 50, 70, 90):
        assert side_of(groups["z"], percent) == side_of(groups["a"], percent)


def test_the_side_depends_on_the_group_not_the_text_limit(tmp_path):
    """Finding 5: the side is decided by the group (document id), so cutting the text
    differently cannot move a document across."""
    docs = _documents(30, duplicate_every=100)
    examples, _ = build_examples(docs, target_schema)
    first = write_set(examples, tmp_path / "a.jsonl", "gemini", validation_percent=30)
    short = [FinetuneDocument(d.document_id, d.source, [(1, d.pages[0][1][:200])], d.values,
                              d.value_format) for d in docs]
    shorter, _ = build_examples(short, target_schema)
    second = write_set(shorter, tmp_path / "b.jsonl", "gemini", validation_percent=30)
    assert first.validation_documents == second.validation_documents
    assert 0 < len(first.validation_documents) < 30


def test_a_missed_value_is_found_on_its_page_loosely():
    pages = [(1, "Cover"), (2, "between NIKE, Inc. and Leonard Green & Partners, L.P.")]
    assert find_page("Nike_Inc.", pages) == 2
    assert find_page("Leonard_Green_and_Partners_L.P.", pages) == 2
    assert find_page("2020-01-01", pages) is None
