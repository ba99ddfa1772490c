"""Which documents a schema applies to: each schema names its kind of document, an offline
classifier decides per document, and a document not of the kind gets no values.

A schema says ``document_kind: ClassVar[str] = "nda"``; one without a kind applies to every
document. A kind's scorer reads the document's text and gives a probability in [0, 1]; the
document is of the kind at ``THRESHOLD`` or above. The NDA scorer is a logistic regression
learnt from the Kleister NDAs, the shared corpus and written hard negatives (contracts that
mention confidentiality without being NDAs) and evaluated on grouped folds and a held-out set
(``extract.fields.applicability``; ``doclake fields cv --applicability`` prints its precision and
recall); its weights ship as JSON and are scored here without scikit-learn. The decision and its
score are recorded with the result either way, and a document that is not of the kind is
settled ``not_applicable``: no strategy runs, no model is paid, no value is published.
Milliseconds a document, no network.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from pydantic import BaseModel

from extract.errors import TerminalError
from extract.fields.applicability.model import nda_model
from extract.fields.base import PageText
from extract.fields.long_text import by_length
from extract.fields.stored_pages import portable
from extract.ports import CpuRunner

__all__ = ["KINDS", "THRESHOLD", "Applicability", "applicability", "applicability_in_worker",
           "decided", "document_kind", "is_of_kind", "kind_score", "kind_score_in_worker",
           "kind_score_long_text", "kind_score_then", "nda_score", "scored_kind"]

T = TypeVar("T")

THRESHOLD = 0.5


def nda_score(text: str) -> float:
    """The shipped NDA classifier's probability that ``text`` is a non-disclosure agreement."""
    return nda_model().score(text)


KINDS: dict[str, Callable[[str], float]] = {"nda": nda_score}


@dataclass(frozen=True)
class Applicability:
    """The decision for one document and one schema: ``kind`` None means the schema names none
    (it applies to everything, with no score)."""

    kind: str | None
    applies: bool
    score: float | None


def document_kind(schema: type[BaseModel]) -> str | None:
    """The kind of document ``schema`` is for (its ``document_kind`` class attribute)."""
    kind = getattr(schema, "document_kind", None)
    return kind if isinstance(kind, str) and kind else None


def scored_kind(schema: type[BaseModel]) -> str | None:
    """The kind of document ``schema`` is for (None: it names none); a kind with no scorer is
    refused, before any score is asked for."""
    kind = document_kind(schema)
    if kind is not None and kind not in KINDS:
        raise TerminalError(f"{schema.__name__} is for documents of kind {kind!r}, which has no "
                            f"scorer; the kinds are {', '.join(sorted(KINDS))}",
                            error_type="schema_unavailable")
    return kind


def kind_score(kind: str, pages: Sequence[PageText]) -> float:
    """The probability that the document of ``pages`` is of ``kind`` (a known one): a CPU
    call, by its name in the runtime's lanes (1.6 ms an NDA; a long text is scored as
    ``kind_score_long_text``)."""
    return KINDS[kind]("\n\n".join(page.text for page in pages))


def kind_score_long_text(kind: str, pages: Sequence[PageText]) -> float:
    """``kind_score`` for a long text (``extract.fields.long_text``): the same score, under a
    name the runtime's short lane does not take."""
    return kind_score(kind, pages)


def is_of_kind(score: float) -> bool:
    """The decision a score stands for: of the kind at ``THRESHOLD`` or above."""
    return score >= THRESHOLD


def decided(kind: str, score: float) -> Applicability:
    return Applicability(kind, is_of_kind(score), round(score, 4))


def kind_score_then(kind: str, pages: Sequence[PageText],
                    work: Callable[[tuple[PageText, ...]], T]) -> tuple[float, T | None]:
    """The kind's score and, for a document of the kind only, ``work(pages)``: for a strategy
    whose extraction is itself a CPU call (the offline rules), the check and the extraction in
    one call, one trip to a worker instead of two (``KindChecking`` in ``extract.fields.base``).
    ``work`` must pickle (a module-level function)."""
    score = kind_score(kind, pages)
    return score, (work(tuple(pages)) if is_of_kind(score) else None)


def applicability(schema: type[BaseModel], pages: Sequence[PageText]) -> Applicability:
    """Whether ``schema`` applies to the document of ``pages``, and the score behind it."""
    kind = scored_kind(schema)
    if kind is None:
        return Applicability(None, True, None)
    return decided(kind, kind_score(kind, pages))


async def applicability_in_worker(schema: type[BaseModel], pages: Sequence[PageText],
                                  cpu: CpuRunner, timeout_s: float) -> Applicability:
    """``applicability`` with the scoring in ``cpu``'s worker, not on the caller's event loop:
    there it held a run's main process 2.6 ms an NDA (a fifth of the fields stage's cost on 83
    of them) and 160 ms on a 363-page book, every other message waiting meanwhile. Only the
    kind's name and the pages travel (a schema may not pickle). A runner that starts a process
    a call (``process_per_call``: Lambda's, where one message has the function to itself) is
    not used: its start costs more than the score; a thread keeps the loop free there."""
    kind = scored_kind(schema)
    if kind is None:
        return Applicability(None, True, None)
    return decided(kind, await kind_score_in_worker(kind, pages, cpu, timeout_s))


async def kind_score_in_worker(kind: str, pages: Sequence[PageText], cpu: CpuRunner,
                               timeout_s: float) -> float:
    """``kind_score`` where ``applicability_in_worker`` says, unrounded."""
    if getattr(cpu, "process_per_call", False):  # Lambda's: a child's start costs more than this
        return await asyncio.to_thread(kind_score, kind, pages)  # read in the thread, if on disk
    scorer = by_length(pages, kind_score, kind_score_long_text)
    return await cpu.run(scorer, kind, portable(pages), timeout_s=timeout_s)
