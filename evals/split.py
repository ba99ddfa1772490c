"""Train, validation or test for a fine-tuning set, on a group that no near-duplicate crosses.

Hashing each example's text is not enough: two versions of one contract, or two NDAs from the same
template, differ by a few words, hash apart and land on both sides (the Kleister train split has
14 pairs above an estimated Jaccard of 0.5, one at 0.97), and a document changes side when the
text limit or the reader changes. So the unit is a group: documents are joined when they are the
same document id or near-duplicates (the grouping the rules' cross-validation uses: MinHash over
word shingles of the whole text, ``datasketch``'s LSH at ``THRESHOLD``), and a group's side is
decided by the hash of its smallest document id, which no limit or reader changes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from extract.fields.rules import duplicates

__all__ = ["SPLITS", "THRESHOLD", "near_duplicate_groups", "side_of"]

SPLITS = ("train", "validation", "test")

THRESHOLD = duplicates.JACCARD  # one notion of "the same form" for fine-tuning and for rules


def near_duplicate_groups(texts: Mapping[str, str], threshold: float = THRESHOLD
                          ) -> dict[str, str]:
    """document id -> its group's key (the smallest document id of its near-duplicate cluster).

    The grouping is the rules' own (``extract.fields.rules.duplicates``), so a pair counted as
    one form when rules are cross-validated is one form in a fine-tuning split too."""
    ids = sorted(texts)
    numbers = duplicates.near_duplicate_groups([texts[d] for d in ids], threshold)
    smallest: dict[int, str] = {}
    for document_id, number in zip(ids, numbers, strict=True):
        smallest.setdefault(number, document_id)  # ids are sorted: the first is the smallest
    return {d: smallest[n] for d, n in zip(ids, numbers, strict=True)}


def side_of(group_key: str, validation_percent: int, test_percent: int = 0) -> str:
    """train, validation or test from the group key alone: stable across runs, limits and
    readers. The bucket is ``int(sha256(key)[:8], 16) % 100``: validation below
    ``validation_percent``, test in the next ``test_percent``, train above (so adding a test
    split moves no group between validation and train's other side)."""
    digest = hashlib.sha256(group_key.encode("utf-8")).hexdigest()
    bucket = int(digest[:8], 16) % 100
    if bucket < validation_percent:
        return "validation"
    return "test" if bucket < validation_percent + test_percent else "train"
