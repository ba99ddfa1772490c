"""Values compared by what they mean under the schema's types, for any pydantic schema.

Results store values as text written one way (``str(1200.0)`` -> ``"1200.0"``, a nested model by
``model_dump_json()``) and labels another (``json.dumps`` -> ``"1200"``, spaced JSON), so a text
comparison scores a correct number or a correct nested item as wrong. Here each field's type is
read from the schema class and both sides are parsed by it (pydantic's ``TypeAdapter``, lax
mode: ``"1200.0"`` is a number, ``"2020-01-01"`` a date, ``"yes"`` a boolean) and written back
one way: numbers without a trailing ``.0``, dates in ISO 8601, booleans ``true``/``false``,
nested models and dicts as JSON with sorted keys and no spaces. A text field keeps its words
(whitespace runs become ``_``, the token separator); a value the type refuses is compared as
text, so a wrong value stays wrong rather than crashing the run.

The schema class comes from the caller (``infra.evals_wiring`` loads ``MODULE:CLASS``): this
package imports no extractor.
"""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

__all__ = ["canonical_json", "field_names", "item_type", "list_fields", "schema_normalizer",
           "typed_value"]


def _unwrap_optional(annotation: Any) -> Any:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return _unwrap_optional(args[0])
    return annotation


def _is_list(annotation: Any) -> bool:
    return typing.get_origin(_unwrap_optional(annotation)) in (list, tuple, set, frozenset)


def item_type(annotation: Any) -> Any:
    """The type of one value: a list field's item type, else the field's type less ``None``."""
    annotation = _unwrap_optional(annotation)
    if _is_list(annotation):
        args = typing.get_args(annotation)
        return _unwrap_optional(args[0]) if args else Any
    return annotation


def field_names(schema: type[BaseModel]) -> tuple[str, ...]:
    return tuple(schema.model_fields)


def list_fields(schema: type[BaseModel]) -> tuple[str, ...]:
    """The fields whose value is a list (one label or result row per item)."""
    return tuple(name for name, info in schema.model_fields.items() if _is_list(info.annotation))


def _plain(value: Any) -> Any:
    """JSON data with integral floats as ints and Decimals as numbers, recursively."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, float | Decimal):
        number = float(value)
        return int(number) if number.is_integer() else number
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def canonical_json(value: Any) -> str:
    return json.dumps(_plain(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _is_text(kind: Any) -> bool:
    return kind is str or kind is Any


def _parse(adapter: TypeAdapter, text: str) -> Any:
    """The value under its type: JSON first (numbers, booleans, objects), then the text itself
    (a date, a string-typed enum)."""
    try:
        return adapter.validate_json(text)
    except ValidationError:
        return adapter.validate_python(text)


def _converter(annotation: Any) -> Callable[[str], Any] | None:
    """text -> the value as JSON data under the field's item type; None for a text field."""
    kind = item_type(annotation)
    if _is_text(kind):
        return None
    adapter = TypeAdapter(kind)

    def convert(text: str) -> Any:
        return adapter.dump_python(_parse(adapter, text), mode="json")

    return convert


def schema_normalizer(schema: type[BaseModel], text: Callable[[str, str], str] | None = None
                      ) -> Callable[[str, str], str]:
    """(field, value) -> the value's canonical token under ``schema``; ``text`` handles text
    fields (default: whitespace runs become '_')."""
    converters = {name: _converter(info.annotation) for name, info in schema.model_fields.items()}

    def normalize(name: str, value: str) -> str:
        convert = converters.get(name)
        if convert is not None:
            try:
                data = convert(value)
            except (ValidationError, ValueError, TypeError):
                data = None
            if isinstance(data, str):  # a date, an enum's value: one spelling already
                return "_".join(data.split())
            if data is not None:
                return canonical_json(data)
        return text(name, value) if text else "_".join(value.split())

    return normalize


def typed_value(schema: type[BaseModel], name: str, value: str) -> Any:
    """A stored text value as the schema's JSON would hold it (a number as a number, a nested
    model as an object), for a fine-tuning target; the text when the type refuses it."""
    info = schema.model_fields.get(name)
    convert = _converter(info.annotation) if info is not None else None
    if convert is None:
        return value
    try:
        return _plain(convert(value))
    except (ValidationError, ValueError, TypeError):
        return value
