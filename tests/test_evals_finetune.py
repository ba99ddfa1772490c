"""Fine-tuning sets: each format's JSONL shape, the split by content hash with no leakage,
duplicates written once, truncation recorded; failure pages found in the text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evals.failures import find_page
from evals.finetune import build_examples, split_of, write_set


def _documents(n: int = 60, duplicate_every: int = 10):
    docs = []
    for i in range(n):
        body = f"Agreement {i // duplicate_every if i % duplicate_every == 0 else i} between A and B"
        docs.append((f"d{i:03d}", "labelled", [(1, body), (2, "Governed by New York law")],
                     {"party": ("Acme_Inc.", "Beta"), "term": ("2_years",), "jurisdiction": ()},
                     "kleister"))
    return docs


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _check_gemini(line: dict) -> str:
    assert set(line) <= {"systemInstruction", "contents"}
    assert line["systemInstruction"]["parts"][0]["text"]
    roles = [c["role"] for c in line["contents"]]
    assert roles == ["user", "model"]
    for content in line["contents"]:
        assert set(content) == {"role", "parts"}
        assert all(set(p) == {"text"} and isinstance(p["text"], str) for p in content["parts"])
    json.loads(line["contents"][-1]["parts"][0]["text"])
    return line["contents"][0]["parts"][0]["text"]


def _check_openai(line: dict) -> str:
    assert set(line) == {"messages"}
    assert [m["role"] for m in line["messages"]] == ["system", "user", "assistant"]
    assert all(set(m) == {"role", "content"} and isinstance(m["content"], str)
               for m in line["messages"])
    json.loads(line["messages"][-1]["content"])
    return line["messages"][1]["content"]


@pytest.mark.parametrize(("file_format", "check"), [("gemini", _check_gemini),
                                                     ("openai", _check_openai)])
def test_each_format_has_its_shape_and_the_split_does_not_leak(tmp_path, file_format, check):
    examples = build_examples(_documents(), list_fields=["party"], max_chars=10_000)
    out = tmp_path / "set.jsonl"
    manifest = write_set(examples, out, file_format, max_chars=10_000, validation_percent=30)
    train = [check(line) for line in _lines(out)]
    validation = [check(line) for line in _lines(tmp_path / "set.validation.jsonl")]
    assert not set(train) & set(validation)  # no text on both sides
    assert len(set(train)) == len(train) and len(set(validation)) == len(validation)
    assert manifest.counts["duplicates_removed"] == 5  # d010..d050 repeat the texts of d001..d005
    assert manifest.counts["train"] + manifest.counts["validation"] == 55
    assert manifest.counts["validation"] > 0 and manifest.counts["train"] > 0
    written = json.loads((tmp_path / "set.manifest.json").read_text())
    assert "sha256" in written["split_rule"] and written["counts"] == manifest.counts


def test_the_answer_is_the_schema_json_and_kleister_tokens_become_text(tmp_path):
    (example,) = build_examples(_documents(1), list_fields=["party"], max_chars=10_000)
    assert example.answer == {"jurisdiction": None, "party": ["Acme Inc.", "Beta"],
                              "term": "2 years"}


def test_truncation_is_recorded():
    (example,) = build_examples(_documents(1), list_fields=["party"], max_chars=20)
    assert example.truncated and len(example.text) == 20


def test_the_split_depends_on_the_content_hash_only():
    assert {split_of("00000000" + "f" * 56, 10), split_of("ffffffff" + "0" * 56, 10)} == {
        "validation", "train"}
    assert split_of("0a" * 32, 10) == split_of("0a" * 32, 10)


def test_a_missed_value_is_found_on_its_page_loosely():
    pages = [(1, "Cover"), (2, "between NIKE, Inc. and Leonard Green & Partners, L.P.")]
    assert find_page("Nike_Inc.", pages) == 2
    assert find_page("Leonard_Green_and_Partners_L.P.", pages) == 2
    assert find_page("2020-01-01", pages) is None
