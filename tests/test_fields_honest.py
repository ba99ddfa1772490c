"""An honest rules model: no feature names a value (a closed list of legal suffixes; context
words only when many documents write them in lower case), and cross-validation that keeps
near-duplicate documents in one fold."""

from __future__ import annotations

import json
import re

from test_fields_rules import SPLIT, kleister, needs_kleister  # noqa: F401 (a fixture)

from extract.fields.document import JoinedText
from extract.fields.rules.candidates import Candidate
from extract.fields.rules.duplicates import fold_of_groups, near_duplicate_groups
from extract.fields.rules.features import LEGAL_SUFFIXES, featurise
from extract.fields.rules.shipped import MODEL_PATH
from extract.fields.rules.training import CONTEXT_PREFIXES, common_words, honest

SHIPPED = json.loads(MODEL_PATH.read_text())
FEATURES = {name for field in SHIPPED["fields"].values() for name in field["weights"]}


def test_a_persons_surname_is_never_a_feature():
    text = "This Agreement is made between Acme, Inc. and Zhou Hewes, an individual."
    start = text.index("Zhou")
    person = Candidate("party", "Zhou Hewes", "ZHOU_HEWES", [(start, start + 10)], {"person"})
    (features,) = featurise([person], text)
    assert not [name for name in features if "hewes" in name or "zhou" in name]
    assert features["suffix=other"] == 1.0
    # a context word that only a name spells is dropped by the document-frequency floor
    texts = ["made between Zhou and the company"] * 6
    assert honest({"L1:zhou": 1.0, "L:between": 1.0, "L1:(": 1.0, "LB:and_zhou": 1.0,
                   "LB:between_(": 1.0}, common_words(texts)) == {
        "L:between": 1.0, "L1:(": 1.0, "LB:between_(": 1.0}


def test_the_shipped_model_names_no_value():
    suffixes = {name.split("=", 1)[1] for name in FEATURES if name.startswith("suffix=")}
    assert suffixes <= LEGAL_SUFFIXES | {"other"}, suffixes - LEGAL_SUFFIXES
    assert not FEATURES & {"suffix=hewes", "suffix=pehlke", "L1:zhou"}


@needs_kleister
def test_no_context_word_of_the_shipped_model_is_a_party_name(kleister):  # noqa: F811
    texts = [JoinedText.of(d.pages).text for d in kleister]
    vocabulary = common_words(texts)
    words = {word for name in FEATURES if name.startswith(CONTEXT_PREFIXES)  # bigrams: each word
             for word in name.split(":", 1)[1].split("_")}
    learnt = {w for w in words if w.isalpha()}
    assert learnt <= vocabulary, sorted(learnt - vocabulary)[:20]
    # the words only a gold party's name spells (never written in lower case in 5 documents)
    name_words = {w.lower() for d in kleister for token in d.gold if token.startswith("party=")
                  for w in re.findall(r"[A-Za-z]+", token.split("=", 1)[1])}
    assert not learnt & (name_words - vocabulary)


def test_near_duplicates_share_a_group_and_a_fold():
    form = ("The Recipient shall hold the Confidential Information in strict confidence and "
            "shall not disclose it to any third party without the prior written consent of the "
            "Discloser. This Agreement is governed by the laws of the State of {state}. "
            "Agreed by {name} on the date first written above. ") * 8
    texts = [form.format(state="Ohio", name="Acme Inc."),
             "A lease of office space for twelve months at a monthly rent payable in advance, "
             "with a deposit held by the landlord until the premises are returned. " * 8,
             form.format(state="Texas", name="Beta LLC"),
             "Minutes of the board meeting: the directors approved the budget and elected "
             "officers for the coming year, then adjourned. " * 8]
    groups = near_duplicate_groups(texts)
    assert groups[0] == groups[2] and len(set(groups)) == 3
    for seed in range(5):
        folds = fold_of_groups(groups, folds=2, seed=seed)
        assert folds[0] == folds[2]
        assert sorted(folds) == [0, 0, 1, 1] or len(set(folds)) == 2


@needs_kleister
def test_grouped_cross_validation_never_tests_on_a_near_copy_of_its_training(kleister):  # noqa: F811
    texts = [JoinedText.of(d.pages).text for d in kleister]
    groups = near_duplicate_groups(texts)
    folds = fold_of_groups(groups, folds=5, seed=0)
    assert len(set(groups)) < len(kleister)  # the split has near-duplicate forms
    for group in set(groups):
        assert len({f for g, f in zip(groups, folds, strict=True) if g == group}) == 1
    assert max(folds.count(f) for f in range(5)) - min(folds.count(f) for f in range(5)) <= 3

