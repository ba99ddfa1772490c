"""Fitting the rules model and cross-validating it on labelled documents.

scikit-learn is imported only here (training is a developer command, never the run-time path).
Labels come from gold ``key=value`` tokens: a candidate is positive when its Kleister token is
among the document's gold tokens. The result is deterministic for a given split and seed.

Honesty: a context word is learnt only if at least ``MIN_DOCUMENT_FREQUENCY`` training documents
use it in lower case (no names), suffix features come from a closed list (``features``), and
cross-validation keeps near-duplicate documents in one fold (``duplicates``).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from extract.fields.document import JoinedText
from extract.fields.rules.duplicates import fold_of_groups, near_duplicate_groups
from extract.fields.rules.kleister import KleisterDocument
from extract.fields.rules.linear import FieldModel, LinearModel
from extract.fields.rules.strategy import GENERATORS, Proposals, RulesStrategy, propose

__all__ = ["MIN_DOCUMENT_FREQUENCY", "SELECTION", "common_words", "cross_validate", "fit",
           "fit_model", "honest", "prepare_documents"]

# Per field: (decision threshold, most values, least values). Jurisdiction is always stated in
# an NDA, and so is a party. Chosen by grouped cross-validation (README: offline extractor).
SELECTION: dict[str, tuple[float, int, int]] = {
    "effective_date": (0.3, 1, 0), "jurisdiction": (0.0, 1, 1), "party": (0.2, 4, 1),
    "term": (0.4, 1, 0),
}
REGULARISATION = 0.3  # scikit-learn's C: smaller is simpler; chosen by cross-validation
# A context word becomes a feature only if this many training documents use it in lower case,
# as an ordinary word: a surname or a company's name never does, so no name is learnt.
MIN_DOCUMENT_FREQUENCY = 5
CONTEXT_PREFIXES = ("L:", "R:", "L1:", "R1:", "first_L:", "S:")
_LOWER_WORD = re.compile(r"\b[a-z]+\b")


@dataclass(frozen=True)
class _Prepared:
    """A document proposed once: folds reuse its candidates and features."""

    document: KleisterDocument
    joined: JoinedText
    proposals: Proposals


def prepare_documents(documents: Sequence[KleisterDocument]) -> list[_Prepared]:
    prepared = []
    for document in documents:
        joined = JoinedText.of(document.pages)
        prepared.append(_Prepared(document, joined, propose(joined.text)))
    return prepared


def common_words(texts: Sequence[str], least: int = MIN_DOCUMENT_FREQUENCY) -> set[str]:
    """Words written in lower case in at least ``least`` of ``texts``."""
    counts: dict[str, int] = {}
    for text in texts:
        for word in set(_LOWER_WORD.findall(text)):
            counts[word] = counts.get(word, 0) + 1
    return {word for word, count in counts.items() if count >= least}


def honest(features: dict[str, float], vocabulary: set[str]) -> dict[str, float]:
    """``features`` without context words outside ``vocabulary`` (punctuation is kept)."""
    kept = {}
    for name, value in features.items():
        if name.startswith(CONTEXT_PREFIXES):
            word = name.split(":", 1)[1]
            if word.isalpha() and word not in vocabulary:
                continue
        kept[name] = value
    return kept


def _examples(prepared: Sequence[_Prepared]):
    vocabulary = common_words([item.joined.text for item in prepared])
    rows: dict[str, tuple[list[dict[str, float]], list[int]]] = {f: ([], []) for f in GENERATORS}
    for item in prepared:
        gold = {t.upper() for t in item.document.gold}
        for name, (candidates, features) in item.proposals.items():
            rows[name][0].extend(honest(f, vocabulary) for f in features)
            rows[name][1].extend(int(f"{name}={c.key}".upper() in gold) for c in candidates)
    return rows


def fit(documents: Sequence[KleisterDocument], *, c: float = REGULARISATION,
        selection: dict[str, tuple[float, int, int]] | None = None) -> LinearModel:
    """A model trained on ``documents``; its version names the training set's content."""
    return fit_model(prepare_documents(documents), c=c, selection=selection)


def fit_model(prepared: Sequence[_Prepared], *, c: float,
         selection: dict[str, tuple[float, int, int]] | None) -> LinearModel:
    from sklearn.feature_extraction import DictVectorizer
    from sklearn.linear_model import LogisticRegression

    selection = selection or SELECTION
    names = sorted(p.document.name for p in prepared)
    digest = hashlib.sha256("\n".join(names).encode()).hexdigest()[:8]
    model = LinearModel(version=f"lr1-{len(names)}docs-{digest}")
    for name, (features, labels) in _examples(prepared).items():
        if len(set(labels)) < 2:
            continue
        vectoriser = DictVectorizer()
        x = vectoriser.fit_transform(features)
        classifier = LogisticRegression(C=c, max_iter=5000, solver="lbfgs")
        classifier.fit(x, labels)
        weights = {feature: round(float(w), 5) for feature, w in
                   zip(vectoriser.get_feature_names_out(), classifier.coef_[0], strict=True)
                   if abs(w) >= 1e-4}
        threshold, most, least = selection[name]
        model.fields[name] = FieldModel(weights, round(float(classifier.intercept_[0]), 5),
                                        threshold, most, least)
    return model


def cross_validate(documents: Sequence[KleisterDocument], *, folds: int = 5, seed: int = 0,
                   c: float = REGULARISATION,
                   selection: dict[str, tuple[float, int, int]] | None = None,
                   grouped: bool = True) -> list[list[str]]:
    """Out-of-fold predicted tokens, one list per document in input order: every document is
    predicted by a model that never saw it, nor (``grouped``) any near-duplicate of it."""
    import random

    prepared = prepare_documents(documents)
    if grouped:
        groups = near_duplicate_groups([p.joined.text for p in prepared])
        fold_of = fold_of_groups(groups, folds, seed)
    else:
        order = list(range(len(documents)))
        random.Random(seed).shuffle(order)
        fold_of = [0] * len(documents)
        for position, index in enumerate(order):
            fold_of[index] = position % folds
    predictions: list[list[str]] = [[] for _ in documents]
    for fold in range(folds):
        held_out = {i for i, f in enumerate(fold_of) if f == fold}
        model = fit_model([p for i, p in enumerate(prepared) if i not in held_out], c=c,
                     selection=selection)
        strategy = RulesStrategy(model)
        for i in held_out:
            extraction = strategy.decide(prepared[i].proposals, prepared[i].joined)
            predictions[i] = extraction.fields.kleister_tokens()
    return predictions
