"""What the evals package needs to know about schemas, prompts and stored pages, wired in one place.

``evals`` imports only ``lake``: it must not know how the NDA schema's values become the
benchmark's tokens, which fields are lists, how a ``MODULE:CLASS`` schema types its values, what
prompt production sends, what the shipped model was trained on, or where a job's pages are
stored. The command (`doclake evals ...`) and the weekly-evals Lambda both take that knowledge
from here, so the two score with the same rules.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from functools import cache

from extract.ports import ObjectStore
from lake.layout import pages_prefix

__all__ = ["SchemaNormalizers", "list_fields", "normalizers", "page_reader", "schema_fields",
           "target_schema", "training_sets"]


def _kleister_normalizer(field: str, value: str) -> str:
    from extract.fields.schemas import kleister_value

    return kleister_value(value)


@cache
def _schema(name: str):
    """The schema class a result names (``nda`` or ``MODULE:CLASS``), None when it cannot be
    loaded here (a schema module not on this machine's path)."""
    from extract.fields.schemas import SchemaLoadError, load_schema

    try:
        return load_schema(name)
    except SchemaLoadError:
        return None


class SchemaNormalizers(Mapping):
    """Schema name -> how its values become tokens: the NDA schema in the benchmark's form;
    any other schema by its own field types (``evals.canonical``), loaded when first asked."""

    def __getitem__(self, name: str):
        if name == "nda":
            return _kleister_normalizer
        schema = _schema(name)
        if schema is None:
            raise KeyError(name)
        return _normalizer_for(schema)

    def __iter__(self) -> Iterator[str]:
        return iter(("nda",))

    def __len__(self) -> int:
        return 1


@cache
def _normalizer_for(schema):
    from evals.canonical import schema_normalizer

    return schema_normalizer(schema)


def normalizers() -> Mapping:
    return SchemaNormalizers()


def list_fields(schema_name: str = "nda") -> tuple[str, ...]:
    """The schema's list fields (a user schema's too)."""
    from evals.canonical import list_fields as lists

    schema = _schema(schema_name)
    return lists(schema) if schema is not None else ()


def schema_fields(schema_name: str = "nda") -> tuple[str, ...]:
    """The schema's fields, in order: the labelling sheet's rows, a target's keys."""
    schema = _schema(schema_name)
    return tuple(schema.model_fields) if schema is not None else ()


def target_schema(schema_name: str, settings=None):
    """What a fine-tuning set needs to know about one schema (``evals.finetune.TargetSchema``);
    None when the schema cannot be loaded here. The request is built by the single-pass
    strategy's settings object (``settings``, default production's ``SETTINGS``): its system
    prompt, ``max_chars`` and response schema; each value's evidence quote is found by
    ``extract.fields.quotes``, the test the LLM strategies apply to a model's quotes."""
    from evals.canonical import item_type, typed_value
    from evals.canonical import list_fields as lists
    from evals.finetune import TargetSchema
    from extract.fields.base import PageText
    from extract.fields.llm import single_pass
    from extract.fields.quotes import quote_span

    schema = _schema(schema_name)
    if schema is None:
        return None

    def prompt(pages):
        chosen = settings or single_pass.SETTINGS
        texts = [PageText(n, t) for n, t in pages]
        built = chosen.request(texts, schema)
        return (built.system or "", built.text, built.response_schema or {},
                chosen.truncated(texts))

    def validate(answer: dict) -> dict:
        from pydantic import ValidationError

        try:
            return schema.model_validate(answer).model_dump(mode="json")
        except ValidationError as error:
            raise ValueError(str(error)) from None

    def quote(name: str, value, pages):
        texts = [PageText(n, t) for n, t in pages]
        found = quote_span(schema, name, value, texts)
        if found is None:
            return None
        number, start, end = found
        return number, next(p.text for p in texts if p.number == number)[start:end]

    text_fields = tuple(name for name, info in schema.model_fields.items()
                        if item_type(info.annotation) is str)
    # the NDA's names and places are copied as written; its term is a normal form ('2 years')
    spelled = ("jurisdiction", "party") if schema_name == "nda" else None
    return TargetSchema(tuple(schema.model_fields), lists(schema), text_fields, prompt,
                        lambda name, value: typed_value(schema, name, value), validate, quote,
                        spelled)


def training_sets() -> list:
    """The shipped rules model's training documents (``nda_model.training.json``, written by
    `doclake fields train` beside the model): all 254 of the Kleister NDA train split."""
    from evals.score_run import TrainingSet
    from extract.fields.rules.shipped import MODEL_PATH

    path = MODEL_PATH.with_name(f"{MODEL_PATH.stem}.training.json")
    if not path.exists():
        return []
    data = json.loads(path.read_text(encoding="utf-8"))
    docs = data.get("documents", [])
    return [TrainingSet(f"rules-{data['model_version']}",
                        frozenset(d["sha256"] for d in docs if d.get("sha256")),
                        frozenset(d["name"] for d in docs),
                        f"{len(docs)} documents of {data.get('split', 'its split')}")]


def page_reader(store: ObjectStore) -> Callable[[str, str], list[tuple[int, str]]]:
    """(document_id, job_id) -> the job's stored pages, in order, from ``store``."""

    def read(document_id: str, job_id: str) -> list[tuple[int, str]]:
        keys = [key for key in store.list(pages_prefix(document_id, job_id))
                if key.endswith(".md")]
        numbered = sorted((int(key.rsplit("/", 1)[-1].split(".")[0]), key) for key in keys)
        return [(number, store.get(key).decode("utf-8")) for number, key in numbered]

    return read
