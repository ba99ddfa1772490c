"""What the evals package needs to know about schemas and stored pages, wired in one place.

``evals`` imports only ``lake``: it must not know how the NDA schema's values become the
benchmark's tokens, which fields are lists, or where a job's pages are stored. The command
(`doclake evals ...`) and the weekly-evals Lambda both take that knowledge from here, so the two
score with the same rules.
"""

from __future__ import annotations

from collections.abc import Callable

from extract.ports import ObjectStore
from lake.layout import pages_prefix

__all__ = ["list_fields", "normalizers", "page_reader", "schema_fields"]


def _kleister_normalizer(field: str, value: str) -> str:
    from extract.fields.schemas import kleister_value

    return kleister_value(value)


def normalizers() -> dict:
    """How each schema's values become tokens: the NDA schema in the benchmark's form; other
    schemas (MODULE:CLASS) get ``evals.scoring.plain_value``."""
    return {"nda": _kleister_normalizer}


def list_fields() -> tuple[str, ...]:
    """List fields of the built-in schema (a user schema's lists are read from its labels)."""
    from extract.fields.schemas import NdaFields

    return tuple(name for name, info in NdaFields.model_fields.items()
                 if getattr(info.annotation, "__origin__", None) is list)


def schema_fields() -> tuple[str, ...]:
    """The built-in schema's fields, in order: the labelling sheet's columns."""
    from extract.fields.schemas import NdaFields

    return tuple(NdaFields.model_fields)


def page_reader(store: ObjectStore) -> Callable[[str, str], list[tuple[int, str]]]:
    """(document_id, job_id) -> the job's stored pages, in order, from ``store``."""

    def read(document_id: str, job_id: str) -> list[tuple[int, str]]:
        keys = sorted(store.list(pages_prefix(document_id, job_id)))
        return [(int(key.rsplit("/", 1)[-1].split(".")[0]), store.get(key).decode("utf-8"))
                for key in keys if key.endswith(".md")]

    return read
