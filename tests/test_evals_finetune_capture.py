"""The fine-tuning export against what production really sends: the single-pass strategy runs
through the fields handler (the registry's ``single_pass.build``) against a fake Gemini on
127.0.0.1, the request is captured off the wire, and the export of the same stored pages must
carry the same system prompt and user text, with a target that is an instance of the captured
``responseJsonSchema`` (checked with jsonschema). A production path that sends anything else
(another system prompt, another limit) makes the comparison fail; a change made where both
read it (the strategy's settings object) keeps them equal; and the export's target, given back
as the model's answer, is read by production into the labelled values, each at its quote."""

from __future__ import annotations

import dataclasses
import json

import jsonschema
import pytest
from support.fake_gemini import Call, FakeGemini, answer
from support.helpers import Harness
from test_fields_llm import NDA, RECORD, extract_fields, models

from evals.finetune import SCHEMA_HEADING, FinetuneDocument, build_examples, to_line
from extract.context import Delivery
from extract.fields.base import PageText
from extract.fields.llm import single_pass
from extract.fields.llm.shared import call_site, models_for
from extract.fields.schemas import NdaFields
from infra.evals_wiring import page_reader, target_schema

LABEL = {"effective_date": ("2015-03-03",), "jurisdiction": ("Delaware",),
         "party": ("Acme_Widgets_Inc.", "Beta_Labs_LLC"), "term": ("2_years",)}


def sent(call: Call) -> tuple[str, str, dict]:
    """(system text, user text, response schema) of a captured generateContent request."""
    system = "".join(p.get("text", "") for p in call.body["systemInstruction"]["parts"])
    return system, call.text, call.body["generationConfig"]["responseJsonSchema"]


def differences(call: Call, line: dict) -> list[str]:
    """What differs between a captured request and a Gemini tuning line built for the same
    document: the line's system text must be the captured system prompt followed by the
    captured response schema, its user text the captured text, its target an instance of the
    captured schema."""
    system, text, schema = sent(call)
    found = []
    expected_system = f"{system}\n\n{SCHEMA_HEADING}\n{json.dumps(schema, ensure_ascii=False)}"
    if line["systemInstruction"]["parts"][0]["text"] != expected_system:
        found.append("system")
    if line["contents"][0]["parts"][0]["text"] != text:
        found.append("user text")
    target = json.loads(line["contents"][1]["parts"][0]["text"])
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(target))
    if errors:
        found.append(f"target: {errors[0].message}")
    return found


async def capture_and_export(tmp_path) -> tuple[Call, dict]:
    """Production's request for the NDA (through the fields handler) and the export's Gemini
    line for the same stored pages and a label of it."""
    with FakeGemini(lambda call: answer(json.dumps(RECORD))) as fake:
        harness, doc, _, result = await extract_fields(tmp_path, "single-pass",
                                                       models=models(fake))
    assert result.status == "succeeded"
    (call,) = fake.calls
    pages = page_reader(harness.objects)(doc.document_id, doc.job_id)  # as the export reads
    document = FinetuneDocument(doc.document_id, "labelled", pages, LABEL, "kleister")
    (example,), skipped = build_examples([document], target_schema)
    assert not any(skipped.values())
    return call, to_line(example, "gemini")


async def test_the_export_is_what_production_sends_and_its_target_fits_the_schema(tmp_path):
    call, line = await capture_and_export(tmp_path)
    assert differences(call, line) == []
    target = json.loads(line["contents"][1]["parts"][0]["text"])
    assert target["fields"]["party"] == ["Acme Widgets, Inc.", "Beta Labs LLC"]
    assert {(e["field"], e["value_index"]) for e in target["evidence"]} == {
        ("effective_date", 0), ("jurisdiction", 0), ("party", 0), ("party", 1), ("term", 0)}
    for item in target["evidence"]:  # each quote is copied from the page it names
        assert item["quote"] in NDA[item["page"] - 1]


@pytest.mark.parametrize("change", [
    {"system": single_pass.SETTINGS.system + "\nBe brief."},
    {"max_chars": 120},  # a quarter of what the export sends for this document, and less
], ids=["system prompt", "max_chars"])
async def test_a_production_path_that_sends_something_else_fails_the_comparison(
        tmp_path, monkeypatch, change):
    """Production builds its strategy with other settings than the ones the export reads:
    the captured request no longer matches the export's line."""
    original = single_pass.build

    def build(ctx, delivery):
        built = original(ctx, delivery)
        built.settings = dataclasses.replace(built.settings, **change)
        built.max_chars = built.settings.max_chars
        return built

    monkeypatch.setattr(single_pass, "build", build)
    call, line = await capture_and_export(tmp_path)
    assert differences(call, line) != []


async def test_a_change_to_the_strategys_settings_reaches_both(tmp_path, monkeypatch):
    """The export reads production's settings object: a new system prompt there is in both."""
    new = dataclasses.replace(single_pass.SETTINGS, system="Extract the fields. Quote them.")
    monkeypatch.setattr(single_pass, "SETTINGS", new)
    call, line = await capture_and_export(tmp_path)
    assert sent(call)[0] == "Extract the fields. Quote them."
    assert differences(call, line) == []


async def test_the_target_given_back_as_the_answer_is_read_into_the_label(tmp_path):
    """Production reads the export's target (the shape it asks for) into the labelled values,
    each value located at the quote the target gives for it."""
    pages = [PageText(n, text) for n, text in enumerate(NDA, start=1)]
    document = FinetuneDocument("doc", "labelled", [(p.number, p.text) for p in pages], LABEL,
                                "kleister")
    (example,), _ = build_examples([document], target_schema)
    with FakeGemini(lambda call: answer(json.dumps(example.answer))) as fake:
        harness = Harness(tmp_path, models=models(fake))
        strategy = single_pass.SinglePass(
            models_for(harness.ctx, "single-pass"), harness.sink,
            call_site(Delivery(1, "doc", "job", "w", harness.sink)))
        extraction = await strategy.extract(pages, NdaFields)
    assert extraction.fields.model_dump(mode="json") == example.answer["fields"]
    for item in example.answer["evidence"]:
        source = extraction.source_of(item["field"], item["value_index"])
        assert source.page_number == item["page"]
        assert item["quote"] in source.evidence or source.evidence in item["quote"]
