"""The LLM strategies (single-pass, agentic) in the fields handler, against a fake Gemini on
127.0.0.1 that speaks the real REST shapes: calls per document, the ledger, invalid output retried
then failed, no key, the simulated provider, and ``doclake run --strategy single-pass``."""

from __future__ import annotations

import dataclasses
import json

import pytest
from support.fake_gemini import Call, FakeGemini, answer
from support.helpers import Harness
from test_fields_pipeline import fields_messages, finished_job

from extract.context import Delivery
from extract.fields.base import PageText
from extract.fields.llm.agentic import step_schema
from extract.fields.llm.prompts import document_text, gemini_schema
from extract.fields.llm.shared import call_site, models_for
from extract.fields.llm.single_pass import SinglePass
from extract.fields.result import FieldResult
from extract.fields.schemas import NdaFields
from extract.handling import Outcome, handle_message
from extract.models import ModelConfig
from extract.models.simulated import structured_answer
from extract.poller import send_fields_messages

NDA = ["MUTUAL NON-DISCLOSURE AGREEMENT between Acme Widgets, Inc. and Beta Labs LLC, "
       "made as of March 3, 2015.",
       "This Agreement is governed by the laws of the State of Delaware.",
       "This Agreement shall remain in effect for two (2) years. Signed: Acme Widgets, Inc."]
RECORD = {"effective_date": "2015-03-03", "jurisdiction": "Delaware",
          "party": ["Acme Widgets, Inc.", "Beta Labs LLC"], "term": "2 years"}
IN_PRICE, OUT_PRICE = 0.30, 2.50  # gemini-2.5-flash, USD per 1M tokens (the default table)


def models(fake: FakeGemini, **extra) -> ModelConfig:
    return ModelConfig(gemini_api_key="dummy", gemini_base_url=fake.url,
                       model_retry_initial_s=0.01, model_retry_max_delay_s=0.02,
                       model_retry_budget_s=0.2, **extra)


async def extract_fields(tmp_path, strategy: str, **config):
    """One finished NDA, its fields message handled once; the harness and the stored result."""
    harness = Harness(tmp_path, **config)
    doc = finished_job(harness, tmp_path / "docs", NDA)
    harness.store.request_fields([doc.job_id], "nda", strategy)
    assert send_fields_messages(harness.ctx) == 1
    (message,) = fields_messages(harness)
    outcome = await handle_message(harness.ctx, message)
    claim = harness.store.get_field_claim(doc.job_id, strategy)
    return harness, doc, outcome, FieldResult.model_validate_json(claim.result)


def ledger(harness: Harness):
    return harness.sink.of_type("model_call")


