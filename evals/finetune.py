"""Fine-tuning sets from what the system really processed: labelled documents (or results a
user-chosen rule confirms) as JSONL in the Gemini (Vertex AI) supervised-tuning or the OpenAI chat
format, built to match production:

- input: the request the single-pass strategy sends, built by the strategy's own settings
  object (``SinglePassSettings.request``, passed in by ``infra.evals_wiring``): its system
  prompt, then the response schema it sends as ``response_json_schema`` (a tuning file has no
  response-schema slot, so it is written after the system prompt, under a fixed heading), and
  the user text with the same page rendering and the same ``max_chars``; a cut is counted;
- output: an instance of that response schema, checked with ``jsonschema``: ``fields``, every
  field of the schema (lists as lists, a field with no value ``null`` or ``[]``, typed as the
  schema types it; a name or place as the document writes it, as production's prompt asks:
  the labeller's "Redprairie Holding Inc." or the Kleister ``Redprairie_Holding_Inc.`` becomes
  the page's "RedPrairie Holding, Inc." (``evals.spelling``); a document with a value the
  text never states is left out and counted), and ``evidence``, one quote per value copied
  from its page with the page number, as production asks the model for; a document whose label
  does not cover every field, or one of whose values no page states, is left out and counted
  (teaching a wrong null or an answer without its evidence is what the set must not do);
- split into train, validation and test on a stable group (``evals.split``): document id and
  near-duplicate clusters, so no near-duplicate is on two sides; identical input texts are
  written once;
- a manifest beside the files: counts, the split rule, the documents of each split (id and
  SHA-256: ``doclake evals score --trained-on MANIFEST`` warns when a tuned model is scored on
  documents it was trained or validated on), warnings (fewer examples than the provider's
  minimum: OpenAI 10, Gemini on Vertex AI 16).

The two shapes (the providers' documented tuning formats):

- gemini: ``{"systemInstruction": {"role": "system", "parts": [{"text": ...}]},
  "contents": [{"role": "user", "parts": [{"text": ...}]}, {"role": "model", "parts": [...]}]}``
- openai: ``{"messages": [{"role": "system", "content": ...}, {"role": "user", ...},
  {"role": "assistant", "content": ...}]}``
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from evals.spelling import document_spelling
from evals.split import SPLITS, THRESHOLD, near_duplicate_groups, side_of

__all__ = ["Example", "FinetuneDocument", "TargetSchema", "build_examples", "check_target",
           "surface_form", "system_text", "to_line", "trained_documents", "write_set", "FORMATS",
           "MINIMUM_EXAMPLES", "SCHEMA_HEADING"]

SCHEMA_HEADING = ("The response schema (JSON Schema; each field's description says what it "
                  "holds):")
"""Where the response schema starts in a tuning example's system text: production sends it as
``response_json_schema``, which a tuning file has no slot for."""

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
    sha256: str | None = None


@dataclass(frozen=True)
class TargetSchema:
    """What a set needs to know about one schema, supplied by the caller (evals imports no
    extractor): its fields, which are lists and which are text, how a stored value becomes a
    typed JSON value, how the target is validated, and production's prompt builder."""

    fields: tuple[str, ...]
    list_fields: tuple[str, ...]
    text_fields: tuple[str, ...]
    prompt: Callable[[Sequence[tuple[int, str]]], tuple[str, str, dict, bool]]
    """pages -> (system prompt, user text, response schema, truncated): production's request."""
    typed: Callable[[str, str], Any] = lambda name, value: value
    validate: Callable[[dict], dict] | None = None
    quote: Callable[[str, Any, Sequence[tuple[int, str]]], tuple[int, str] | None] | None = None
    """(field, typed value, pages) -> (page number, quote) of the words that state the value."""
    spelled_fields: tuple[str, ...] | None = None
    """Fields the target copies as the document writes them (names, places): each value is
    matched to its span of the text (``evals.spelling``); None: every text field."""


