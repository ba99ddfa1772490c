"""Fine-tuning sets from what the system really processed: labelled documents (or results a
user-chosen rule confirms) as JSONL in the Gemini supervised-tuning or the OpenAI chat format.

- input: the document's text as the model saw it (its pages in order, each under a
  ``--- page N ---`` line), cut at ``max_chars``; every cut is counted in the manifest;
- output: the labelled fields as one JSON object in the schema's shape (list fields as lists,
  others a value or null); Kleister-form values are turned back into text ('2_years' ->
  '2 years');
- split by content hash: SHA-256 of the input text decides train or validation, so a document,
  and any other with the same text, is on one side only; duplicates (same input text) are
  written once;
- a manifest beside the files: counts, the split rule, the limit, what was truncated.

The two shapes (the providers' documented tuning formats):

- gemini: ``{"systemInstruction": {"role": "system", "parts": [{"text": ...}]},
  "contents": [{"role": "user", "parts": [{"text": ...}]}, {"role": "model", "parts": [...]}]}``
- openai: ``{"messages": [{"role": "system", "content": ...}, {"role": "user", ...},
  {"role": "assistant", "content": ...}]}``
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Example", "build_examples", "split_of", "to_line", "write_set", "FORMATS",
           "SYSTEM_PROMPT"]

FORMATS = ("gemini", "openai")
SYSTEM_PROMPT = ("Extract the fields of the schema from the document. Answer with one JSON "
                 "object and nothing else; a field the document does not state is null (or [] "
                 "for a list).")


@dataclass(frozen=True)
class Example:
    document_id: str
    source: str  # labelled | confirmed
    text: str
    truncated: bool
    answer: dict

    @property
    def content_hash(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()


def split_of(content_hash: str, validation_percent: int) -> str:
    """train or validation, from the content hash alone: stable across runs and machines."""
    return "validation" if int(content_hash[:8], 16) % 100 < validation_percent else "train"


def document_text(pages: Sequence[tuple[int, str]], max_chars: int) -> tuple[str, bool]:
    text = "\n\n".join(f"--- page {number} ---\n{body}" for number, body in pages)
    return (text[:max_chars], True) if len(text) > max_chars else (text, False)


def answer(values: Mapping[str, Sequence[str]], list_fields: Iterable[str], value_format: str
           ) -> dict:
    """The label as the schema's JSON: lists stay lists, a scalar is its first value or null."""
    lists = set(list_fields)

    def text(value: str) -> str:
        return value.replace("_", " ") if value_format == "kleister" else value

    return {name: [text(v) for v in items] if name in lists else (
        text(items[0]) if items else None) for name, items in sorted(values.items())}


def build_examples(documents: Iterable[tuple[str, str, Sequence[tuple[int, str]], Mapping, str]],
                   *, list_fields: Iterable[str], max_chars: int) -> list[Example]:
    """(document_id, source, pages, values, value_format) -> examples; a document without
    text is skipped (nothing for a model to learn from)."""
    lists = tuple(list_fields)
    out = []
    for document_id, source, pages, values, value_format in documents:
        text, cut = document_text(pages, max_chars)
        if text.strip():
            out.append(Example(document_id, source, text, cut, answer(values, lists, value_format)))
    return out


def to_line(example: Example, file_format: str) -> dict:
    output = json.dumps(example.answer, ensure_ascii=False, sort_keys=True)
    if file_format == "gemini":
        return {"systemInstruction": {"role": "system", "parts": [{"text": SYSTEM_PROMPT}]},
                "contents": [{"role": "user", "parts": [{"text": example.text}]},
                             {"role": "model", "parts": [{"text": output}]}]}
    if file_format == "openai":
        return {"messages": [{"role": "system", "content": SYSTEM_PROMPT},
                             {"role": "user", "content": example.text},
                             {"role": "assistant", "content": output}]}
    raise ValueError(f"format {file_format!r}: use one of {', '.join(FORMATS)}")


@dataclass
class Manifest:
    format: str
    max_chars: int
    validation_percent: int
    files: dict[str, str] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    truncated: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"format": self.format, "files": self.files, "counts": self.counts,
                "split_rule": f"validation when int(sha256(input text)[:8], 16) % 100 < "
                f"{self.validation_percent}, else train; identical input texts are one example",
                "max_chars": self.max_chars, "truncated_documents": self.truncated,
                "system_prompt": SYSTEM_PROMPT}


def write_set(examples: Sequence[Example], out: Path, file_format: str, *, max_chars: int,
              validation_percent: int = 10) -> Manifest:
    """``out`` (train), ``<out stem>.validation.jsonl`` and ``<out stem>.manifest.json``.

    Labelled examples win over confirmed ones with the same text; ties keep the first."""
    ranked = sorted(examples, key=lambda e: (e.source != "labelled", e.document_id))
    unique: dict[str, Example] = {}
    for example in ranked:
        unique.setdefault(example.content_hash, example)
    validation = out.with_name(f"{out.stem}.validation.jsonl")
    manifest = Manifest(file_format, max_chars, validation_percent,
                        files={"train": str(out), "validation": str(validation)})
    sides: dict[str, list[Example]] = {"train": [], "validation": []}
    for content_hash, example in sorted(unique.items()):
        sides[split_of(content_hash, validation_percent)].append(example)
    for side, path in (("train", out), ("validation", validation)):
        with path.open("w", encoding="utf-8") as handle:
            for example in sides[side]:
                handle.write(json.dumps(to_line(example, file_format), ensure_ascii=False) + "\n")
    manifest.counts = {"candidates": len(examples), "duplicates_removed": len(examples) - len(unique),
                       "train": len(sides["train"]), "validation": len(sides["validation"]),
                       "labelled": sum(e.source == "labelled" for e in unique.values()),
                       "confirmed": sum(e.source == "confirmed" for e in unique.values()),
                       "truncated": sum(e.truncated for e in unique.values())}
    manifest.truncated = sorted(e.document_id for e in unique.values() if e.truncated)
    out.with_name(f"{out.stem}.manifest.json").write_text(
        json.dumps(manifest.to_dict(), indent=2) + "\n", encoding="utf-8")
    return manifest
