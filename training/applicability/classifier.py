"""Fitting the NDA classifier and measuring it honestly (scikit-learn, training time only).

The data: the Kleister NDA train split (positives), the shared corpus's readable files (easy
negatives) and the written documents (``training.applicability.written``: hard negatives, and
NDA forms the benchmark has few of). A held-out set is kept apart before anything is fitted: a
fifth of the Kleister near-duplicate groups, of the corpus files and of the written families,
whole (by a hash of the group's name: supply, settlement and indemnification agreements and
employee confidentiality agreements, kinds of document the shipped model never sees; no refill
of a kind that is in training). Figures are reported for the real documents (Kleister, corpus)
apart from the written ones (``by_source``). The rest, the development set, is
cross-validated with grouped folds: a Kleister group or a written family (every merger
agreement, every offer letter...) is in one fold only, so each figure is on kinds of document
the fold's model never saw. The shipped model is fitted on the development set alone, so the
held-out figure is the shipped model's.

Honesty of features: a word or word pair is learnt only if at least ``MIN_DOCUMENTS`` real
documents (Kleister, corpus) and as many written ones use it, so nothing can tell a written
document from a real one (their templates' names, EDGAR's vocabulary) and the classifier learns
the kind, not the source.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from extract.fields.applicability.features import features
from extract.fields.applicability.model import KindModel
from training.applicability.written import written_documents

__all__ = ["REAL", "Figures", "KindExample", "by_source", "cross_validate", "fit",
           "load_examples", "measure"]

MIN_DOCUMENTS = 3
REGULARISATION = 1.0  # scikit-learn's C
HELD_OUT_PERCENT = 20
CORPUS_FOLDERS = ("pdf_text", "pdf_scanned")
MIN_CHARS = 200  # a corpus file with less text than this (a scan without a text layer) is left out


@dataclass(frozen=True)
class KindExample:
    name: str
    group: str
    is_nda: bool
    text: str
    source: str  # kleister | corpus | written


def _held_out(group: str) -> bool:
    return int(hashlib.sha256(group.encode()).hexdigest()[:8], 16) % 100 < HELD_OUT_PERCENT


def load_examples(split: Path, cache: Path | None, corpus: Path | None
                  ) -> tuple[list[KindExample], list[KindExample]]:
    """(development set, held-out set)."""
    from extract.fields.rules.duplicates import near_duplicate_groups
    from extract.fields.rules.kleister import load_split, pdf_pages

    kleister = [d for d in load_split(split, cache) if d.has_text]
    texts = ["\n\n".join(p.text for p in d.pages) for d in kleister]
    groups = near_duplicate_groups(texts)
    real = [KindExample(f"kleister/{d.name}", f"kleister:{g}", True, t, "kleister")
            for d, t, g in zip(kleister, texts, groups, strict=True)]
    for folder in CORPUS_FOLDERS if corpus is not None else ():
        for pdf in sorted((corpus / folder).glob("*.pdf")):
            text = "\n\n".join(pdf_pages(pdf, cache / "corpus" if cache else None))
            if len(text.strip()) >= MIN_CHARS:
                real.append(KindExample(f"corpus/{folder}/{pdf.name}", f"corpus:{pdf.name}",
                                        False, text, "corpus"))
    dev = [e for e in real if not _held_out(e.group)]
    held = [e for e in real if _held_out(e.group)]
    for w in written_documents(12, seed=0):
        example = KindExample(w.name, f"written:{w.family}", w.is_nda, w.text, "written")
        (held if _held_out(example.group) else dev).append(example)
    return dev, held


REAL = ("kleister", "corpus")


def by_source(examples: Sequence[KindExample], scores: Sequence[float], threshold: float
              ) -> dict[str, Figures]:
    """The figures on real documents (Kleister, the shared corpus) apart from the written
    ones: a classifier can do well on its own templates and still miss real documents."""
    out = {}
    for name, sources in (("real", REAL), ("written", ("written",))):
        kept = [(e, s) for e, s in zip(examples, scores, strict=True) if e.source in sources]
        if kept:
            out[name] = measure([e for e, _ in kept], [s for _, s in kept], threshold)
    return out


def _vocabulary(rows: Sequence[dict[str, float]], examples: Sequence[KindExample]) -> set[str]:
    real: dict[str, int] = {}
    written: dict[str, int] = {}
    for row, example in zip(rows, examples, strict=True):
        counts = written if example.source == "written" else real
        for name, value in row.items():
            if value:
                counts[name] = counts.get(name, 0) + 1
    return {name for name, n in real.items()
            if n >= MIN_DOCUMENTS and written.get(name, 0) >= MIN_DOCUMENTS} | {"title",
                                                                              "other_title"}


def fit(examples: Sequence[KindExample], *, c: float = REGULARISATION,
        rows: Sequence[dict[str, float]] | None = None) -> KindModel:
    """A logistic regression over the shared vocabulary, classes weighted to balance."""
    from sklearn.feature_extraction import DictVectorizer
    from sklearn.linear_model import LogisticRegression

    rows = rows if rows is not None else [features(e.text) for e in examples]
    vocabulary = _vocabulary(rows, examples)
    kept = [{k: v for k, v in row.items() if k in vocabulary} for row in rows]
    vectoriser = DictVectorizer()
    x = vectoriser.fit_transform(kept)
    classifier = LogisticRegression(C=c, max_iter=5000, class_weight="balanced")
    classifier.fit(x, [e.is_nda for e in examples])
    weights = {name: round(float(w), 5) for name, w in
               zip(vectoriser.get_feature_names_out(), classifier.coef_[0], strict=True)
               if abs(w) >= 1e-4}
    digest = hashlib.sha256("\n".join(sorted(
        f"{e.name} {hashlib.sha256(e.text.encode()).hexdigest()}" for e in examples)).encode()
    ).hexdigest()  # the documents and their texts: a changed writer is a new version
    return KindModel(f"kind-lr1-{len(examples)}docs-{digest[:8]}",
                     round(float(classifier.intercept_[0]), 5), weights)


def cross_validate(examples: Sequence[KindExample], *, folds: int = 5, seed: int = 0,
                   c: float = REGULARISATION) -> list[float]:
    """Out-of-fold scores in input order: no group is in two folds."""
    from extract.fields.rules.duplicates import fold_of_groups

    names = sorted({e.group for e in examples})
    number = {g: i for i, g in enumerate(names)}
    fold_of = fold_of_groups([number[e.group] for e in examples], folds, seed)
    rows = [features(e.text) for e in examples]
    scores = [0.0] * len(examples)
    for fold in range(folds):
        train = [i for i, f in enumerate(fold_of) if f != fold]
        model = fit([examples[i] for i in train], c=c, rows=[rows[i] for i in train])
        for i, f in enumerate(fold_of):
            if f == fold:
                scores[i] = model.score(examples[i].text)
    return scores


@dataclass(frozen=True)
class Figures:
    documents: int
    positives: int
    precision: float
    recall: float
    false_positives: tuple[str, ...]
    false_negatives: tuple[str, ...]

    def to_dict(self) -> dict:
        return {"documents": self.documents, "ndas": self.positives,
                "precision": self.precision, "recall": self.recall,
                "false_positives": list(self.false_positives),
                "false_negatives": list(self.false_negatives)}


def measure(examples: Sequence[KindExample], scores: Sequence[float],
            threshold: float) -> Figures:
    taken = [s >= threshold for s in scores]
    tp = sum(t and e.is_nda for t, e in zip(taken, examples, strict=True))
    fp = [e.name for t, e in zip(taken, examples, strict=True) if t and not e.is_nda]
    fn = [e.name for t, e in zip(taken, examples, strict=True) if not t and e.is_nda]
    positives = sum(e.is_nda for e in examples)
    return Figures(len(examples), positives, tp / (tp + len(fp)) if tp + len(fp) else 0.0,
                   tp / positives if positives else 0.0, tuple(fp), tuple(fn))
