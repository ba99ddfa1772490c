"""Confidence you can act on, evidence you can find: an LLM value whose quote does not state it
is flagged with a low confidence (the value itself is kept); every value's evidence is the
stored page text between its start and end offsets, for the LLMs and for the rules (white space
as stored, not collapsed); the rules' confidences go through the shipped calibration; the
reliability table and ECE are what their definitions say on hand-computed cases, and isotonic
calibration, fitted on other folds, lowers the ECE of systematically under-confident scores."""

from __future__ import annotations

import json
import random

import pytest
from support.fake_gemini import FakeGemini, answer
from test_fields_llm import NDA, RECORD, extract_fields, models

from extract.fields.base import PageText
from extract.fields.llm.prompts import DOUBTFUL_CONFIDENCE, Quote, locate_values
from extract.fields.rules.calibrating import Scored, calibrate, ece, reliability
from extract.fields.rules.calibration import Calibration, shipped_calibration
from extract.fields.rules.strategy import RulesStrategy
from extract.fields.schemas import NdaFields


async def test_an_llm_value_whose_quote_does_not_state_it_is_flagged_with_low_confidence(
        tmp_path):
    evidence = [
        {"field": "jurisdiction", "value_index": 0, "page": 2,
         "quote": "This Agreement is governed by the laws of the State of Delaware."},
        {"field": "term", "value_index": 0, "page": 3,
         "quote": "Signed: Acme Widgets, Inc."},  # a real quote that states no term
        {"field": "effective_date", "value_index": 0, "page": 1,
         "quote": "made as of March 3, 2015"},
    ]
    with FakeGemini(lambda call: answer(json.dumps({"fields": RECORD,
                                                    "evidence": evidence}))) as fake:
        _, _, _, result = await extract_fields(tmp_path, "single-pass", models=models(fake))
    rows = {(v.field, v.value_index): v for v in result.values}
    term = rows[("term", 0)]
    assert (term.flag, term.confidence) == ("evidence_lacks_value", DOUBTFUL_CONFIDENCE)
    assert term.value == "2 years"  # kept: the flag says why to doubt it
    for key in (("jurisdiction", 0), ("effective_date", 0)):
        assert (rows[key].flag, rows[key].confidence) == (None, None), rows[key]
    for row in result.values:  # the evidence is the stored text at its offsets
        assert NDA[row.page_number - 1][row.evidence_start:row.evidence_end] == row.evidence


def test_delaware_quoted_as_new_york_is_flagged():
    pages = [PageText(1, "Governing law. This Agreement is governed by the laws of the State "
                         "of New York. Acme is a Delaware corporation.")]
    record = NdaFields(jurisdiction="Delaware")
    (wrong,) = locate_values(record, pages, [Quote("jurisdiction", 0,
                                                   "governed by the laws of the State of New "
                                                   "York", 1)])
    assert wrong.flag == "evidence_lacks_value" and wrong.confidence == DOUBTFUL_CONFIDENCE
    assert "New York" in wrong.evidence
    (right,) = locate_values(record, pages, [Quote("jurisdiction", 0, "a Delaware corporation",
                                                   1)])
    assert right.flag is None and right.confidence is None


def test_rules_evidence_is_the_stored_text_at_its_offsets_white_space_and_all():
    pages = [PageText(1, "MUTUAL  NON-DISCLOSURE\nAGREEMENT made as of March 3, 2015 between "
                         "Acme Widgets, Inc.\tand Beta Labs LLC."),
             PageText(2, "This Agreement shall be governed by the laws\n of the  State of "
                         "Florida.\n\nIt remains in effect for two (2) years.")]
    extraction = RulesStrategy().run(pages)
    assert extraction.sources
    by_number = {p.number: p.text for p in pages}
    for source in extraction.sources:
        text = by_number[source.page_number]
        assert text[source.evidence_start:source.evidence_end] == source.evidence
        assert source.evidence_start <= source.char_offset < source.evidence_end
    law = extraction.source_of("jurisdiction")
    assert law.page_number == 2 and "laws\n of the  State of Florida" in law.evidence


