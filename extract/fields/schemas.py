"""Field schemas: pydantic models whose field descriptions double as instructions to an LLM.

The built-in schema is the NDA one, holding values the way a reader would write them ("Nike,
Inc.", "New York", "2 years"); ``NdaFields.kleister_tokens`` turns them into the Kleister
benchmark's ``key=value`` tokens, so the same record feeds the results table and the metric.

A schema may name the kind of document it is for (``document_kind``, a class attribute): the NDA
schema says ``"nda"``, and only documents classified as NDAs get its values
(``extract.fields.kinds``); a user's schema without one applies to every document.

``load_schema`` resolves the ``--fields`` option: ``nda``, ``none`` (no field stage) or
``MODULE:CLASS``, a user's own pydantic model importable from the Python path.
"""

from __future__ import annotations

import importlib
import re
from datetime import date
from functools import lru_cache
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["NdaFields", "SchemaLoadError", "US_STATES", "kleister_value", "load_schema"]

US_STATES = (
    "Alabama", "Alaska", "Arizona", "Arkansas", "California", "Colorado", "Connecticut", "Delaware",
    "District of Columbia", "Florida", "Georgia", "Hawaii", "Idaho", "Illinois", "Indiana", "Iowa",
    "Kansas", "Kentucky", "Louisiana", "Maine", "Maryland", "Massachusetts", "Michigan",
    "Minnesota", "Mississippi", "Missouri", "Montana", "Nebraska", "Nevada", "New Hampshire",
    "New Jersey", "New Mexico", "New York", "North Carolina", "North Dakota", "Ohio", "Oklahoma",
    "Oregon", "Pennsylvania", "Rhode Island", "South Carolina", "South Dakota", "Tennessee",
    "Texas", "Utah", "Vermont", "Virginia", "Washington", "West Virginia", "Wisconsin", "Wyoming",
)
_STATE_BY_UPPER = {s.upper(): s for s in US_STATES}

