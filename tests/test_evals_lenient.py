"""Strict and lenient F1 per field: a spelling slip counts under the strict rule and not under
the lenient one, a wrong name under both; dates and terms compare exactly after normalisation.
Expected figures by hand."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from evals.lenient import lenient_key, lenient_scores, rule_of
from evals.scoring import Label, Result, score_all

AT = datetime(2026, 5, 4, tzinfo=UTC)


def test_spelling_is_forgiven_by_the_lenient_rule_and_a_wrong_name_is_not():
    """Gold: Nike, Inc. and Acme Corp, 2 years, 2015-03-03. Predicted: NIKE INC (a spelling
    of the first), Beta LLC (wrong), 2 years, 2015-03-04 (wrong). Strict party: 0 hits of 2
    and 2: F1 0; lenient: 1 hit: 2*1/(2+2) = 0.5. Term 1/1 and date 0/1 under both."""
    label = Label("d1", "l1", "ann", AT, {"party": ("Nike, Inc.", "Acme Corp"),
                                         "term": ("2 years",),
                                         "effective_date": ("2015-03-03",)})
    result = Result("d1", "j1", "rules", "v1", AT, values={
        "party": (("NIKE INC", 1), ("Beta LLC", 1)), "term": (("2 years", 2),),
        "effective_date": (("2015-03-04", 1),)})
    (row,) = score_all([label], [result])
    assert row.fields["party"].hits == 0
    loose = lenient_scores([row])[("v1", "rules")]
    assert (loose["party"].hits, loose["party"].f1) == (1, pytest.approx(0.5))
    assert (loose["term"].hits, loose["effective_date"].hits) == (1, 0)


def test_the_stated_normalisation():
    assert lenient_key("party", "Leonard Green & Partners, L.P.") == lenient_key(
        "party", "Leonard_Green_and_Partners_LP") == "leonardgreenandpartners"
    assert lenient_key("party", "RedPrairie Holding, Inc.") == lenient_key(
        "party", "Redprairie Holding Inc") == "redprairieholding"
    assert lenient_key("party", "Acme Co") != lenient_key("party", "Acme Bank")
    assert lenient_key("jurisdiction", "New York") == lenient_key("jurisdiction", "NEW-YORK")
    assert lenient_key("effective_date", "2015-03-03") != lenient_key("effective_date",
                                                                      "2015-03-30")
    assert "corporate suffix" in rule_of("party").lenient
    assert "same as strict" in rule_of("effective_date").lenient
