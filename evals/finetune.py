"""Fine-tuning sets from what the system really processed: labelled documents (or results a
user-chosen rule confirms) as JSONL in the Gemini (Vertex AI) supervised-tuning or the OpenAI chat
format, built to match production:

- input: the prompt the single-pass strategy sends, made by the same builder
  (``extract.fields.llm.prompts.single_pass_prompt``, passed in by ``infra.evals_wiring``): its
  system prompt, then the response schema with every field's description (a tuning file has no
  response-schema slot, so it is written into the system instruction), and the user text with the
  same page rendering and limit; a cut is counted in the manifest;
- output: every field of the schema as one JSON object, lists as lists, a field with no value
  ``null`` (or ``[]``), typed as the schema types it (a number as a number, a nested model as an
  object); a Kleister-form label (``Nike_Inc.``) is written in the surface form the text spells
  it ("Nike, Inc."), as the schema tells the model to, when the text has it; a document whose
  label does not cover every field is left out (a missing field would teach a wrong null);
- split on a stable group (``evals.split``): document id and near-duplicate clusters, so no
  near-duplicate is on both sides; identical input texts are written once;
- a manifest beside the files: counts, the split rule, the limit, warnings (fewer examples than
  the provider's minimum: OpenAI 10, Gemini on Vertex AI 16).

The two shapes (the providers' documented tuning formats):

- gemini: ``{"systemInstruction": {"role": "system", "parts": [{"text": ...}]},
  "contents": [{"role": "user", "parts": [{"text": ...}]}, {"role": "model", "parts": [...]}]}``
- openai: ``{"messages": [{"role": "system", "content": ...}, {"role": "user", ...},
  {"role": "assistant", "content": ...}]}``
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from evals.split import THRESHOLD, near_duplicate_groups, side_of

__all__ = ["Example", "FinetuneDocument", "TargetSchema", "build_examples", "surface_form",
           "to_line", "write_set", "FORMATS", "MINIMUM_EXAMPLES"]

FORMATS = ("gemini", "openai")
MINIMUM_EXAMPLES = {"openai": 10, "gemini": 16}
"""The providers' minimum training examples (OpenAI fine-tuning: 10; Vertex AI Gemini
supervised tuning: 16, with 100 or more recommended)."""


class FinetuneDocument(NamedTuple):
    document_id: str
    source: str  # labelled | confirmed
    pages: Sequence[tuple[int, str]]
    values: Mapping[str, Sequence[str]]
    value_format: str
    schema_name: str = "nda"


@dataclass(frozen=True)
class TargetSchema:
    """What a set needs to know about one schema, supplied by the caller (evals imports no
    extractor): its fields, which are lists and which are text, how a stored value becomes a
    typed JSON value, how the target is validated, and production's prompt builder."""

    fields: tuple[str, ...]
    list_fields: tuple[str, ...]
    text_fields: tuple[str, ...]
    prompt: Callable[[Sequence[tuple[int, str]]], tuple[str, str, dict, bool]]
    """pages -> (system prompt, user text, response schema, truncated)."""
    typed: Callable[[str, str], Any] = lambda name, value: value
    validate: Callable[[dict], dict] | None = None
    normalize: Callable[[str, str], str] | None = None
    """(field, text) -> the Kleister token of a text: checks a surface form found in the text."""


