"""Schemas: the built-in NDA schema's values and Kleister tokens, and ``--fields`` loading of
``nda``, ``none`` and a user's own pydantic model."""

from __future__ import annotations

import sys
from datetime import date

import pytest
from pydantic import ValidationError

from extract.fields.base import field_values
from extract.fields.schemas import NdaFields, SchemaLoadError, kleister_value, load_schema


def test_nda_record_becomes_kleister_tokens():
    record = NdaFields(effective_date="2001-04-18", jurisdiction="NEW YORK",
                       party=["Leonard Green & Partners, L.P.", "Coupa Software Incorporated"],
                       term="Two Years")
    assert record.kleister_tokens() == [
        "effective_date=2001-04-18", "jurisdiction=New_York",
        "party=Leonard_Green_and_Partners_LP", "party=Coupa_Software_Inc.", "term=2_years"]


@pytest.mark.parametrize(("raw", "token"), [
    ("Nike, Inc.", "Nike_Inc."), ("Nike Inc", "Nike_Inc."),
    ("R. J. Seifert Enterprises", "R._J._Seifert_Enterprises"),
    ("Verso Paper Holdings, L.L.C.", "Verso_Paper_Holdings_LLC"),
    ("Wynn Resorts, Limited", "Wynn_Resorts_Ltd."),
    ("Sears, Roebuck & Co.", "Sears_Roebuck_and_Co."),
    # the benchmark's gold leaves out a leading "First" (three of three in the train split)
    ("First Oak Brook Bancshares, Inc.", "Oak_Brook_Bancshares_Inc."),
    ("The First Marblehead Corporation", "The_Marblehead_Corporation"),
    ("First Inc.", "First_Inc."),  # a one-word name keeps it
    ("Firstwave Technologies, Inc.", "Firstwave_Technologies_Inc."),
])
def test_kleister_value_spellings(raw, token):
    assert kleister_value(raw) == token


def test_term_is_normalised_or_refused():
    assert NdaFields(term="1 years").term == "1 year"
    assert NdaFields(term="18_months").term == "18 months"
    with pytest.raises(ValidationError, match="term"):
        NdaFields(term="until terminated")


def test_parties_are_kept_once_by_token():
    record = NdaFields(party=["NIKE, Inc.", "Nike Inc.", " ", "Eric Sprunk"])
    assert record.party == ["NIKE, Inc.", "Eric Sprunk"]


def test_empty_record_has_no_tokens_and_no_field_values():
    assert NdaFields().kleister_tokens() == []
    assert field_values(NdaFields()) == []


def test_field_values_flatten_lists_with_their_index():
    rows = field_values(NdaFields(effective_date=date(2020, 1, 2), party=["A Inc.", "B"]))
    assert [(r.field, r.value, r.value_index) for r in rows] == [
        ("effective_date", "2020-01-02", 0), ("party", "A Inc.", 0), ("party", "B", 1)]


def test_descriptions_are_there_for_an_llm():
    schema = NdaFields.model_json_schema()
    assert all(len(prop["description"]) > 40 for prop in schema["properties"].values())


def test_builtin_names():
    assert load_schema("nda") is NdaFields
    assert load_schema(" NDA ") is NdaFields
    assert load_schema("none") is None


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    (tmp_path / "my_schemas.py").write_text(
        "from pydantic import BaseModel\n"
        "class Invoice(BaseModel):\n    number: str\n    total: float\n"
        "NOT_A_MODEL = 3\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "my_schemas"
    sys.modules.pop("my_schemas", None)


def test_user_schema_loads_from_module_and_class(user_module):
    schema = load_schema(f"{user_module}:Invoice")
    assert schema.__name__ == "Invoice"
    assert schema(number="7", total=1.5).total == 1.5


@pytest.mark.parametrize(("spec", "message"), [
    ("invoice", "use nda, none or MODULE:CLASS"),
    ("no_such_module_xyz:Invoice", "cannot import module"),
    ("my_schemas:Missing", "has no 'Missing'"),
    ("my_schemas:NOT_A_MODEL", "not a pydantic model"),
])
def test_bad_specs_say_what_is_wrong(user_module, spec, message):
    with pytest.raises(SchemaLoadError, match=message):
        load_schema(spec)
