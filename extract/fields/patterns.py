"""Regex building blocks for the candidate generators, shaped for speed without changing what
they match (the rules run once per document inside the pipeline's fields stage)."""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["alternation"]


def alternation(words: Iterable[str]) -> str:
    """``words`` as one regex alternation shaped as a prefix tree: 'New (?:Jersey|York|...)',
    'sep(?:t(?:ember|)|)'. It matches what 'A|B|...' sorted longest first matches (two words that
    match at one place are prefixes of each other, and the tree tries the longer first), without
    re trying every word at every position: re does not factor an alternation itself. Words are
    lower-cased (compile with IGNORECASE); a space matches any run of whitespace."""
    tree: dict = {}
    for word in words:
        node = tree
        for char in word.lower():
            node = node.setdefault(char, {})
        node[""] = {}

    def pattern(node: dict) -> str:
        branches = [(r"\s+" if char == " " else re.escape(char)) + pattern(child)
                    for char, child in sorted(node.items()) if char]
        if not branches:
            return ""
        if "" in node:  # a word ends here and a longer one goes on: the longer is tried first
            branches.append("")
        return branches[0] if len(branches) == 1 else f"(?:{'|'.join(branches)})"

    return pattern(tree)