@dataclass(frozen=True)
class Example:
    document_id: str
    source: str
    system: str
    text: str
    truncated: bool
    answer: dict
    full_text: str = ""
    sha256: str | None = None

    @property
    def content_hash(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()


def surface_form(token: str, text: str) -> str | None:
    """How the text spells a value or a Kleister token ('Nike_Inc.' -> 'NIKE, Inc.'), or None
    (``evals.spelling``: case, punctuation and spacing aside)."""
    return document_spelling(token, text)


def target(values: Mapping[str, Sequence[str]], schema: TargetSchema, value_format: str,
           text: str, unspelled: list[str] | None = None) -> dict:
    """The label as the schema's JSON: every field, lists as lists, nulls explicit. A value of
    a field copied as written (``spelled_fields``) takes the text's spelling; one the text never
    states is left out of the answer and appended to ``unspelled`` (``build_examples`` then
    leaves the document out and counts it)."""
    lists, texts = set(schema.list_fields), set(schema.text_fields)
    spelled = set(texts if schema.spelled_fields is None else schema.spelled_fields)
    missing = object()

    def one(name: str, value: str) -> Any:
        if name in spelled:
            found = document_spelling(value, text)
            if found is None:
                if unspelled is not None:
                    unspelled.append(f"{name}={value}")
                return missing
            return schema.typed(name, found)
        if value_format != "kleister":
            return schema.typed(name, value)
        if name in texts:  # a normal form such as '2_years': the words, not a spelling
            return value.replace("_", " ")
        return schema.typed(name, value)

    answer: dict[str, Any] = {}
    for name in schema.fields:
        made = [one(name, v) for v in values.get(name, ())]
        kept = [v for v in made if v is not missing]
        answer[name] = kept if name in lists else (kept[0] if kept else None)
    return schema.validate(answer) if schema.validate else answer


def evidence(fields: Mapping[str, Any], schema: TargetSchema,
             pages: Sequence[tuple[int, str]]) -> list[dict] | None:
    """One evidence item per value (the response schema's ``evidence``), None when a value is
    stated on no page."""
    if schema.quote is None:
        return []
    items = []
    for name in schema.fields:
        value = fields.get(name)
        values = value if isinstance(value, list) else [] if value is None else [value]
        for index, item in enumerate(values):
            found = schema.quote(name, item, pages)
            if found is None:
                return None
            page, quote = found
            items.append({"field": name, "value_index": index, "quote": quote, "page": page})
    return items


def check_target(target_answer: dict, response_schema: dict) -> None:
    """``ValueError`` unless ``target_answer`` is an instance of ``response_schema``."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(response_schema)
    errors = sorted(validator.iter_errors(target_answer), key=lambda e: list(e.path))
    if errors:
        raise ValueError("; ".join(f"{'/'.join(map(str, e.path)) or '(root)'}: {e.message}"
                                   for e in errors[:3]))


def system_text(system: str, response_schema: dict) -> str:
    """The tuning example's system text: production's system prompt, then its response schema."""
    return f"{system}\n\n{SCHEMA_HEADING}\n{json.dumps(response_schema, ensure_ascii=False)}"


def build_examples(documents: Iterable[FinetuneDocument],
                   schema_for: Callable[[str], TargetSchema | None]) -> tuple[list[Example], dict]:
    """Examples, and what was left out: a document without text (nothing to learn from), a label
    that does not cover every field, a schema that cannot be loaded, a target the schema refuses,
    a value no page states (its evidence cannot be written)."""
    out, skipped = [], {"no_text": 0, "partial_label": 0, "unknown_schema": 0,
                        "invalid_target": 0, "no_evidence": 0, "value_without_span": 0}
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
        unspelled: list[str] = []
        try:
            fields = target(values, schema, doc.value_format, full, unspelled)
        except ValueError:
            skipped["invalid_target"] += 1
            continue
        if unspelled:  # dropping the value would teach a wrong null or a missed party
            skipped["value_without_span"] += 1
            continue
        quotes = evidence(fields, schema, doc.pages)
        if quotes is None:
            skipped["no_evidence"] += 1
            continue
        answer = {"fields": fields, "evidence": quotes}
        try:
            check_target(answer, response_schema)
        except ValueError:
            skipped["invalid_target"] += 1
            continue
        out.append(Example(doc.document_id, doc.source, system_text(system, response_schema),
                           text, cut, answer, full, doc.sha256))
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
    test_percent: int = 0
    files: dict[str, str] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    truncated: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    groups: dict[str, list[str]] = field(default_factory=dict)
    splits: dict[str, list[dict]] = field(default_factory=dict)
    outputs: dict[str, dict] = field(default_factory=dict)
    """split -> the file written: path, SHA-256 of its bytes, rows (examples)."""

    @property
    def validation_documents(self) -> list[str]:
        return [d["document_id"] for d in self.splits.get("validation", [])]

    def to_dict(self) -> dict:
        return {"format": self.format, "files": self.files, "outputs": self.outputs,
                "counts": self.counts,
                "split_rule": f"documents grouped by document id and near-duplicate clusters "
                f"(MinHash over word shingles, estimated Jaccard >= {THRESHOLD}); with b = "
                f"int(sha256(the group's smallest document id)[:8], 16) % 100: validation when "
                f"b < {self.validation_percent}, test when b < "
                f"{self.validation_percent + self.test_percent}, else train; identical input "
                "texts are one example",
                "near_duplicate_groups": self.groups,
                "splits": self.splits,
                "truncated_documents": self.truncated, "warnings": self.warnings}


def write_set(examples: Sequence[Example], out: Path, file_format: str, *,
              validation_percent: int = 10, test_percent: int = 10,
              skipped: Mapping[str, int] | None = None) -> Manifest:
    """``out`` (train), ``<out stem>.validation.jsonl``, ``<out stem>.test.jsonl`` and
    ``<out stem>.manifest.json`` (its ``splits`` name each split's documents).

    Labelled examples win over confirmed ones with the same text; ties keep the first."""
    if file_format not in FORMATS:
        raise ValueError(f"format {file_format!r}: use one of {', '.join(FORMATS)}")
    ranked = sorted(examples, key=lambda e: (e.source != "labelled", e.document_id))
    unique: dict[str, Example] = {}
    for example in ranked:
        unique.setdefault(example.content_hash, example)
    kept = sorted(unique.values(), key=lambda e: e.document_id)
    groups = near_duplicate_groups({e.document_id: e.full_text or e.text for e in kept})
    paths = {"train": out, **{side: out.with_name(f"{out.stem}.{side}.jsonl")
                              for side in SPLITS if side != "train"}}
    manifest = Manifest(file_format, validation_percent, test_percent,
                        files={side: str(path) for side, path in paths.items()})
    sides: dict[str, list[Example]] = {side: [] for side in SPLITS}
    for example in kept:
        sides[side_of(groups[example.document_id], validation_percent, test_percent)].append(
            example)
    for side, path in paths.items():
        body = "".join(json.dumps(to_line(example, file_format), ensure_ascii=False) + "\n"
                       for example in sides[side]).encode("utf-8")
        path.write_bytes(body)
        manifest.outputs[side] = {"path": str(path), "sha256": hashlib.sha256(body).hexdigest(),
                                  "rows": len(sides[side])}
    clusters: dict[str, list[str]] = {}
    for document_id, key in groups.items():
        clusters.setdefault(key, []).append(document_id)
    manifest.groups = {k: sorted(v) for k, v in sorted(clusters.items()) if len(v) > 1}
    manifest.counts = {"candidates": len(examples), "duplicates_removed": len(examples) - len(unique),
                       **{side: len(sides[side]) for side in SPLITS},
                       "labelled": sum(e.source == "labelled" for e in kept),
                       "confirmed": sum(e.source == "confirmed" for e in kept),
                       "truncated": sum(e.truncated for e in kept),
                       "near_duplicate_groups": len(manifest.groups),
                       **{f"skipped_{k}": v for k, v in (skipped or {}).items()}}
    manifest.truncated = sorted(e.document_id for e in kept if e.truncated)
    manifest.splits = {side: [{"document_id": e.document_id, "sha256": e.sha256,
                               "group": groups[e.document_id]} for e in sides[side]]
                       for side in SPLITS}
    minimum = MINIMUM_EXAMPLES[file_format]
    if len(sides["train"]) < minimum:
        manifest.warnings.append(
            f"{len(sides['train'])} training examples: {file_format} tuning needs at least "
            f"{minimum}" + (" (100 or more recommended)" if file_format == "gemini" else ""))
    out.with_name(f"{out.stem}.manifest.json").write_text(
        json.dumps(manifest.to_dict(), indent=2) + "\n", encoding="utf-8")
    return manifest


def trained_documents(manifest: Mapping[str, Any]) -> tuple[frozenset[str], frozenset[str]]:
    """(SHA-256s, document ids) of a manifest's train and validation splits: what a model tuned
    on the set has seen. Its test split is what it may be scored on."""
    seen = [d for side in ("train", "validation") for d in manifest.get("splits", {}).get(side, [])]
    return (frozenset(d["sha256"] for d in seen if d.get("sha256")),
            frozenset(d["document_id"] for d in seen))
