"""The offline ``rules`` strategy for the NDA schema: no network, no GPU, milliseconds a document.

Rules propose candidates (every date, US state, duration and party-like name, with where each
occurs); a linear model over their contexts, trained on the Kleister NDA train split and shipped
as JSON beside this module (``doclake fields train`` rebuilds it), picks the values. Every value
comes back with its probability (its confidence) and the mention that decided it: the one that
scores best on its own, with its page, character offset and the words around it.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from functools import cache

from pydantic import BaseModel

from extract.errors import TerminalError
from extract.fields.base import Extraction, PageText, Source
from extract.fields.document import JoinedText
from extract.fields.rules.calibration import shipped_calibration
from extract.fields.rules.candidates import (
    Candidate,
    date_candidates,
    jurisdiction_candidates,
    term_candidates,
)
from extract.fields.rules.features import featurise
from extract.fields.rules.linear import FieldModel, LinearModel, select
from extract.fields.rules.parties import party_candidates
from extract.fields.rules.shipped import GENERATOR_MODULES, shipped_model_bytes, shipped_version
from extract.fields.schemas import NdaFields
from extract.fields.version import code_digest, rules_version

__all__ = ["GENERATORS", "Proposals", "RulesStrategy", "propose"]

MAX_SCORED_MENTIONS = 8  # mentions scored one by one to find the one that decided a value

GENERATORS: dict[str, Callable[[str], list[Candidate]]] = {
    "effective_date": date_candidates,
    "jurisdiction": jurisdiction_candidates,
    "party": party_candidates,
    "term": term_candidates,
}


Proposals = dict[str, tuple[list[Candidate], list[dict[str, float]]]]


def propose(text: str) -> Proposals:
    """Each field's candidates and their features (shared by extraction and training)."""
    proposals = {}
    for name, generate in GENERATORS.items():
        candidates = generate(text)
        proposals[name] = (candidates, featurise(candidates, text))
    return proposals


@cache
def _shipped_model() -> LinearModel:
    return LinearModel.from_json(shipped_model_bytes().decode("utf-8"))


class RulesStrategy:
    """Extracts ``NdaFields``; any other schema is a terminal error (it has no rules)."""

    name = "rules"

    def __init__(self, model: LinearModel | None = None):
        """The shipped model (``model`` None) or another (a fold's in cross-validation), whose
        version hashes its JSON as ``to_json`` writes it."""
        if model is None:
            self.model, self.model_version = _shipped_model(), shipped_version()
            return
        self.model = model
        calibration = shipped_calibration(model.version)
        self.model_version = rules_version(
            model.version, model.to_json().encode()
            + (calibration.to_json().encode() if calibration else b""),
            code_digest(*GENERATOR_MODULES))

    def version(self, schema: type[BaseModel] | None = None) -> str:
        """The model's content and the candidate generators' code (``extract.fields.version``)."""
        return self.model_version

    def run(self, pages: Sequence[PageText]) -> Extraction:
        """The synchronous core: the async port calls it, and so can a script."""
        joined = JoinedText.of(pages)
        return self.decide(propose(joined.text), joined, pages)

    def decide(self, proposals: Proposals, joined: JoinedText,
               pages: Sequence[PageText] = ()) -> Extraction:
        """Pick values from proposals (cross-validation proposes once and decides per fold).
        Each value's confidence is its probability through the shipped calibration (when it
        was fitted for this model; else the raw probability); its evidence is the deciding
        mention with its words around, cut from ``pages`` (the stored text, character for
        character) at the offsets recorded with it."""
        calibration = shipped_calibration(self.model.version)
        texts = {page.number: page.text for page in pages}
        values: dict[str, object] = {}
        sources: list[Source] = []
        for name, (candidates, features) in proposals.items():
            field_model = self.model.fields.get(name)
            if field_model is None or not candidates:
                continue
            chosen = select(candidates, field_model.probabilities(candidates, features),
                            field_model)
            for index, (candidate, probability) in enumerate(chosen):
                start, end = _deciding_mention(candidate, joined.text, field_model)
                page, offset = joined.locate(start)
                left, right = _in_context(joined, start, end)
                page_start = joined.starts[joined.numbers.index(page)] if page is not None else 0
                page_text = texts.get(page) or joined.text[page_start:]
                sources.append(Source(
                    name, index, page, offset,
                    evidence=page_text[left - page_start:right - page_start],
                    confidence=calibration.apply(name, probability) if calibration
                    else probability,
                    evidence_start=left - page_start, evidence_end=right - page_start))
            picked = [candidate.value for candidate, _ in chosen]
            values[name] = picked if name == "party" else (picked[0] if picked else None)
        return Extraction(NdaFields.model_validate(values), tuple(sources),
                          model_version=self.model_version)

    async def extract(self, pages: Sequence[PageText], schema: type[BaseModel]) -> Extraction:
        if schema is not NdaFields:
            raise TerminalError(f"the rules strategy extracts only the NDA schema, not "
                                f"{schema.__name__}; use single-pass or agentic",
                                error_type="unsupported_schema")
        return self.run(pages)


def _deciding_mention(candidate: Candidate, text: str, model: FieldModel) -> tuple[int, int]:
    """The mention that scores best on its own ("the laws of the State of Florida" rather than
    "a Florida corporation"): each mention is scored as if it were the candidate's only one."""
    mentions = sorted(candidate.mentions)
    if len(mentions) == 1:
        return mentions[0]
    best, best_score = mentions[0], -1.0
    for mention in mentions[:MAX_SCORED_MENTIONS]:
        alone = Candidate(candidate.field, candidate.value, candidate.key, [mention],
                          set(candidate.kinds))
        score = model.probability(featurise([alone], text)[0])
        if score > best_score:
            best, best_score = mention, score
    return best


def _in_context(joined: JoinedText, start: int, end: int, before: int = 60,
                after: int = 30) -> tuple[int, int]:
    """(left, right) in the joined text of the mention with a few words either side, kept
    within the mention's page and trimmed of white space at both ends: what a reviewer reads,
    exactly as stored."""
    text = joined.text
    page_index = max(bisect.bisect_right(joined.starts, start) - 1, 0)
    page_start = joined.starts[page_index] if joined.starts else 0
    page_end = (joined.starts[page_index + 1] - 2 if page_index + 1 < len(joined.starts)
                else len(text))  # the page break ("\n\n") is not the page's text
    floor, ceiling = max(page_start, start - before), min(page_end, end + after)
    space = text.find(" ", floor, start) if start - before > page_start else -1
    left = space + 1 if space >= 0 else floor
    space = text.find(" ", ceiling, page_end) if ceiling < page_end else -1
    right = space if space >= 0 else page_end
    while left < start and text[left].isspace():
        left += 1
    while right > end and text[right - 1].isspace():
        right -= 1
    return left, right