def test_the_rules_confidence_is_the_shipped_calibration_of_the_models_probability():
    strategy = RulesStrategy()
    calibration = shipped_calibration(strategy.model.version)
    assert calibration is not None, "nda_calibration.json is fitted for the shipped model"
    pages = [PageText(n, text) for n, text in enumerate(NDA, start=1)]
    uncalibrated = RulesStrategy(strategy.model)
    raw = {}
    import extract.fields.rules.strategy as module

    original = module.shipped_calibration
    module.shipped_calibration = lambda version: None
    try:
        raw = {(s.field, s.value_index): s.confidence
               for s in uncalibrated.run(pages).sources}
    finally:
        module.shipped_calibration = original
    calibrated = {(s.field, s.value_index): s.confidence for s in strategy.run(pages).sources}
    assert set(raw) == set(calibrated)
    for key, probability in raw.items():
        assert calibrated[key] == pytest.approx(calibration.apply(key[0], probability))
    assert calibration.details["ece_after"] < calibration.details["ece_before"]


def test_a_calibration_for_another_model_is_not_applied():
    assert shipped_calibration("some-other-model") is None


def test_reliability_and_ece_by_hand():
    confidences = [0.05, 0.15, 0.15, 0.95, 0.95, 0.95, 0.95]
    rights = [False, True, False, True, True, True, False]
    rows = reliability(confidences, rights)
    assert [r["values"] for r in rows] == [1, 2, 0, 0, 0, 0, 0, 0, 0, 4]
    assert rows[1]["share_right"] == 0.5 and rows[9]["share_right"] == 0.75
    # |0 - 0.05| * 1/7 + |0.5 - 0.15| * 2/7 + |0.75 - 0.95| * 4/7
    assert ece(confidences, rights) == pytest.approx((0.05 + 0.7 + 0.8) / 7)
    interpolate = Calibration("m", {"party": ([0.2, 0.6], [0.1, 0.9])})
    assert interpolate.apply("party", 0.4) == pytest.approx(0.5)
    assert interpolate.apply("party", 0.0) == 0.1 and interpolate.apply("party", 1.0) == 0.9
    assert interpolate.apply("term", 0.33) == 0.33  # no curve: unchanged


def test_isotonic_calibration_fitted_on_other_folds_lowers_the_ece_of_underconfident_scores():
    rng = random.Random(7)
    pairs = []
    for i in range(2000):
        truth = rng.random()  # the real chance of being right
        pairs.append(Scored(i, i % 5, "party", truth / 2, rng.random() < truth))
    calibration = calibrate(pairs, expected=2000, model_version="m")
    assert calibration.details["ece_before"] > 0.2  # scores are half the real chance
    assert calibration.details["ece_after"] < 0.05
    assert calibration.apply("party", 0.25) == pytest.approx(0.5, abs=0.1)


def test_result_fields_offsets_point_into_the_stored_pages(tmp_path):
    """Through `doclake run` and the lake: each row's evidence is its stored page's text
    between evidence_start and evidence_end."""
    from support.pdfgen import make_pdf
    from test_fields_cli import FAST, runner
    from test_fields_confidence import NDA as PAGES

    from infra.cli.main import app
    from infra.evals_wiring import page_reader
    from infra.local.objectstore import FolderObjectStore

    docs, home = tmp_path / "docs", tmp_path / "home"
    docs.mkdir()
    make_pdf(docs / "nda.pdf", PAGES)
    ran = runner.invoke(app, ["run", str(docs), "--home", str(home), "--fields", "nda"],
                        env=FAST, catch_exceptions=False)
    assert ran.exit_code == 0, ran.output
    out = runner.invoke(app, ["sql", "SELECT document_id, job_id, page_number, evidence, "
                              "evidence_start, evidence_end, flag FROM result_fields", "--home",
                              str(home), "--format", "json"], env=FAST)
    rows = json.loads(out.output)
    assert rows and all(r["flag"] is None for r in rows)
    read = page_reader(FolderObjectStore(home / "objects"))
    for row in rows:
        pages = dict(read(row["document_id"], row["job_id"]))
        text = pages[row["page_number"]]
        assert text[row["evidence_start"]:row["evidence_end"]] == row["evidence"], row


def test_a_few_values_never_make_a_calibrated_confidence_of_zero_or_one():
    # 8 values: the lowest 3 wrong, the rest right. Isotonic regression alone maps the low
    # ones to 0 and the high ones to 1; with 8 values the bounds are 1/10 and 9/10.
    pairs = [Scored(i, i % 2, "term", p, p > 0.5)
             for i, p in enumerate([0.1, 0.2, 0.3, 0.6, 0.7, 0.8, 0.9, 0.95])]
    calibration = calibrate(pairs, expected=8, model_version="m")
    assert calibration.apply("term", 0.15) == pytest.approx(0.1)
    assert calibration.apply("term", 0.9) == pytest.approx(0.9)
