"""What produced a result, as one string: the ``model_version`` every result records.

A version that names only the model ("gemini-2.5-flash") merges a prompt change, a schema
description change or a code change into the old group, so a regression cannot be seen. Here a
version is the model plus a short hash of everything else that decides the answer:

- an LLM strategy: the system prompt, the schema's JSON (field descriptions included: they are the
  per-field instructions) and the strategy's code (its module's source and the prompt module's);
- the rules strategy: the shipped model file's bytes and the candidate generators' code.

Failed results carry the same version (``strategy_version``), so a model's failures count in its
own group instead of a group of their own.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from collections.abc import Iterable
from functools import cache
from pathlib import Path

from pydantic import BaseModel

__all__ = ["code_digest", "llm_version", "rules_version", "schema_json"]

DIGEST_CHARS = 10


def _digest(parts: Iterable[bytes]) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(hashlib.sha256(part).digest())
    return h.hexdigest()[:DIGEST_CHARS]


@cache
def code_digest(*modules: str) -> str:
    """A hash of these modules' source files (a code change, a new version), read from the
    files, not imported: the rules' version is recorded in a process that never runs them."""
    sources = []
    for name in modules:
        spec = importlib.util.find_spec(name)
        source = spec.loader.get_source(name) if spec and spec.loader else None
        if source is None:
            raise ModuleNotFoundError(f"no source for {name}", name=name)
        sources.append(source.encode("utf-8"))
    return _digest(sources)


def schema_json(schema: type[BaseModel]) -> str:
    """The schema as the model reads it: pydantic's JSON schema, descriptions included."""
    return json.dumps(schema.model_json_schema(), sort_keys=True, ensure_ascii=False)


def llm_version(model: str, system_prompt: str, schema: type[BaseModel], code: str) -> str:
    """``<model>+<hash of system prompt, schema JSON, code>``."""
    digest = _digest([system_prompt.encode("utf-8"), schema_json(schema).encode("utf-8"),
                      code.encode("utf-8")])
    return f"{model}+{digest}"


def rules_version(model_name: str, model_file: Path | bytes, code: str) -> str:
    """``rules-<model's own version>+<hash of the model file and the generators' code>``."""
    data = model_file if isinstance(model_file, bytes) else model_file.read_bytes()
    return f"rules-{model_name}+{_digest([data, code.encode('utf-8')])}"
