"""The Kleister metric against hand-computed cases: micro averages, multiset matching, case and
the empty-set conventions."""

from __future__ import annotations

import pytest

from evals.kleister_metric import Score, score, score_document


def test_perfect_prediction_with_several_parties():
    gold = ["effective_date=2001-04-18", "party=Nike_Inc.", "party=Eric_Dean_Sprunk"]
    report = score([list(reversed(gold))], [gold])
    assert (report.overall.precision, report.overall.recall, report.overall.f1) == (1.0, 1.0, 1.0)
    assert report.fields["party"] == Score(hits=2, predicted=2, expected=2)


def test_one_party_of_two_found_plus_a_wrong_one():
    # gold 2 parties; predicted 1 right + 1 wrong: P = 1/2, R = 1/2
    report = score([["party=Nike_Inc.", "party=Adidas_AG"]], [["party=Nike_Inc.", "party=Eric_Sprunk"]])
    assert report.fields["party"] == Score(hits=1, predicted=2, expected=2)
    assert report.overall.f1 == pytest.approx(0.5)


def test_micro_average_sums_counts_across_documents_before_dividing():
    # doc 1: 1 hit of 1 predicted, 1 gold; doc 2: 0 hits of 3 predicted, 1 gold.
    # micro: P = 1/4, R = 1/2, F1 = 2 * .25 * .5 / .75 = 1/3 (a macro average would give 0.5)
    predictions = [["term=2_years"], ["term=1_year", "jurisdiction=Ohio", "party=X"]]
    gold = [["term=2_years"], ["term=3_years"]]
    report = score(predictions, gold)
    assert report.overall.precision == pytest.approx(0.25)
    assert report.overall.recall == pytest.approx(0.5)
    assert report.overall.f1 == pytest.approx(1 / 3)
    assert report.fields["term"] == Score(hits=1, predicted=2, expected=2)
    assert report.fields["jurisdiction"] == Score(hits=0, predicted=1, expected=0)


def test_case_is_ignored():
    report = score([["JURISDICTION=new_york"]], [["jurisdiction=New_York"]])
    assert report.overall.f1 == 1.0


def test_each_gold_token_is_matched_at_most_once():
    # the same party predicted twice matches the single gold one once: P = 1/2, R = 1
    counts = score_document(["party=Nike_Inc.", "party=NIKE_INC."], ["party=Nike_Inc."])
    assert counts["PARTY"] == Score(hits=1, predicted=2, expected=1)
    # and a gold token listed twice needs two predictions to be fully recalled
    counts = score_document(["party=A"], ["party=A", "party=A"])
    assert counts["PARTY"] == Score(hits=1, predicted=1, expected=2)


def test_empty_gold_and_empty_prediction_score_one():
    report = score([[]], [[]])
    assert (report.overall.precision, report.overall.recall, report.overall.f1) == (1.0, 1.0, 1.0)


def test_empty_prediction_has_precision_one_and_recall_zero():
    report = score([[]], [["term=2_years", "party=A"]])
    assert report.overall.precision == 1.0
    assert report.overall.recall == 0.0
    assert report.overall.f1 == 0.0


def test_prediction_where_gold_is_empty_has_recall_one_and_precision_zero():
    report = score([["effective_date=2020-01-01"]], [[]])
    assert (report.overall.precision, report.overall.recall) == (0.0, 1.0)


def test_named_fields_are_reported_even_when_absent():
    report = score([["party=A"]], [["party=A"]], fields=["term", "party"])
    assert report.fields["term"] == Score()
    assert report.fields["term"].f1 == 1.0
    assert set(report.to_dict()["fields"]) == {"party", "term"}


def test_misaligned_inputs_are_refused():
    with pytest.raises(ValueError, match="2 predictions for 1"):
        score([[], []], [[]])
