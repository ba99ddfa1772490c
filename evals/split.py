"""Train or validation for a fine-tuning set, on a group that no near-duplicate crosses.

Hashing each example's text is not enough: two versions of one contract, or two NDAs from the same
template, differ by a few words, hash apart and land on both sides (the Kleister train split has
14 pairs above an estimated Jaccard of 0.5, one at 0.97), and a document changes side when the
text limit or the reader changes. So the unit is a group: documents are joined when they are the
same document id or near-duplicates (MinHash over word shingles of the whole text, ``datasketch``'s
LSH at ``THRESHOLD``), and a group's side is decided by the hash of its smallest document id,
which no limit or reader changes.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping

from datasketch import MinHash, MinHashLSH

__all__ = ["SHINGLE", "THRESHOLD", "near_duplicate_groups", "side_of"]

THRESHOLD = 0.5
SHINGLE = 5
PERMUTATIONS = 128


def _minhash(text: str) -> MinHash:
    words = re.findall(r"\w+", text.lower())
    shingles = {" ".join(words[i:i + SHINGLE]) for i in range(max(1, len(words) - SHINGLE + 1))}
    m = MinHash(num_perm=PERMUTATIONS, seed=1)
    m.update_batch([s.encode("utf-8") for s in shingles])
    return m


def near_duplicate_groups(texts: Mapping[str, str], threshold: float = THRESHOLD
                          ) -> dict[str, str]:
    """document id -> its group's key (the smallest document id of its near-duplicate cluster)."""
    parent = {d: d for d in texts}

    def root(d: str) -> str:
        while parent[d] != d:
            parent[d] = parent[parent[d]]
            d = parent[d]
        return d

    lsh = MinHashLSH(threshold=threshold, num_perm=PERMUTATIONS)
    hashes = {}
    for document_id in sorted(texts):
        m = _minhash(texts[document_id])
        hashes[document_id] = m
        for other in lsh.query(m):
            if m.jaccard(hashes[other]) >= threshold:
                a, b = root(document_id), root(other)
                parent[max(a, b)] = min(a, b)
        lsh.insert(document_id, m)
    return {d: root(d) for d in texts}


def side_of(group_key: str, validation_percent: int) -> str:
    """train or validation from the group key alone: stable across runs, limits and readers."""
    digest = hashlib.sha256(group_key.encode("utf-8")).hexdigest()
    return "validation" if int(digest[:8], 16) % 100 < validation_percent else "train"