_TERM = re.compile(r"^(\d+(?:\.\d+)?) (day|week|month|year)s?$")
_SMALL_NUMBERS = {w: str(i) for i, w in enumerate((
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve"))}


class SchemaLoadError(ValueError):
    """``--fields`` names nothing usable; the message says what was tried and what to do."""


class NdaFields(BaseModel):
    """The four fields of a non-disclosure agreement, as the Kleister NDA benchmark defines them."""

    model_config = ConfigDict(extra="forbid")
    document_kind: ClassVar[str] = "nda"
    """Runs only on documents the offline classifier judges NDAs (``extract.fields.kinds``)."""

    effective_date: date | None = Field(
        None, description="The date the agreement takes effect: the date stated as effective, "
        "else the date it was made or signed. ISO format YYYY-MM-DD. Null if no date is given.")
    jurisdiction: str | None = Field(
        None, description="The US state whose law governs the agreement (the governing-law "
        "clause), as its full name, e.g. 'New York'. Not the venue of courts when a governing "
        "law is stated. Null if none is named.")
    party: list[str] = Field(
        default_factory=list, description="The parties that sign the agreement: companies by "
        "their full legal name with its suffix as written (e.g. 'Nike, Inc.', 'Tyco Healthcare "
        "Group LP'), individuals by their full name. Not signatories acting for a company, not "
        "affiliates or subsidiaries. Each party once.")
    term: str | None = Field(
        None, description="How long the agreement itself lasts, as '<number> <unit>' with unit "
        "days, months or years, e.g. '2 years', '18 months'. Not the duration of the "
        "confidentiality obligations after it ends unless that is the only duration stated. Null "
        "if no fixed duration is stated.")

    @field_validator("jurisdiction")
    @classmethod
    def _state_name(cls, value: str | None) -> str | None:
        """Canonical casing for US states ('NEW YORK' -> 'New York'); other places pass as given."""
        if value is None:
            return None
        value = " ".join(value.replace("_", " ").split())
        return _STATE_BY_UPPER.get(value.upper().removeprefix("STATE OF "), value) or None

    @field_validator("term")
    @classmethod
    def _duration(cls, value: str | None) -> str | None:
        """'<number> <unit>', singular only for exactly 1, so the token is stable."""
        if value is None:
            return None
        words = value.replace("_", " ").replace("-", " ").lower().split()
        match = _TERM.match(" ".join(_SMALL_NUMBERS.get(w, w) for w in words))
        if not match:
            raise ValueError(f"term {value!r} is not '<number> <days|weeks|months|years>'")
        number, unit = match.groups()
        return f"{number} {unit}" if number == "1" else f"{number} {unit}s"

    @field_validator("party")
    @classmethod
    def _distinct(cls, value: list[str]) -> list[str]:
        """Blank names dropped; a name given twice (by its token) is kept once."""
        seen: set[str] = set()
        names = []
        for name in value:
            name = " ".join(name.split())
            if name and kleister_value(name).upper() not in seen:
                seen.add(kleister_value(name).upper())
                names.append(name)
        return names

    def kleister_tokens(self) -> list[str]:
        """The benchmark's ``key=value`` tokens for this record, one per party."""
        tokens = []
        if self.effective_date:
            tokens.append(f"effective_date={self.effective_date.isoformat()}")
        if self.jurisdiction:
            tokens.append(f"jurisdiction={kleister_value(self.jurisdiction)}")
        tokens += [f"party={kleister_value(name)}" for name in self.party]
        if self.term:
            tokens.append(f"term={kleister_value(self.term)}")
        return tokens


_LEGAL_SUFFIXES = [(re.compile(rf"(?<![\w.]){pattern}(?!\w)", re.IGNORECASE), text) for pattern, text in (
    (r"L\.\s?L\.\s?C\.?", "LLC"), (r"L\.\s?L\.\s?P\.?", "LLP"), (r"L\.\s?P\.?(?=\s|$)", "LP"),
    (r"Inc(?=\s|$)", "Inc."), (r"Corp(?=\s|$)", "Corp."), (r"Ltd(?=\s|$)", "Ltd."),
    (r"Incorporated(?=\s|$)", "Inc."), (r"Limited(?=\s|$)", "Ltd."),
)]


# The benchmark's gold leaves out a name's leading "First" ("First Oak Brook Bancshares, Inc."
# is Oak_Brook_Bancshares_Inc., "The First Marblehead Corporation" The_Marblehead_Corporation):
# every such party in the Kleister NDA train split is written so, none keeps it.
_LEADING_FIRST = re.compile(r"^((?:The\s+)?)First\s+(?=\S+\s)", re.IGNORECASE)


@lru_cache(maxsize=4096)
def kleister_value(text: str) -> str:
    """One value as a Kleister token: '&' -> 'and', commas dropped, legal suffixes in one
    spelling ('L.P.' -> 'LP', 'Incorporated' -> 'Inc.'), a name's leading 'First' left out as
    the benchmark's gold does, whitespace runs -> '_'. Remembered by spelling: the rules ask it
    for every mention of every candidate (38 times an NDA, nine substitutions each), most of
    them spellings already seen in the document or an earlier one (a state, a duration)."""
    text = text.replace("&", " and ").replace(",", " ")
    text = " ".join(text.split())
    text = _LEADING_FIRST.sub(r"\1", text)
    for pattern, replacement in _LEGAL_SUFFIXES:
        text = pattern.sub(replacement, text)
    return "_".join(text.split())


def load_schema(spec: str) -> type[BaseModel] | None:
    """The schema class ``--fields`` names: ``nda``, ``none`` (None: skip the stage) or
    ``MODULE:CLASS``, a pydantic model importable from the Python path."""
    spec = spec.strip()
    if spec.lower() == "nda":
        return NdaFields
    if spec.lower() == "none":
        return None
    module_name, colon, class_name = spec.partition(":")
    if not colon or not module_name or not class_name:
        raise SchemaLoadError(f"--fields {spec!r}: use nda, none or MODULE:CLASS "
                              "(e.g. myschemas.invoice:Invoice)")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise SchemaLoadError(f"--fields {spec!r}: cannot import module {module_name!r} ({error}); "
                              "is it on PYTHONPATH?") from None
    schema = getattr(module, class_name, None)
    if schema is None:
        raise SchemaLoadError(f"--fields {spec!r}: module {module_name!r} has no {class_name!r}")
    if not (isinstance(schema, type) and issubclass(schema, BaseModel)):
        raise SchemaLoadError(f"--fields {spec!r}: {class_name!r} is not a pydantic model class "
                              f"(got {type(schema).__name__})")
    return schema