@dataclass(frozen=True)
class Example:
    document_id: str
    source: str
    system: str
    text: str
    truncated: bool
    answer: dict
    full_text: str = ""

    @property
    def content_hash(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()


def _word_pattern(word: str) -> str:
    if word.lower() == "and":
        return r"(?:and|&)"
    letters = word.rstrip(".")
    if letters.isupper() and letters.isalpha() and len(letters) <= 4:
        body = r"\.?\s?".join(map(re.escape, letters))  # LP <- L.P., LLC <- L.L.C.
    else:
        body = re.escape(letters)
    return body + r"\.?"


def surface_form(token: str, text: str, check: Callable[[str], bool] | None = None) -> str | None:
    """How the text spells a Kleister token ('Nike_Inc.' -> 'Nike, Inc.'), or None."""
    words = [w for w in token.split("_") if w]
    if not words:
        return None
    pattern = r"(?<!\w)" + r"[\s,]+".join(map(_word_pattern, words)) + r"(?!\w)"
    for match in re.finditer(pattern, text, flags=re.IGNORECASE):
        found = " ".join(match.group(0).split())
        if check is None or check(found):
            return found
    return None


def target(values: Mapping[str, Sequence[str]], schema: TargetSchema, value_format: str,
           text: str) -> dict:
    """The label as the schema's JSON: every field, lists as lists, nulls explicit."""
    lists, texts = set(schema.list_fields), set(schema.text_fields)

    def one(name: str, value: str) -> Any:
        if value_format != "kleister":
            return schema.typed(name, value)
        if name in texts:
            check = (lambda found: schema.normalize(name, found).upper() == value.upper()
                     ) if schema.normalize else None
            return surface_form(value, text, check) or value.replace("_", " ")
        return schema.typed(name, value)

    answer = {name: [one(name, v) for v in values.get(name, ())] if name in lists else (
        one(name, values[name][0]) if values.get(name) else None) for name in schema.fields}
    return schema.validate(answer) if schema.validate else answer


def build_examples(documents: Iterable[FinetuneDocument],
                   schema_for: Callable[[str], TargetSchema | None]) -> tuple[list[Example], dict]:
    """Examples, and what was left out: a document without text (nothing to learn from), a label
    that does not cover every field, a schema that cannot be loaded, a target the schema refuses."""
    out, skipped = [], {"no_text": 0, "partial_label": 0, "unknown_schema": 0,
                        "invalid_target": 0}
    for doc in documents:
        schema = schema_for(doc.schema_name)
        if schema is None:
            skipped["unknown_schema"] += 1
            continue
        full = "\n\n".join(body for _, body in doc.pages)
        if not full.strip():
            skipped["no_text"] += 1
            continue
        values = dict(doc.values)
        if doc.source == "confirmed":  # agreeing results: a field with no value has none
            values = {name: values.get(name, ()) for name in schema.fields}
        if not set(schema.fields) <= set(values):
            skipped["partial_label"] += 1
            continue
        system, text, response_schema, cut = schema.prompt(doc.pages)
        try:
            answer = target(values, schema, doc.value_format, full)
        except ValueError:
            skipped["invalid_target"] += 1
            continue
        system = (f"{system}\n\nThe response schema (JSON Schema; each field's description says "
                  f"what it holds):\n{json.dumps(response_schema, ensure_ascii=False)}")
        out.append(Example(doc.document_id, doc.source, system, text, cut, answer, full))
    return out, skipped


def to_line(example: Example, file_format: str) -> dict:
    output = json.dumps(example.answer, ensure_ascii=False, sort_keys=True)
    if file_format == "gemini":
        return {"systemInstruction": {"role": "system", "parts": [{"text": example.system}]},
                "contents": [{"role": "user", "parts": [{"text": example.text}]},
                             {"role": "model", "parts": [{"text": output}]}]}
    if file_format == "openai":
        return {"messages": [{"role": "system", "content": example.system},
                             {"role": "user", "content": example.text},
                             {"role": "assistant", "content": output}]}
    raise ValueError(f"format {file_format!r}: use one of {', '.join(FORMATS)}")


@dataclass
class Manifest:
    format: str
    validation_percent: int
    files: dict[str, str] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    truncated: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    groups: dict[str, list[str]] = field(default_factory=dict)
    validation_documents: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"format": self.format, "files": self.files, "counts": self.counts,
                "split_rule": f"documents grouped by document id and near-duplicate clusters "
                f"(MinHash over word shingles, estimated Jaccard >= {THRESHOLD}); validation "
                f"when int(sha256(the group's smallest document id)[:8], 16) % 100 < "
                f"{self.validation_percent}, else train; identical input texts are one example",
                "near_duplicate_groups": self.groups,
                "validation_documents": self.validation_documents,
                "truncated_documents": self.truncated, "warnings": self.warnings}


def write_set(examples: Sequence[Example], out: Path, file_format: str, *,
              validation_percent: int = 10, skipped: Mapping[str, int] | None = None
              ) -> Manifest:
    """``out`` (train), ``<out stem>.validation.jsonl`` and ``<out stem>.manifest.json``.

    Labelled examples win over confirmed ones with the same text; ties keep the first."""
    if file_format not in FORMATS:
        raise ValueError(f"format {file_format!r}: use one of {', '.join(FORMATS)}")
    ranked = sorted(examples, key=lambda e: (e.source != "labelled", e.document_id))
    unique: dict[str, Example] = {}
    for example in ranked:
        unique.setdefault(example.content_hash, example)
    kept = sorted(unique.values(), key=lambda e: e.document_id)
    groups = near_duplicate_groups({e.document_id: e.full_text or e.text for e in kept})
    validation = out.with_name(f"{out.stem}.validation.jsonl")
    manifest = Manifest(file_format, validation_percent,
                        files={"train": str(out), "validation": str(validation)})
    sides: dict[str, list[Example]] = {"train": [], "validation": []}
    for example in kept:
        sides[side_of(groups[example.document_id], validation_percent)].append(example)
    for side, path in (("train", out), ("validation", validation)):
        with path.open("w", encoding="utf-8") as handle:
            for example in sides[side]:
                handle.write(json.dumps(to_line(example, file_format), ensure_ascii=False) + "\n")
    clusters: dict[str, list[str]] = {}
    for document_id, key in groups.items():
        clusters.setdefault(key, []).append(document_id)
    manifest.groups = {k: sorted(v) for k, v in sorted(clusters.items()) if len(v) > 1}
    manifest.counts = {"candidates": len(examples), "duplicates_removed": len(examples) - len(unique),
                       "train": len(sides["train"]), "validation": len(sides["validation"]),
                       "labelled": sum(e.source == "labelled" for e in kept),
                       "confirmed": sum(e.source == "confirmed" for e in kept),
                       "truncated": sum(e.truncated for e in kept),
                       "near_duplicate_groups": len(manifest.groups),
                       **{f"skipped_{k}": v for k, v in (skipped or {}).items()}}
    manifest.truncated = sorted(e.document_id for e in kept if e.truncated)
    manifest.validation_documents = [e.document_id for e in sides["validation"]]
    minimum = MINIMUM_EXAMPLES[file_format]
    if len(sides["train"]) < minimum:
        manifest.warnings.append(
            f"{len(sides['train'])} training examples: {file_format} tuning needs at least "
            f"{minimum}" + (" (100 or more recommended)" if file_format == "gemini" else ""))
    out.with_name(f"{out.stem}.manifest.json").write_text(
        json.dumps(manifest.to_dict(), indent=2) + "\n", encoding="utf-8")
    return manifest
