"""The LLM strategies' schema and evidence: a user's schema reaches Gemini whole as
``response_json_schema`` (dicts, ``const``, recursive models), each value comes back with the
quote that states it aligned loosely to the page, and ``doclake run --strategy single-pass`` with
no key refuses to start."""

from __future__ import annotations

import json
from typing import Literal

import pytest
from pydantic import BaseModel
from support.fake_gemini import FakeGemini, answer
from support.helpers import Harness
from support.pdfgen import make_pdf
from test_fields_llm import NDA, RECORD, extract_fields, models

from extract.context import Delivery
from extract.fields.base import PageText
from extract.fields.llm.prompts import Quote, answer_schema, locate_values
from extract.fields.llm.shared import call_site, models_for
from extract.fields.llm.single_pass import SinglePass
from extract.fields.schemas import NdaFields
from extract.models.simulated import structured_answer


class Section(BaseModel):
    """A recursive model: the old OpenAPI conversion refused it."""

    title: str
    kind: Literal["clause"] = "clause"
    children: list[Section] = []


class Contract(BaseModel):
    counts: dict[str, int]
    version: Literal["v1"]
    outline: Section | None = None


async def test_a_schema_with_dicts_consts_and_recursion_goes_whole_and_comes_back_valid(
        tmp_path):
    record = {"counts": {"clauses": 3}, "version": "v1",
              "outline": {"title": "Terms", "children": [{"title": "Term"}]}}
    with FakeGemini(lambda call: answer(json.dumps({"fields": record, "evidence": []}))) as fake:
        harness = Harness(tmp_path, models=models(fake))
        delivery = Delivery(1, "doc", "job", "w", harness.sink)
        strategy = SinglePass(models_for(harness.ctx, "single-pass"), harness.sink,
                              call_site(delivery))
        extraction = await strategy.extract([PageText(1, "Terms. Term: 3 clauses.")], Contract)
    (call,) = fake.calls
    config = call.body["generationConfig"]
    assert "responseSchema" not in config
    sent = config["responseJsonSchema"]
    assert '"$ref"' in json.dumps(sent) and "Section" in sent["$defs"]  # recursion kept
    fields = sent["properties"]["fields"]["properties"]
    assert fields["counts"]["additionalProperties"] == {"type": "integer"}
    assert fields["version"]["const"] == "v1"
    assert extraction.fields == Contract.model_validate(record)
    # the simulated provider answers the same JSON schema with a valid record
    for seed in range(20):
        Contract.model_validate(structured_answer(answer_schema(Contract), str(seed))["fields"])


async def test_each_value_comes_back_with_the_quote_that_states_it_aligned_to_the_page(tmp_path):
    evidence = [
        {"field": "effective_date", "value_index": 0, "quote": "made as of March 3, 2015",
         "page": 1},
        # the model tidied the line break and the case; the page is the one it sits on
        {"field": "jurisdiction", "value_index": 0,
         "quote": "governed by the laws of the state of Delaware", "page": 2},
        {"field": "term", "value_index": 0, "quote": "in effect for two (2) years", "page": 3},
    ]
    reply = {"fields": RECORD, "evidence": evidence}
    with FakeGemini(lambda call: answer(json.dumps(reply))) as fake:
        _, _, _, result = await extract_fields(tmp_path, "single-pass", models=models(fake))
    assert "evidence" in fake.calls[0].body["generationConfig"]["responseJsonSchema"][
        "properties"]
    rows = {(v.field, v.value_index): v for v in result.values}
    date = rows[("effective_date", 0)]
    assert (date.page_number, date.char_offset) == (1, NDA[0].index("made as of"))
    assert date.evidence == "made as of March 3, 2015"
    term = rows[("term", 0)]
    assert term.page_number == 3 and "two (2) years" in term.evidence
    assert rows[("jurisdiction", 0)].page_number == 2
    # no quote for the parties: their names are found in the text itself
    assert rows[("party", 1)].evidence == "Beta Labs LLC"


def test_a_name_broken_across_lines_and_a_quote_on_the_wrong_page_are_still_found():
    pages = [PageText(1, "Preamble.\n"), PageText(2, "between Acme Widgets,\nInc. and Beta")]
    record = NdaFields(party=["Acme Widgets, Inc."])
    (source,) = locate_values(record, pages)
    assert (source.page_number, source.char_offset) == (2, pages[1].text.index("Acme"))
    (quoted,) = locate_values(record, pages, [Quote("party", 0, "between Acme Widgets, Inc.", 1)])
    assert quoted.page_number == 2 and quoted.evidence.startswith("between Acme Widgets,\nInc")
    (nothing,) = locate_values(NdaFields(party=["Zeta Corp"]), pages)  # stated nowhere
    assert (nothing.page_number, nothing.evidence, nothing.flag) == (None, None, "not_found")


@pytest.mark.parametrize("strategy", ["single-pass", "agentic"])
def test_an_llm_strategy_without_a_key_refuses_to_start(tmp_path, monkeypatch, strategy):
    from test_fields_cli import invoke

    monkeypatch.delenv("DOCLAKE_GEMINI_API_KEY", raising=False)
    make_pdf(tmp_path / "a.pdf", NDA)
    home = tmp_path / "home"
    result = invoke("run", str(tmp_path / "a.pdf"), "--home", str(home), "--fields", "nda",
                    "--strategy", strategy)
    assert result.exit_code == 2, result.output
    assert "DOCLAKE_GEMINI_API_KEY" in " ".join(result.output.split())
    assert "succeeded" not in result.output
