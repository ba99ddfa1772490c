"""Near-duplicate groups of documents, so cross-validation never tests on a copy of its training.

SEC exhibits repeat: one company files the same NDA form for several counterparties, changing
little but the names. A random split puts such siblings on both sides and flatters the score.
Documents are grouped by the Jaccard similarity of their word 5-shingles, estimated with MinHash
and found with locality-sensitive hashing (``datasketch``); a group is every document linked to
another by a pair above the threshold (union-find). Training-time only.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

__all__ = ["JACCARD", "fold_of_groups", "near_duplicate_groups"]

JACCARD = 0.5  # estimated shingle Jaccard above which two documents count as one form
SHINGLE = 5
PERMUTATIONS = 128
_WORD = re.compile(r"[a-z0-9]+")


def _shingles(text: str) -> set[bytes]:
    words = _WORD.findall(text.lower())
    return {" ".join(words[i:i + SHINGLE]).encode() for i in range(max(len(words) - SHINGLE + 1, 1))}


def near_duplicate_groups(texts: Sequence[str], threshold: float = JACCARD) -> list[int]:
    """A group number per text: texts whose shingle sets are near-duplicates (directly or
    through a chain of them) share one; numbers are dense, in order of first appearance."""
    from datasketch import MinHash, MinHashLSH

    lsh = MinHashLSH(threshold=threshold, num_perm=PERMUTATIONS)
    hashes = []
    for index, text in enumerate(texts):
        minhash = MinHash(num_perm=PERMUTATIONS, seed=1)
        minhash.update_batch(list(_shingles(text)))
        hashes.append(minhash)
        lsh.insert(str(index), minhash)
    parent = list(range(len(texts)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for index, minhash in enumerate(hashes):
        for other in lsh.query(minhash):
            j = int(other)
            if j != index and hashes[index].jaccard(hashes[j]) >= threshold:
                parent[root(j)] = root(index)
    numbers: dict[int, int] = {}
    return [numbers.setdefault(root(i), len(numbers)) for i in range(len(texts))]


def fold_of_groups(groups: Sequence[int], folds: int, seed: int) -> list[int]:
    """A fold per document such that a group never spans two folds: groups in a seeded random
    order, largest first, each to the fold with the fewest documents so far."""
    sizes: dict[int, int] = {}
    for group in groups:
        sizes[group] = sizes.get(group, 0) + 1
    order = list(sizes)
    random.Random(seed).shuffle(order)
    order.sort(key=lambda g: -sizes[g])  # stable: ties keep the shuffled order
    load = [0] * folds
    fold_by_group = {}
    for group in order:
        fold = min(range(folds), key=lambda f: (load[f], f))
        fold_by_group[group] = fold
        load[fold] += sizes[group]
    return [fold_by_group[g] for g in groups]
