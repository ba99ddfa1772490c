"""Fine-tuning sets: each format's JSONL shape; the target an instance of production's response
schema (fields and evidence, checked with jsonschema); Kleister targets in the text's surface
form, nulls explicit, any schema typed; a train/validation/test split no near-duplicate crosses,
its documents in the manifest; the provider's minimum warned; failure pages found in the text.
What production really sends is compared with the export in test_evals_finetune_capture.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evals.failures import find_page
from evals.finetune import FinetuneDocument, build_examples, surface_form, write_set
from evals.split import near_duplicate_groups, side_of
from extract.fields.base import PageText
from extract.fields.llm.prompts import SINGLE_PASS_SYSTEM
from extract.fields.llm.single_pass import SETTINGS
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
            [(1, f"{body} made as of March 3, 2015 between ACME, Inc. and Beta L.P."),
             (2, "for two (2) years")],
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
    assert set(json.loads(line["contents"][-1]["parts"][0]["text"])) == {"fields", "evidence"}
    return line["contents"][0]["parts"][0]["text"]


def _check_openai(line: dict) -> str:
    assert set(line) == {"messages"}
    assert [m["role"] for m in line["messages"]] == ["system", "user", "assistant"]
    assert all(set(m) == {"role", "content"} and isinstance(m["content"], str)
               for m in line["messages"])
    assert set(json.loads(line["messages"][-1]["content"])) == {"fields", "evidence"}
    return line["messages"][1]["content"]


@pytest.mark.parametrize(("file_format", "check"), [("gemini", _check_gemini),
                                                     ("openai", _check_openai)])
def test_each_format_has_its_shape_and_the_split_does_not_leak(tmp_path, file_format, check):
    examples, skipped = build_examples(_documents(), target_schema)
    assert len(examples) == 60 and not any(skipped.values())
    out = tmp_path / "set.jsonl"
    manifest = write_set(examples, out, file_format, validation_percent=30, test_percent=20)
    train = [check(line) for line in _lines(out)]
    validation = [check(line) for line in _lines(tmp_path / "set.validation.jsonl")]
    test = [check(line) for line in _lines(tmp_path / "set.test.jsonl")]
    # no text on two sides, none twice on one
    assert not (set(train) & set(validation) or set(train) & set(test)
                or set(validation) & set(test))
    assert all(len(set(side)) == len(side) for side in (train, validation, test))
    assert manifest.counts["duplicates_removed"] == 5  # d010..d050 repeat the texts of d001..d005
    assert len(train) + len(validation) + len(test) == 55
    assert all((manifest.counts[side], len(lines)) == (len(lines), len(lines)) and lines
               for side, lines in (("train", train), ("validation", validation),
                                   ("test", test)))
    written = json.loads((tmp_path / "set.manifest.json").read_text())
    assert "near-duplicate" in written["split_rule"] and written["counts"] == manifest.counts
    # the manifest names each split's documents, which are the ones in its file
    for side, lines in (("train", train), ("validation", validation), ("test", test)):
        ids = [d["document_id"] for d in written["splits"][side]]
        assert len(ids) == len(lines)
        assert all(f"d{int(i[1:]):03d}" == i for i in ids)


def test_the_prompt_is_built_by_the_strategys_settings_and_follows_them():
    """The request is the settings object's: a different system prompt or limit in the
    settings given changes the example (no constant of the export's own)."""
    import dataclasses

    from extract.fields.schemas import NdaFields

    doc = _documents(1)[0]
    (example,), _ = build_examples([doc], target_schema)
    production = SETTINGS.request([PageText(n, t) for n, t in doc.pages], NdaFields)
    assert example.text == production.text
    assert example.system.startswith(SINGLE_PASS_SYSTEM)
    assert "governing-law clause" in example.system  # a field description
    assert json.dumps(production.response_schema, ensure_ascii=False) in example.system
    other = dataclasses.replace(SETTINGS, system="Answer in JSON.", max_chars=60)
    (changed,), _ = build_examples([doc], lambda name: target_schema(name, other))
    assert changed.system.startswith("Answer in JSON.\n\n") and changed.truncated
    assert "not shown" in changed.text and changed.text != example.text


def test_kleister_targets_take_the_texts_surface_form_and_nulls_are_explicit():
    """Finding 4: 'Acme_Inc.' is written as the text spells it, not 'Acme Inc.'; an empty field
    is null, not omitted; a date stays ISO as the schema asks; every value has its quote."""
    (example,), _ = build_examples(_documents(1), target_schema)
    assert example.answer["fields"] == {"effective_date": "2015-03-03", "jurisdiction": None,
                                        "party": ["ACME, Inc.", "Beta L.P."], "term": "2 years"}
    quotes = {(e["field"], e["value_index"]): (e["page"], e["quote"])
              for e in example.answer["evidence"]}
    assert set(quotes) == {("party", 0), ("party", 1), ("term", 0), ("effective_date", 0)}
    assert quotes[("term", 0)] == (2, "for two (2) years")
    assert "ACME, Inc." in quotes[("party", 0)][1] and quotes[("party", 0)][0] == 1
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
    manifest = write_set(examples, tmp_path / "set.jsonl", "openai", validation_percent=0,
                         test_percent=0)
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
    short = [FinetuneDocument(d.document_id, d.source, [(1, d.pages[0][1][-250:]), d.pages[1]],
                              d.values, d.value_format) for d in docs]
    shorter, _ = build_examples(short, target_schema)
    second = write_set(shorter, tmp_path / "b.jsonl", "gemini", validation_percent=30)
    assert first.validation_documents == second.validation_documents
    assert 0 < len(first.validation_documents) < 30


def test_a_missed_value_is_found_on_its_page_loosely():
    pages = [(1, "Cover"), (2, "between NIKE, Inc. and Leonard Green & Partners, L.P.")]
    assert find_page("Nike_Inc.", pages) == 2
    assert find_page("Leonard_Green_and_Partners_L.P.", pages) == 2
    assert find_page("2020-01-01", pages) is None


def test_agreement_on_nothing_confirms_nothing():
    """Two versions that both found no value agree without having read anything: not a
    confirmed label. Two that found the same values are; two that differ are not."""
    from datetime import UTC, datetime

    from evals.finetune_sources import agreeing_documents
    from evals.scoring import Result

    at = datetime(2026, 1, 5, tzinfo=UTC)
    found = {"party": (("Acme, Inc.", 1),), "term": (("2 years", 2),)}

    def result(document_id: str, version: str, values: dict) -> Result:
        return Result(document_id, f"job-{document_id}", "rules", version, at, values=values,
                      sha256=f"sha-{document_id}")

    results = [result("empty", "v1", {}), result("empty", "v2", {}),
               result("same", "v1", found), result("same", "v2", found),
               result("differ", "v1", found), result("differ", "v2", {"party": found["party"]})]
    chosen = agreeing_documents(results, set(), lambda d, j: [(1, "text")])
    assert [(c.document_id, c.source, c.sha256) for c in chosen] == [
        ("same", "confirmed", "sha-same")]
    assert chosen[0].values == {"party": ("Acme, Inc.",), "term": ("2 years",)}


def test_a_value_no_page_states_is_left_out_and_the_target_is_checked_against_the_schema():
    """No evidence, no example (the set must not teach an answer without its quote); a target
    missing its evidence is not an instance of production's response schema."""
    from evals.finetune import check_target
    from extract.fields.schemas import NdaFields

    doc = _documents(1)[0]._replace(values={**KLEISTER, "term": ("5_years",)})
    examples, skipped = build_examples([doc], target_schema)
    assert examples == [] and skipped["no_evidence"] == 1
    # a name the text never writes has no spelling to teach: left out and counted apart
    doc = _documents(1)[0]._replace(values={**KLEISTER, "jurisdiction": ("Nevada",)})
    examples, skipped = build_examples([doc], target_schema)
    assert examples == [] and (skipped["value_without_span"], skipped["no_evidence"]) == (1, 0)
    schema = SETTINGS.request([PageText(1, "x")], NdaFields).response_schema
    (example,), _ = build_examples(_documents(1), target_schema)
    check_target(example.answer, schema)
    with pytest.raises(ValueError, match="evidence"):
        check_target({"fields": example.answer["fields"]}, schema)
    with pytest.raises(ValueError, match="quote"):
        check_target({**example.answer, "evidence": [{"field": "term", "page": 2}]}, schema)


def test_scoring_a_tuned_model_on_its_train_or_validation_documents_warns(tmp_path):
    """``evals score --trained-on MANIFEST``: a single-pass group scored on documents of the
    set's train and validation splits is warned about; its test split is not counted, and the
    rules group is not concerned."""
    from datetime import UTC, datetime

    from evals.label_import import import_labels
    from evals.lakeio import write_events
    from evals.score_run import score_lake
    from infra.cli.evals import _finetune_set
    from lake import events as ev

    at = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)
    lake, events, shas = str(tmp_path / "lake"), [], {}
    for i, side in enumerate(("train", "validation", "test")):
        doc, job = f"0196a0b0-0000-7000-8000-{i:012d}", f"0196a0b0-0000-7000-9000-{i:012d}"
        shas[side] = f"{i}" * 64
        events.append(ev.DocumentRegistered(document_id=doc, job_id=job, source_name=f"{i}.pdf",
                                            sha256=shas[side], bytes=1, occurred_at=at))
        events += [ev.ResultPublished(document_id=doc, job_id=job, status="succeeded",
                                      strategy=strategy, model_version="tuned-1",
                                      schema_name="nda", occurred_at=at)
                   for strategy in ("single-pass", "rules")]
    write_events(lake, events)
    (tmp_path / "l.jsonl").write_text("".join(
        json.dumps({"sha256": sha, "fields": {"term": []}}) + "\n" for sha in shas.values()))
    import_labels(lake, tmp_path / "l.jsonl", "jsonl", labeller="ann", now=at)
    manifest = tmp_path / "set.manifest.json"
    manifest.write_text(json.dumps({"splits": {side: [{"document_id": f"id-{side}",
                                                        "sha256": sha}]
                                               for side, sha in shas.items()}}))
    run = score_lake(lake, since=None, until=None, resamples=0,
                     training_sets=[_finetune_set(manifest, "")])
    (warning,) = [w for w in run.warnings if "training set" in w]
    assert warning.startswith("single-pass tuned-1: 2 of 3 scored documents")
    assert "set.manifest.json" in warning
    other = score_lake(lake, since=None, until=None, resamples=0,
                       training_sets=[_finetune_set(manifest, "another-model")])
    assert not [w for w in other.warnings if "training set" in w]


def test_a_pair_just_above_the_threshold_is_one_group_whatever_minhash_estimates():
    """Two 400-word texts, the second with 27 words replaced: their word 5-shingles have an
    exact Jaccard of 0.517 (counted below without the code under test), above the 0.5 of a
    near-duplicate; MinHash with 128 permutations estimates this pair under 0.5. They must
    share a group; an unrelated text must not join them."""
    import random

    rng = random.Random(16)
    first = [f"w{rng.randrange(5000)}" for _ in range(400)]
    second = list(first)
    for i in sorted(rng.sample(range(400), 27)):
        second[i] = f"x{rng.randrange(5000)}"
    other = [f"v{k}" for k in range(400)]

    def five(words):
        return {tuple(words[i:i + 5]) for i in range(len(words) - 4)}

    a, b = five(first), five(second)
    assert 0.5 <= len(a & b) / len(a | b) < 0.52
    groups = near_duplicate_groups({"d1": " ".join(first), "d2": " ".join(second),
                                    "d3": " ".join(other)})
    assert groups == {"d1": "d1", "d2": "d1", "d3": "d3"}
