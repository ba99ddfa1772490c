"""Agreement between two reviewers: Cohen's kappa per field, over the documents both labelled.

A second reviewer's labels measure how hard the task is (and how far to trust the first
reviewer); importing them as new label versions would silently replace the first answer with
the second. Here each (document, field) is one item and its category is the set of values the
reviewer gave (as tokens: the scorer's normalisation, order ignored, so "Nike, Inc." and
"Nike_Inc." agree). Cohen's kappa = (p_o - p_e) / (1 - p_e), with p_o the share of items on
which they agree and p_e the agreement expected from each reviewer's own category frequencies.
When p_e is 1 (both reviewers gave one and the same category to every item) kappa is 0/0:
undefined, reported as such (None), not as perfect agreement: nothing varied, so nothing was
tested.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from evals.scoring import Label, Normalizer, plain_value

__all__ = ["FieldAgreement", "agreement", "cohen_kappa"]


@dataclass(frozen=True)
class FieldAgreement:
    field: str
    documents: int
    observed: float
    kappa: float | None
    disagreements: tuple[str, ...]

    def to_dict(self) -> dict:
        return {"field": self.field, "documents": self.documents, "observed": self.observed,
                "kappa": self.kappa, "disagreements": list(self.disagreements)}


def cohen_kappa(first: Sequence, second: Sequence) -> float | None:
    """Cohen's kappa of two equally long sequences of nominal categories; None when it is
    undefined (no items, or chance agreement of 1)."""
    n = len(first)
    if n == 0 or n != len(second):
        return None
    observed = sum(a == b for a, b in zip(first, second, strict=True)) / n
    c1, c2 = Counter(first), Counter(second)
    expected = sum(c1[c] * c2[c] for c in c1) / (n * n)
    if expected == 1.0:
        return None
    return (observed - expected) / (1 - expected)


def _category(label: Label, name: str, normalize: Normalizer) -> tuple[str, ...]:
    values = label.values.get(name, ())
    tokens = [v if label.value_format == "kleister" else normalize(name, v) for v in values]
    return tuple(sorted(t.upper() for t in tokens))


def agreement(first: Sequence[Label], second: Sequence[Label],
              normalizer_for: Callable[[str], Normalizer] | None = None
              ) -> list[FieldAgreement]:
    """Per field both reviewers covered, over the documents both labelled."""
    by_document: Mapping[str, Label] = {label.document_id: label for label in first}
    pairs = [(by_document[b.document_id], b) for b in second if b.document_id in by_document]
    names = sorted({n for a, b in pairs for n in set(a.values) & set(b.values)})
    out = []
    for name in names:
        items = [(a, b) for a, b in pairs if name in a.values and name in b.values]
        norm = [(normalizer_for or (lambda _: plain_value))(a.document_id) for a, _ in items]
        ca = [_category(a, name, f) for (a, _), f in zip(items, norm, strict=True)]
        cb = [_category(b, name, f) for (_, b), f in zip(items, norm, strict=True)]
        agree = [x == y for x, y in zip(ca, cb, strict=True)]
        out.append(FieldAgreement(name, len(items), sum(agree) / len(items),
                                  cohen_kappa(ca, cb),
                                  tuple(a.document_id for (a, _), ok in zip(items, agree,
                                                                            strict=True)
                                        if not ok)))
    return out


def review_agreement(lake_uri: str, path, file_format: str, *, labeller: str,
                     normalizers: Mapping[str, Normalizer] | None = None
                     ) -> tuple[list[FieldAgreement], int, int]:
    """A second reviewer's label file against the current labels in the lake; nothing is
    written. Returns (per-field agreement, documents compared, labels that matched no
    labelled document)."""
    from evals.label_files import parse_labels
    from evals.labels import DocumentIndex
    from evals.lakeio import read_current_versions, read_documents, read_labels, read_results
    from evals.scoring import split_stale

    index = DocumentIndex.from_rows(read_documents(lake_uri))
    current, _ = split_stale(read_labels(lake_uri), read_current_versions(lake_uri))
    labelled = {label.document_id for label in current}
    second, unmatched = [], 0
    for item in parse_labels(path, file_format):
        document_id, _ = index.resolve(item)
        if document_id is None or document_id not in labelled:
            unmatched += 1
            continue
        second.append(Label(document_id, "review", item.labeller or labeller,
                            item.labelled_at or current[0].labelled_at, item.values,
                            item.value_format))
    schema_of = {r.document_id: r.schema_name or "" for r in sorted(
        read_results(lake_uri, [x.document_id for x in second]), key=lambda r: r.published_at)}
    table = normalizers or {}
    found = agreement(current, second,
                      lambda d: table.get(schema_of.get(d, ""), plain_value))
    return found, len(second), unmatched
