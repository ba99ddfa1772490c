"""The learnt ranker beside the rules: a candidate judged against the document's others, the
held-out part kept out of every choice, AUROC as scipy computes it, and ``fields cv`` finding its
data from the installation rather than the current folder."""

from __future__ import annotations

import math
import random

import pytest

from extract.fields.rules.calibrating import auroc
from extract.fields.rules.candidates import Candidate
from extract.fields.rules.linear import FieldModel, LinearModel


def _party(name: str, kind: str) -> Candidate:
    return Candidate("party", name, name.upper().replace(" ", "_"), [(0, len(name))], {kind})


def test_the_ranker_judges_a_candidate_against_the_documents_others():
    # first stage: the feature "x" scores; second stage: only being ranked first counts
    model = FieldModel({"x": 1.0}, 0.0, ranker={"rank=0": 4.0}, ranker_intercept=-2.0)
    a, b = _party("Acme Inc.", "company"), _party("Beta LLC", "company")
    alone = model.probabilities([b], [{"x": 1.0}])
    assert alone == pytest.approx([1 / (1 + math.exp(-2.0))])  # b is first among one
    both = model.probabilities([a, b], [{"x": 3.0}, {"x": 1.0}])
    assert both == pytest.approx([1 / (1 + math.exp(-2.0)), 1 / (1 + math.exp(2.0))])
    # without a ranker a candidate is scored on its own, whatever the others
    plain = FieldModel({"x": 1.0}, 0.0)
    assert plain.probabilities([a, b], [{"x": 3.0}, {"x": 1.0}])[1] == pytest.approx(
        1 / (1 + math.exp(-1.0)))


def test_the_ranker_survives_the_json_it_ships_as():
    model = LinearModel("v", {"party": FieldModel({"x": 0.5}, -1.0, 0.25, 4, 1,
                                                  {"rank=0": 2.0, "kind_gap": 0.3}, -0.7)})
    again = LinearModel.from_json(model.to_json())
    assert again.fields["party"].ranker == {"kind_gap": 0.3, "rank=0": 2.0}
    assert again.fields["party"].ranker_intercept == -0.7
    assert again.to_json() == model.to_json()


def test_auroc_is_the_mann_whitney_statistic_scipy_computes():
    scipy_stats = pytest.importorskip("scipy.stats")
    rng = random.Random(7)
    for _ in range(20):
        n = rng.randint(2, 60)
        confidences = [round(rng.random(), 1) for _ in range(n)]  # rounded: ties happen
        rights = [rng.random() < 0.6 for _ in range(n)]
        right = [c for c, r in zip(confidences, rights, strict=True) if r]
        wrong = [c for c, r in zip(confidences, rights, strict=True) if not r]
        if not right or not wrong:
            assert auroc(confidences, rights) is None
            continue
        u = scipy_stats.mannwhitneyu(right, wrong).statistic
        assert auroc(confidences, rights) == pytest.approx(u / (len(right) * len(wrong)))
    assert auroc([0.9, 0.8, 0.1], [True, True, False]) == 1.0
    assert auroc([0.1, 0.8, 0.9], [True, False, False]) == 0.0


def _document(name: str, text: str):
    from extract.fields.base import PageText
    from extract.fields.rules.kleister import KleisterDocument

    return KleisterDocument(name, (PageText(1, text),), ())


def test_the_held_out_part_is_whole_groups_a_fifth_and_always_the_same():
    pytest.importorskip("datasketch", reason="the `train` extra")
    from extract.fields.rules.training import held_out_split

    rng = random.Random(3)
    words = [f"w{i}" for i in range(3000)]
    forms = [" ".join(rng.choices(words, k=400)) for _ in range(6)]
    documents = []
    for n in range(40):  # six forms filed three times each, and 22 documents of their own
        text = forms[n % 6] + f" signed by party{n}" if n < 18 else " ".join(rng.choices(words, k=400))
        documents.append(_document(f"d{n}", text))
    development, held_out = held_out_split(documents)
    assert sorted(development + held_out) == list(range(40))
    assert 6 <= len(held_out) <= 10
    for form in range(6):
        copies = {n in held_out for n in range(18) if n % 6 == form}
        assert len(copies) == 1, f"form {form} split across the parts"
    assert held_out_split(documents) == (development, held_out)


def test_fields_cv_finds_the_split_from_the_installation_not_the_current_folder(
        tmp_path, monkeypatch):
    from infra.cli import fields

    beside = fields._installation_folders()
    found = [f / "shared" / fields.SPLIT for f in beside if (f / "shared" / fields.SPLIT).is_dir()]
    if not found:
        pytest.skip("no shared/ Kleister split beside this checkout")
    monkeypatch.delenv("DOCLAKE_SHARED_DIR", raising=False)
    monkeypatch.chdir(tmp_path)  # a folder with no shared/ above it
    assert fields._split(None) == found[0]
    monkeypatch.setenv("DOCLAKE_SHARED_DIR", str(tmp_path))
    assert fields._split(None) == tmp_path / fields.SPLIT  # the variable comes first
    assert fields._split(tmp_path / "mine") == tmp_path / "mine"  # and --data before it


def test_the_term_threshold_is_half_the_best_f1_its_training_documents_reach():
    pytest.importorskip("sklearn", reason="scikit-learn is a dev dependency")
    from extract.fields.rules.training import chosen_threshold

    # five documents' best candidates, four gold values among the documents. Taking the top
    # k: k=1 -> 2*1/(1+4)=0.4, k=2 -> 2*2/(2+4)=0.667, k=3 -> 2*2/7=0.571, k=4 -> 2*3/8=0.75,
    # k=5 -> 2*3/9=0.667: the best F1 is 0.75, the threshold 0.375.
    best = [(0.9, True), (0.8, True), (0.6, False), (0.3, True), (0.1, False)]
    assert chosen_threshold(best, 4) == pytest.approx(0.375)
    assert chosen_threshold(list(reversed(best)), 4) == pytest.approx(0.375)  # order-free
    assert chosen_threshold([(0.7, False)], 2) == 1.0  # nothing right: nothing emitted