async def test_single_pass_makes_one_structured_call_and_fills_the_result(tmp_path):
    with FakeGemini(lambda call: answer(json.dumps(RECORD), prompt_tokens=900,
                                       output_tokens=60)) as fake:
        harness, doc, outcome, result = await extract_fields(tmp_path, "single-pass",
                                                            models=models(fake))
    assert outcome is Outcome.ACK
    assert fake.count() == 1
    (call,) = fake.calls
    assert call.model == "gemini-2.5-flash"
    config = call.body["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert "responseSchema" not in config, "sent as JSON Schema, which the API takes whole"
    schema_text = json.dumps(config["responseJsonSchema"])
    assert "governing-law clause" in schema_text  # the field descriptions are the instructions
    assert all(page in call.text for page in NDA) and "--- page 3 ---" in call.text
    assert "systemInstruction" in call.body

    assert result.status == "succeeded" and result.strategy == "single-pass"
    assert result.extracted_fields == RECORD
    assert result.model_version.startswith("gemini:gemini-2.5-flash+")  # + prompt/schema/code
    assert (result.input_tokens, result.output_tokens) == (900, 60)
    where = {(v.field, v.value): (v.page_number, v.char_offset) for v in result.values}
    assert where[("jurisdiction", "Delaware")] == (2, NDA[1].index("Delaware"))
    assert where[("party", "Beta Labs LLC")] == (1, NDA[0].index("Beta Labs LLC"))

    (row,) = ledger(harness)
    assert (row.purpose, row.outcome, row.document_id, row.job_id) == (
        "extract_fields", "ok", doc.document_id, doc.job_id)
    assert (row.input_tokens, row.output_tokens) == (900, 60)
    assert row.cost_usd == pytest.approx((900 * IN_PRICE + 60 * OUT_PRICE) / 1e6)


def agent(call: Call):
    """A scripted agent: asks the page count, reads pages 1 and 3, asks page 9, then answers."""
    text = call.text
    if "page_count ->" not in text:
        step = {"action": "page_count"}
    elif "read_pages [1, 3]" not in text:
        step = {"action": "read_pages", "pages": [1, 3]}
    elif "read_pages [9, 2]" not in text:
        step = {"action": "read_pages", "pages": [9, 2]}
    else:
        step = {"action": "answer", "answer": RECORD}
    return answer(json.dumps(step), prompt_tokens=400 + len(text) // 4, output_tokens=20)


async def test_agentic_asks_for_pages_then_answers_with_every_call_on_the_ledger(tmp_path):
    with FakeGemini(agent) as fake:
        harness, doc, outcome, result = await extract_fields(tmp_path, "agentic",
                                                            models=models(fake))
    assert outcome is Outcome.ACK
    assert fake.count() == 4
    first, second, third, last = fake.calls
    assert NDA[0] not in first.text and "the document has 3 pages" in second.text
    assert NDA[0] in third.text and NDA[2] in third.text and NDA[1] not in third.text
    assert "no such pages: [9]" in last.text and NDA[1] in last.text
    assert first.body["generationConfig"]["responseJsonSchema"]["required"] == ["action"]

    assert result.status == "succeeded" and result.extracted_fields == RECORD
    rows = ledger(harness)
    assert [r.purpose for r in rows] == ["extract_fields"] * 4
    assert {r.job_id for r in rows} == {doc.job_id}
    assert result.input_tokens == sum(r.input_tokens for r in rows) > 4 * 400
    assert result.output_tokens == 80
    assert sum(r.cost_usd for r in rows) == pytest.approx(
        (result.input_tokens * IN_PRICE + 80 * OUT_PRICE) / 1e6)


async def test_the_agent_is_made_to_answer_on_its_last_turn(tmp_path):
    def curious(call: Call):  # would read page 1 for ever; the last turn's schema is the record's
        if "action" not in json.dumps(call.body["generationConfig"]["responseJsonSchema"]):
            return answer(json.dumps(RECORD))
        return answer(json.dumps({"action": "read_pages", "pages": [1]}))

    with FakeGemini(curious) as fake:
        harness, _, outcome, result = await extract_fields(tmp_path, "agentic",
                                                          models=models(fake))
    assert outcome is Outcome.ACK and result.extracted_fields == RECORD
    assert fake.count() == 8  # DEFAULT_MAX_TURNS: seven tool turns and the forced answer
    assert "last turn" in fake.calls[-1].text and "already shown" in fake.calls[-1].text


async def test_invalid_output_is_retried_then_fails_clearly(tmp_path):
    with FakeGemini(lambda call: answer('{"term": "until the cows come home"}')) as fake:
        harness, _, outcome, result = await extract_fields(tmp_path, "single-pass",
                                                          models=models(fake))
    assert outcome is Outcome.ACK  # settled as failed: nothing to retry
    assert fake.count() == 3
    assert "not valid: term" in fake.calls[1].text  # the retry says what was wrong
    assert result.status == "failed" and result.failure_reason == "invalid_output"
    # the failure is the model's: it carries the version a success of the same model would
    assert result.model_version.startswith("gemini:gemini-2.5-flash+")
    assert "after 3 calls" in result.failure_message and "term" in result.failure_message
    assert [r.outcome for r in ledger(harness)] == ["ok"] * 3  # paid for, all three


async def test_an_invalid_answer_then_a_valid_one_succeeds_with_both_calls_counted(tmp_path):
    def respond(call: Call):
        return answer("not json at all", 800, 5) if call.n == 1 else answer(
            "```json\n" + json.dumps(RECORD) + "\n```", 820, 40)

    with FakeGemini(respond) as fake:
        _, _, outcome, result = await extract_fields(tmp_path, "single-pass", models=models(fake))
    assert outcome is Outcome.ACK and fake.count() == 2
    assert result.extracted_fields == RECORD
    assert (result.input_tokens, result.output_tokens) == (1620, 45)


@pytest.mark.parametrize("strategy", ["single-pass", "agentic"])
async def test_without_an_api_key_the_strategy_is_unavailable_and_says_which_variable(
        tmp_path, strategy):
    _, _, outcome, result = await extract_fields(tmp_path, strategy)
    assert outcome is Outcome.ACK  # settled as failed: nothing to retry
    assert result.failure_reason == "strategy_unavailable"
    assert "DOCLAKE_GEMINI_API_KEY" in result.failure_message


async def test_a_long_document_is_cut_and_the_cut_is_on_the_ledger(tmp_path):
    with FakeGemini(lambda call: answer(json.dumps(RECORD))) as fake:
        harness = Harness(tmp_path, models=models(fake))
        delivery = Delivery(1, "doc", "job", "w", harness.sink)
        strategy = SinglePass(models_for(harness.ctx, "single-pass"), harness.sink,
                              call_site(delivery), max_chars=120)
        pages = [PageText(n, text) for n, text in enumerate(NDA, start=1)]
        await strategy.extract(pages, NdaFields)
    assert NDA[2] not in fake.calls[0].text and "not shown" in fake.calls[0].text
    (row,) = ledger(harness)
    total = document_text(pages, 10**6).total_chars
    assert row.detail == f"document text truncated: 120 of {total} characters sent"


def test_the_simulated_answer_follows_the_schema_it_is_given():
    schema = gemini_schema(NdaFields)
    records = [NdaFields.model_validate(structured_answer(schema, str(seed)))
               for seed in range(50)]
    assert {r.jurisdiction for r in records} == {"New York"}
    assert {r.term for r in records} == {"2 years"}
    assert all(r.effective_date and r.party == ["Nike, Inc."] for r in records)
    steps = [structured_answer(step_schema(NdaFields), str(seed)) for seed in range(30)]
    assert {s["action"] for s in steps} == {"page_count", "read_pages", "answer"}


@pytest.mark.parametrize("strategy", ["single-pass", "agentic"])
async def test_the_simulated_provider_serves_both_strategies_offline(tmp_path, strategy):
    quiet = ModelConfig(simulated_latency_scale=0.001, simulated_error_rate=0,
                        simulated_timeout_rate=0, simulated_blocked_rate=0,
                        simulated_empty_rate=0, simulated_seed=7)
    harness, _, outcome, result = await extract_fields(tmp_path, strategy, reader="simulated",
                                                      models=quiet)
    assert outcome is Outcome.ACK, result
    assert result.status == "succeeded"
    assert result.model_version.startswith("simulated:gemini-2.5-flash+")
    rows = ledger(harness)
    assert rows and {r.provider for r in rows} == {"simulated"}
    assert all(r.purpose == "extract_fields" and r.input_tokens > 0 for r in rows)


def test_run_with_single_pass_against_the_fake_server_fills_results_and_the_ledger(tmp_path):
    from support.pdfgen import make_pdf
    from test_fields_cli import FAST, runner, sql

    from infra.cli.main import app

    docs, home = tmp_path / "docs", str(tmp_path / "home")
    docs.mkdir()
    make_pdf(docs / "a.pdf", NDA)
    make_pdf(docs / "b.pdf", [*NDA, "Annex."])
    with FakeGemini(lambda call: answer(json.dumps(RECORD), prompt_tokens=1500,
                                        output_tokens=70)) as fake:
        env = {**FAST, "DOCLAKE_GEMINI_API_KEY": "dummy", "DOCLAKE_GEMINI_BASE_URL": fake.url}
        result = runner.invoke(app, ["run", str(docs), "--home", home, "--fields", "nda",
                                     "--strategy", "single-pass"], env=env,
                               catch_exceptions=False)
        assert result.exit_code == 0, result.output
    assert fake.count() == 2  # one call a document

    rows = sql(home, "SELECT status, strategy, split_part(model_version, '+', 1) AS model_version,"
               " jurisdiction, term, party, "
               "input_tokens, output_tokens FROM results ORDER BY document_id")
    assert rows == [{"status": "succeeded", "strategy": "single-pass",
                     "model_version": "gemini:gemini-2.5-flash", "jurisdiction": "Delaware",
                     "term": "2 years", "party": RECORD["party"], "input_tokens": 1500,
                     "output_tokens": 70}] * 2
    values = sql(home, "SELECT field, value, strategy, split_part(model_version, '+', 1) AS "
                 "model_version FROM result_fields "
                 "ORDER BY document_id, field, value_index")
    assert len(values) == 2 * 5
    assert {(v["strategy"], v["model_version"]) for v in values} == {
        ("single-pass", "gemini:gemini-2.5-flash")}
    calls = sql(home, "SELECT purpose, model, outcome, input_tokens, output_tokens, cost_usd "
                "FROM model_calls")
    assert len(calls) == 2 and {c["purpose"] for c in calls} == {"extract_fields"}
    cost = (1500 * IN_PRICE + 70 * OUT_PRICE) / 1e6
    assert all(c["cost_usd"] == pytest.approx(cost) for c in calls)
    (day,) = sql(home, "SELECT model_calls, cost_usd FROM daily_costs WHERE is_total")
    assert day["model_calls"] == 2 and day["cost_usd"] == pytest.approx(2 * cost)


async def test_a_provider_that_stays_down_releases_the_claim_for_a_later_delivery(tmp_path):
    from support.fake_gemini import error

    with FakeGemini(lambda call: error(503)) as fake:
        harness, doc, outcome, _ = await extract_fields_pending(tmp_path, models(fake))
    assert outcome is Outcome.RETRY
    assert fake.count("gemini-2.5-flash") >= 2 and fake.count("gemini-2.5-flash-lite") >= 2
    # released, not failed: the next delivery claims it again
    assert harness.store.get_field_claim(doc.job_id, "single-pass") is None
    rows = ledger(harness)
    assert {(r.purpose, r.outcome, r.http_status) for r in rows} == {
        ("extract_fields", "error", 503)}
    assert len(rows) == fake.count()


async def extract_fields_pending(tmp_path, config: ModelConfig):
    harness = Harness(tmp_path, models=config)
    doc = finished_job(harness, tmp_path / "docs", NDA)
    harness.store.request_fields([doc.job_id], "nda", "single-pass")
    send_fields_messages(harness.ctx)
    (message,) = fields_messages(harness)
    return harness, doc, await handle_message(harness.ctx, message), message


def test_the_version_changes_with_the_prompt_the_schema_and_the_code():
    """Finding 6: a prompt, schema description or code change is a new version."""
    from pydantic import BaseModel, Field

    from extract.fields.version import llm_version, rules_version

    class A(BaseModel):
        name: str | None = Field(None, description="The buyer.")

    class B(BaseModel):
        name: str | None = Field(None, description="The seller.")

    base = llm_version("gemini:m", "system", A, "code1")
    assert base.startswith("gemini:m+")
    assert len({base, llm_version("gemini:m", "system!", A, "code1"),
                llm_version("gemini:m", "system", B, "code1"),
                llm_version("gemini:m", "system", A, "code2")}) == 4
    assert llm_version("gemini:m", "system", A, "code1") == base  # stable
    assert rules_version("lr1", b"{}", "c") != rules_version("lr1", b"{ }", "c")
    assert rules_version("lr1", b"{}", "c") != rules_version("lr1", b"{}", "d")


async def test_single_pass_version_names_its_prompt_and_schema(tmp_path):
    from extract.fields.llm import single_pass

    with FakeGemini(lambda call: answer(json.dumps(RECORD))) as fake:
        _, _, _, first = await extract_fields(tmp_path / "a", "single-pass", models=models(fake))
    original = single_pass.SETTINGS
    single_pass.SETTINGS = dataclasses.replace(original, system=original.system + "\nBe brief.")
    try:
        with FakeGemini(lambda call: answer(json.dumps(RECORD))) as fake:
            _, _, _, second = await extract_fields(tmp_path / "b", "single-pass",
                                                   models=models(fake))
    finally:
        single_pass.SETTINGS = original
    assert first.model_version != second.model_version
    assert first.model_version.split("+")[0] == second.model_version.split("+")[0]
