"""The labelling sample: every stratum represented, n respected, and the sheet imports as is."""

from __future__ import annotations

from evals.labels import parse_csv
from evals.sample import stratified, write_sheet


def _candidates():
    rows = []
    for i in range(40):
        rows.append({"document_id": f"d{i:02d}", "model_version": "v2" if i < 4 else "v1",
                     "strategy": "rules", "detected_format": "xlsx" if i == 39 else "pdf",
                     "pages": 3 if i % 2 else 50, "values": {"party": [("Acme", 1)]}})
    return rows


def test_every_stratum_gets_a_document_and_n_is_respected():
    picked = stratified(_candidates(), 8, seed=1)
    assert len(picked) == 8 == len({p["document_id"] for p in picked})
    strata = {(p["model_version"], p["detected_format"], p["pages"]) for p in picked}
    assert {("v2", "pdf", 3), ("v2", "pdf", 50), ("v1", "xlsx", 3)} <= strata
    assert stratified(_candidates(), 8, seed=1) == picked  # reproducible


def test_the_sheet_imports_as_labels(tmp_path):
    sheet = tmp_path / "sheet.csv"
    write_sheet(sheet, stratified(_candidates(), 2), ["party", "term"], blind=False)
    labels = parse_csv(sheet)
    assert len(labels) == 2
    assert all(dict(x.values) == {"party": ("Acme",), "term": ()} for x in labels)


def test_a_custom_schemas_fields_make_its_rows(tmp_path):
    from infra import evals_wiring

    sheet = tmp_path / "sheet.csv"
    row = {"document_id": "d1", "model_version": "m", "strategy": "single-pass",
           "schema_name": "support.invoice_schema:Invoice", "values": {"total": [("1200.0", 1)]}}
    write_sheet(sheet, [row], lambda r: evals_wiring.schema_fields(r["schema_name"]))
    (label,) = parse_csv(sheet)
    assert dict(label.values) == {"total": ("1200.0",), "issued": (), "paid": (), "buyer": (),
                                  "items": ()}
