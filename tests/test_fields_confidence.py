"""Each value's confidence and evidence, as a user reads them: ``doclake run`` with the offline
rules fills ``result_fields.confidence`` and ``evidence`` (the mention that decided the value, not
the first one), the published JSON carries them, and ``DOCLAKE_FIELDS_MIN_CONFIDENCE`` keeps
values below it out of the result."""

from __future__ import annotations

import json

from support.pdfgen import make_pdf
from test_fields_cli import FAST, runner

from extract.fields.base import PageText
from extract.fields.rules.strategy import RulesStrategy
from infra.cli.main import app

# 'Florida' is first named as where a company is incorporated, then in the governing-law clause.
NDA = ["MUTUAL NON-DISCLOSURE AGREEMENT made as of March 3, 2015",  # one short line a page
       "between Acme Widgets, Inc., a Florida corporation, and",
       "Beta Labs LLC, a Delaware limited liability company.",
       "This Agreement shall be governed by the laws of the State of Florida.",
       "This Agreement shall remain in effect for two (2) years."]


def run(home: str, docs, **env: str):
    result = runner.invoke(app, ["run", str(docs), "--home", home, "--fields", "nda"],
                           env={**FAST, **env}, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    out = runner.invoke(app, ["sql", "SELECT field, value, value_index, confidence, evidence, "
                              "page_number, char_offset FROM result_fields ORDER BY field, "
                              "value_index", "--home", home, "--format", "json"], env=FAST)
    return json.loads(out.output)


def test_rules_values_carry_a_confidence_and_the_mention_that_decided_them(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    make_pdf(docs / "nda.pdf", NDA)
    rows = run(str(tmp_path / "home"), docs)
    by_field = {(r["field"], r["value_index"]): r for r in rows}
    assert rows and all(0 < r["confidence"] <= 1 and r["evidence"] for r in rows)
    law = by_field[("jurisdiction", 0)]
    assert law["value"] == "Florida"
    assert "laws of the State of Florida" in law["evidence"], law  # not 'a Florida corporation'
    assert law["page_number"] == 4
    (published,) = [json.loads(p.read_text()) for p in (tmp_path / "home").rglob("results/*.json")]
    assert {(v["field"], v["value"]) for v in published["values"]} == {
        (r["field"], r["value"]) for r in rows}
    assert all(v["confidence"] is not None for v in published["values"])

    # the same document with a confidence floor above some values: those are not reported
    floor = sorted(r["confidence"] for r in rows)[len(rows) // 2]
    kept = run(str(tmp_path / "home2"), docs, DOCLAKE_FIELDS_MIN_CONFIDENCE=str(floor))
    assert kept and len(kept) < len(rows)
    assert all(r["confidence"] >= floor for r in kept)


def test_the_deciding_mention_is_the_best_scoring_one_not_the_first():
    pages = [PageText(n, text) for n, text in enumerate(NDA, start=1)]
    extraction = RulesStrategy().run(pages)
    source = extraction.source_of("jurisdiction")
    assert extraction.fields.jurisdiction == "Florida"
    assert (source.page_number, source.char_offset) == (4, NDA[3].index("Florida"))
    assert source.confidence is not None and 0 < source.confidence <= 1
