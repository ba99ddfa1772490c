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
import re
from collections.abc import Mapping, Sequence

from extract.fields.rules import duplicates

__all__ = ["SPLITS", "THRESHOLD", "jaccard", "near_duplicate_groups", "shingles", "side_of"]

SPLITS = ("train", "validation", "test")

THRESHOLD = duplicates.JACCARD  # one notion of "the same form" for fine-tuning and for rules
CANDIDATES = 0.3
"""LSH threshold for candidate pairs, well below ``THRESHOLD``: MinHash only estimates the
Jaccard (a pair at 0.518 was estimated under 0.5 and split), so candidates are found loosely
and each pair is then decided on its exact Jaccard."""
_WORD = re.compile(r"[a-z0-9]+")


def shingles(text: str, size: int = 5) -> set[str]:
    """Word ``size``-shingles of the lower-cased words (letters and digits)."""
    words = _WORD.findall(text.lower())
    return {" ".join(words[i:i + size]) for i in range(max(len(words) - size + 1, 1))}


def jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def _exact_groups(texts: Sequence[str], threshold: float) -> list[int]:
    """A group number per text: pairs whose exact shingle Jaccard is at least ``threshold``
    (candidates from MinHash LSH at ``CANDIDATES``) are joined, transitively."""
    from datasketch import MinHash, MinHashLSH

    sets = [shingles(text) for text in texts]
    lsh = MinHashLSH(threshold=min(CANDIDATES, threshold), num_perm=duplicates.PERMUTATIONS)
    hashes = []
    for index, found in enumerate(sets):
        minhash = MinHash(num_perm=duplicates.PERMUTATIONS, seed=1)
        minhash.update_batch([s.encode() for s in found])
        hashes.append(minhash)
        lsh.insert(str(index), minhash)
    parent = list(range(len(texts)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for index, minhash in enumerate(hashes):
        for other in map(int, lsh.query(minhash)):
            if other > index and jaccard(sets[index], sets[other]) >= threshold:
                parent[root(other)] = root(index)
    numbers: dict[int, int] = {}
    return [numbers.setdefault(root(i), len(numbers)) for i in range(len(texts))]


def near_duplicate_groups(texts: Mapping[str, str], threshold: float = THRESHOLD
                          ) -> dict[str, str]:
    """document id -> its group's key (the smallest document id of its near-duplicate cluster).

    The notion is the rules' (word 5-shingles, Jaccard ``THRESHOLD``), decided on the exact
    Jaccard of each candidate pair rather than its MinHash estimate."""
    ids = sorted(texts)
    numbers = _exact_groups([texts[d] for d in ids], threshold)
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
