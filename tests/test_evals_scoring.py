"""Scoring rules by hand-computed cases: the metric's semantics, token outcomes, which results
meet which label (live traffic), bootstrap intervals and paired comparisons."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from evals.bootstrap import compare, group_figures
from evals.scoring import Label, Result, score_all, score_pair, select

T0 = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def label(doc: str = "d1", minutes: float = 10, fmt: str = "text", **values) -> Label:
    return Label(doc, f"L-{doc}-{minutes}", "ann", at(minutes),
                 {k: tuple(v) for k, v in values.items()}, fmt)


def result(doc: str = "d1", minutes: float = 5, version: str = "v1", strategy: str = "rules",
           job: str | None = None, status: str = "succeeded", **values) -> Result:
    return Result(doc, job or f"J-{doc}-{minutes}-{version}", strategy, version, at(minutes),
                  status, None, {k: tuple((v, 1) for v in vs) for k, vs in values.items()})


def figures(scored):
    return {name: (s.hits, s.predicted, s.expected) for name, s in scored.fields.items()}


def test_multiple_parties_one_wrong():
    scored = score_pair(label(party=["Acme Inc.", "Beta LLC", "Gamma"]),
                        result(party=["Acme Inc.", "Beta LLC", "Delta"]))
    s = scored.fields["party"]
    assert (s.hits, s.predicted, s.expected) == (2, 3, 3)
    assert s.precision == s.recall == s.f1 == pytest.approx(2 / 3)
    kinds = [(o.outcome, o.expected, o.got) for o in scored.outcomes]
    assert kinds == [("hit", "Acme Inc.", "Acme Inc."), ("hit", "Beta LLC", "Beta LLC"),
                     ("wrong", "Gamma", "Delta")]


def test_empty_gold_and_empty_prediction_score_one():
    s = score_pair(label(term=[]), result()).fields["term"]
    assert (s.hits, s.predicted, s.expected) == (0, 0, 0)
    assert s.precision == s.recall == s.f1 == 1.0


def test_empty_gold_with_a_prediction_is_spurious():
    scored = score_pair(label(term=[]), result(term=["2 years"]))
    s = scored.fields["term"]
    assert (s.precision, s.recall, s.f1) == (0.0, 1.0, 0.0)
    assert [o.outcome for o in scored.outcomes] == ["spurious"]


def test_empty_prediction_with_gold_is_missed():
    scored = score_pair(label(term=["2 years"]), result())
    s = scored.fields["term"]
    assert (s.precision, s.recall, s.f1) == (1.0, 0.0, 0.0)
    assert [(o.outcome, o.expected, o.got) for o in scored.outcomes] == [
        ("missed", "2 years", None)]


def test_a_failed_result_is_an_empty_prediction():
    s = score_pair(label(term=["2 years"]), result(status="failed", term=["2 years"]))
    assert (s.fields["term"].hits, s.fields["term"].predicted) == (0, 0)


def test_each_gold_token_matches_once():
    twice_predicted = score_pair(label(party=["Acme"]), result(party=["Acme", "Acme"]))
    assert figures(twice_predicted) == {"party": (1, 2, 1)}
    assert twice_predicted.fields["party"].f1 == pytest.approx(2 / 3)
    twice_gold = score_pair(label(party=["Acme", "Acme"]), result(party=["Acme"]))
    assert figures(twice_gold) == {"party": (1, 1, 2)}


def test_case_and_spacing_do_not_matter_but_spelling_does():
    scored = score_pair(label(jurisdiction=["new  york"], party=["Acme Corp"]),
                        result(jurisdiction=["New York"], party=["Acme Corp."]))
    assert figures(scored) == {"jurisdiction": (1, 1, 1), "party": (0, 1, 1)}


def test_kleister_labels_are_tokens_already_and_predictions_are_normalised():
    kleister = lambda field, value: value.replace(",", "").replace(" ", "_")  # noqa: E731
    scored = score_pair(label(fmt="kleister", party=["Nike_Inc."]),
                        result(party=["Nike, Inc."]), kleister)
    assert figures(scored) == {"party": (1, 1, 1)}


def test_fields_the_label_does_not_cover_are_not_scored():
    scored = score_pair(label(party=["Acme"]), result(party=["Acme"], term=["2 years"]))
    assert figures(scored) == {"party": (1, 1, 1)}


def test_micro_average_over_documents_and_fields():
    labels = [label("d1", party=["A", "B", "C"], term=[]), label("d2", party=[], term=["1 year"])]
    results = [result("d1", party=["A", "B", "X"]), result("d2")]
    (group,) = group_figures(score_all(labels, results), resamples=0)
    s = group.overall.score
    assert (s.hits, s.predicted, s.expected) == (2, 3, 4)
    assert s.precision == pytest.approx(2 / 3) and s.recall == pytest.approx(0.5)
    assert s.f1 == pytest.approx(4 / 7)
    assert group.overall.documents == 2


# --- live traffic: which results meet which label ------------------------------------------------


def test_the_result_seen_when_labelling_and_a_later_model_are_separate_rows():
    old, new = result(minutes=5, version="v1"), result(minutes=20, version="v2")
    pairs = select([label(minutes=10, party=["A"])], [new, old])
    assert [(r.model_version, had, latest) for _, r, had, latest in pairs] == [
        ("v1", True, True), ("v2", False, True)]


def test_a_rerun_of_the_same_model_replaces_it_in_the_group_but_the_labelled_one_is_kept():
    first, rerun = result(minutes=5, job="j1"), result(minutes=15, job="j2")
    pairs = select([label(minutes=10, party=["A"])], [first, rerun])
    assert [(r.job_id, had, latest) for _, r, had, latest in pairs] == [
        ("j1", True, False), ("j2", False, True)]


def test_the_window_drops_results_published_before_it():
    old, new = result(minutes=5, version="v1"), result(minutes=20, version="v2")
    pairs = select([label(minutes=10, party=["A"])], [old, new], since=at(12))
    assert [(r.model_version, had) for _, r, had, _ in pairs] == [("v2", False)]


def test_a_document_without_a_label_is_not_scored():
    assert select([label("d1", party=["A"])], [result("d2", party=["A"])]) == []


# --- intervals and comparisons ---------------------------------------------------------------------


def _two_models(n: int = 30):
    labels, results = [], []
    for i in range(n):
        doc = f"d{i:02d}"
        labels.append(label(doc, party=["A", "B"]))
        results.append(result(doc, minutes=5, version="v1", party=["A"] if i % 3 else ["X"]))
        results.append(result(doc, minutes=20, version="v2", party=["A", "B"] if i % 2 else ["A"]))
    return score_all(labels, results)


def test_bootstrap_intervals_are_reproducible_from_the_seed():
    """(Their values are checked against scipy in tests/test_evals_statistics.py.)"""
    scored = _two_models()
    first = group_figures(scored, resamples=300, seed=1)
    again = group_figures(scored, resamples=300, seed=1)
    other = group_figures(scored, resamples=300, seed=2)
    assert [g.overall.f1_ci for g in first] == [g.overall.f1_ci for g in again]
    assert [g.overall.f1_ci for g in first] != [g.overall.f1_ci for g in other]


def test_comparison_is_b_minus_a_on_the_same_documents():
    scored = _two_models()
    c = compare(scored, ("v1", "rules"), ("v2", "rules"), resamples=300)
    # v1: 20 docs hit A (1/1 predicted), 10 predict X: hits 20, predicted 30, expected 60
    # v2: 15 docs A,B + 15 docs A: hits 45, predicted 45, expected 60
    assert c.documents == 30
    assert c.f1_a == pytest.approx(2 * (20 / 30) * (20 / 60) / (20 / 30 + 20 / 60))
    assert c.f1_b == pytest.approx(2 * 1.0 * 0.75 / 1.75)
    assert c.difference == pytest.approx(c.f1_b - c.f1_a)
    assert c.difference_ci[0] > 0  # v2 is better on every resample that matters
