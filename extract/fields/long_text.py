"""Which documents' fields calls are long: a text past ``LONG_TEXT_CHARS`` characters.

The runtime sends a CPU call to a lane by the function's name (``infra.local.cpu_lanes``): the
document-kind score and the offline rules go to the short lane, one process that also answers
every document's sniff and page count, because on a contract they take milliseconds (the
longest Kleister NDA, 73,000 characters: about 30 ms). On a long text they do not: a 363-page
book of 1.1 million characters takes 0.17 s to score and 4 s of rules, and in a data room four
one-page Office files waited 2.95 s behind it for their kind score. So a long document's calls
go under names of their own (``kind_score_long_text``, ``run_rules_long_text``,
``run_rules_of_kind_long_text``), which the lanes send with its other work, ordered by its pages
left like every call there. ``by_length`` makes that choice, in one place for every such call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from extract.fields.base import PageText
from extract.fields.stored_pages import stored_size

__all__ = ["LONG_TEXT_CHARS", "by_length", "is_long_text"]

F = TypeVar("F", bound=Callable)

LONG_TEXT_CHARS = 100_000
"""Characters above which a document's fields calls are long (about 30 pages of a contract;
every one of the 254 Kleister NDAs is under it)."""


def is_long_text(pages: Sequence[PageText]) -> bool:
    """Past ``LONG_TEXT_CHARS``; pages still on disk are measured by their files' bytes
    (``stored_size``: a text with many characters beyond ASCII counts as a little longer)."""
    return stored_size(pages) > LONG_TEXT_CHARS


def by_length(pages: Sequence[PageText], short: F, long: F) -> F:
    """``long`` (the same work under its long-text name) for a long text, else ``short``."""
    return long if is_long_text(pages) else short
