"""Table schemas generated from the event models: Arrow for Parquet, DuckDB and Glue types.

One mapping from Python annotations to column types; every consumer (the writer, the DuckDB
views, the Glue table definitions) reads it from here, so the three cannot drift apart.
"""

from __future__ import annotations

import functools
import types
import typing
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from lake.events import EVENT_TYPES, Event

__all__ = ["ENVELOPE_FIELDS", "Column", "columns", "arrow_schema", "to_table",
           "convert_lists_without_pandas", "from_row", "arrow_fingerprint"]

if TYPE_CHECKING:
    import pyarrow as pa

# Envelope columns come first in every table, in this order.
ENVELOPE_FIELDS = (
    "schema_version",
    "event_id",
    "event_type",
    "occurred_at",
    "document_id",
    "job_id",
    "unit_id",
    "attempt",
    "worker",
)


@dataclass(frozen=True)
class Column:
    """One column of an event table, in the three type systems the lake speaks.

    The Arrow type is worked out on first use: the DuckDB views need only ``duckdb``, and
    ``doclake sql`` answers without importing pyarrow (~0.2 s with numpy; issue 26)."""

    name: str
    python: type
    is_list: bool
    duckdb: str
    glue: str

    @functools.cached_property
    def arrow(self) -> pa.DataType:
        import pyarrow as pa

        scalar = _arrow_scalars()[self.python]
        return pa.list_(scalar) if self.is_list else scalar


@functools.cache
def _arrow_scalars() -> dict[type, pa.DataType]:
    """The Arrow type of each scalar of ``_SCALARS``."""
    import pyarrow as pa

    return {str: pa.string(), int: pa.int64(), float: pa.float64(), bool: pa.bool_(),
            datetime: pa.timestamp("us", tz="UTC")}


_SCALARS: dict[type, tuple[str, str]] = {  # DuckDB and Glue; Arrow in ``_arrow_scalars``
    str: ("VARCHAR", "string"),
    int: ("BIGINT", "bigint"),
    float: ("DOUBLE", "double"),
    bool: ("BOOLEAN", "boolean"),
    datetime: ("TIMESTAMPTZ", "timestamp"),
}


def _column(name: str, annotation: Any) -> Column:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(inner) != 1:
            raise TypeError(f"{name}: only Optional[X] unions are supported, got {annotation}")
        return _column(name, inner[0])
    if origin is list:
        (item,) = typing.get_args(annotation)
        duck, glue = _SCALARS[item]
        return Column(name, item, True, f"{duck}[]", f"array<{glue}>")
    if annotation in _SCALARS:
        duck, glue = _SCALARS[annotation]
        return Column(name, annotation, False, duck, glue)
    raise TypeError(f"{name}: no lake type for {annotation!r}")


def columns(event_cls: type[Event]) -> list[Column]:
    """The columns of one event type's table: the envelope, then the type's own fields."""
    hints = typing.get_type_hints(event_cls)
    hints["event_type"] = str
    own = [n for n in event_cls.model_fields if n not in ENVELOPE_FIELDS]
    return [_column(name, hints[name]) for name in (*ENVELOPE_FIELDS, *own)]


@functools.cache
def arrow_schema(event_cls: type[Event]) -> pa.Schema:
    """The Parquet schema of one event type, with the schema version in its metadata.

    Cached: the writer asks for it on every flush, and it only changes with the code."""
    import pyarrow as pa

    from lake.events import SCHEMA_VERSION

    fields = [pa.field(c.name, c.arrow, nullable=c.name not in ("event_id", "event_type"))
              for c in columns(event_cls)]
    return pa.schema(fields, metadata={b"doclake.schema_version": str(SCHEMA_VERSION).encode()})


def to_table(events: list[Event]) -> pa.Table:
    """Events of one type as an Arrow table in that type's schema."""
    if not events:
        raise ValueError("to_table needs at least one event")
    kinds = {type(e) for e in events}
    if len(kinds) != 1:
        raise ValueError(f"to_table takes events of one type, got {sorted(k.__name__ for k in kinds)}")
    cls = kinds.pop()
    import pyarrow as pa

    schema = arrow_schema(cls)
    # Column by column straight from the attributes: ``model_dump`` per event cost more than
    # encoding and writing the file (docs/lake.md).
    # (``__dict__`` holds a pydantic model's field values; reading it is ~5x faster than getattr.)
    values = [e.__dict__ for e in events]
    arrays = [pa.array([cls.event_type] * len(events), kind) if name == "event_type"
              else pa.array([v[name] for v in values], kind)
              for name, kind in zip(schema.names, schema.types, strict=True)]
    return pa.Table.from_arrays(arrays, schema=schema)


@functools.cache  # once a process: later runtimes (a test session makes hundreds) start none
class _NoPandas:
    """A meta path finder that refuses pandas (``convert_lists_without_pandas``)."""

    @staticmethod
    def find_spec(name: str, path=None, target=None):
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError(f"no module named {name!r} (for pyarrow's first list)",
                                      name=name)
        return None


def convert_lists_without_pandas() -> None:
    """Make pyarrow's first conversion of a Python list now, without importing pandas.

    On its first ``pa.array`` of a list, pyarrow imports pandas, only to ask whether the list is
    a pandas object: 0.6 to 1.2 s of CPU in the process that writes events, every run, for a
    library no runtime path uses (most of a one-document run's 1.1 s of main-process CPU were
    imports and this). Here that first conversion is made while a finder first on
    ``sys.meta_path`` refuses pandas: pyarrow records that it has none and never asks again for
    a list. Anything that needs pandas later (``to_pandas``, ``from_pandas``) imports it then:
    pyarrow retries the import on such a call. A process that already imported pandas only
    converts."""
    import sys

    import pyarrow as pa

    if "pandas" in sys.modules:
        pa.array([0])
        return
    finder = _NoPandas()
    sys.meta_path.insert(0, finder)
    try:
        pa.array([0])
    finally:
        sys.meta_path.remove(finder)


def from_row(row: dict[str, Any]) -> Event:
    """Rebuild an event model from a row read back from Parquet (round-trip of ``to_table``)."""
    cls = EVENT_TYPES[row["event_type"]]
    data = {k: v for k, v in row.items() if k in cls.model_fields and v is not None}
    return cls(**data)


@functools.lru_cache(maxsize=256)
def _fingerprint_of(schema_text: str) -> str:
    from lake.layout import schema_fingerprint

    pairs = [p.rsplit(":", 1) for p in schema_text.split("\n")]
    return schema_fingerprint([n for n, _ in pairs], [t for _, t in pairs])


def arrow_fingerprint(schema: pa.Schema) -> str:
    """``lake.layout.schema_fingerprint`` of an Arrow schema (names and types, in order)."""
    return _fingerprint_of("\n".join(f"{f.name}:{f.type}" for f in schema))
