"""A schema applies to the documents it describes: the NDA schema's values go to NDAs only.

On a mixed folder (files of the shared corpus that used to get NDA values, beside training NDAs)
``doclake run`` settles every non-NDA ``not_applicable`` with no values and its score, and every
NDA ``succeeded`` with values; the scorer itself on self-made texts; a schema with no kind applies
to everything, one naming an unknown kind is refused."""

from __future__ import annotations

import json
import shutil
from typing import ClassVar

import pytest
from conftest import CORPUS, KLEISTER
from pydantic import BaseModel
from test_fields_cli import invoke, sql

from extract.errors import TerminalError
from extract.fields.base import PageText
from extract.fields.kinds import THRESHOLD, applicability, nda_score
from extract.fields.schemas import NdaFields

# Non-NDAs that the NDA schema used to fill (a date from a spreadsheet, a state from a paper).
NOT_NDAS = ["ods/calamine_date.ods", "csv/frictionless_table_10x10k.csv",
            "doc/poi_word2_not_ole.doc", "pdf_text/tracemonkey_14p_twocolumn.pdf",
            "pdf_text/tamreview_23p_garbled_textlayer.pdf"]
NDAS = ["c6d4a02258909dfd134093de86f99327.pdf", "c8320bae68768cef9ac921bf62997f05.pdf",
        "c7012e8f9e3b200fe5f1f379ad0bce4b.pdf"]

NDA_TEXT = ("MUTUAL NON-DISCLOSURE AGREEMENT. This Agreement is made as of May 1, 2019 between "
            "Acme, Inc. and Beta LLC. Each party may disclose Confidential Information to the "
            "other. The Recipient shall not disclose the Confidential Information. This "
            "Agreement is governed by the laws of the State of Ohio.")
INVOICE = "INVOICE 2291. Date: May 1, 2019. Bill to: Acme, Inc., Ohio. Total due: $1,200."
LEASE = ("LEASE AGREEMENT between Landlord and Tenant. The Tenant shall pay rent monthly. This "
         "Agreement is governed by the laws of the State of Texas. Notices in writing.")


@pytest.mark.skipif(not (CORPUS.is_dir() and KLEISTER.is_dir()),
                    reason="the shared corpus or the Kleister split is not here")
def test_on_a_mixed_folder_only_ndas_get_nda_values(tmp_path):
    docs, home = tmp_path / "docs", str(tmp_path / "home")
    docs.mkdir()
    for path in NOT_NDAS:
        shutil.copy(CORPUS / path, docs / path.rsplit("/", 1)[1])
    for name in NDAS:
        shutil.copy(KLEISTER / name, docs / name)
    result = invoke("run", str(docs), "--home", home, "--fields", "nda")
    assert result.exit_code == 0, result.output
    rows = {r["source_name"]: r for r in sql(
        home, "SELECT d.source_name, r.status, r.applies, r.applicability_score, r.party, "
        "r.effective_date, r.jurisdiction FROM results r JOIN documents d USING (document_id)")}
    assert set(rows) == {p.rsplit("/", 1)[1] for p in NOT_NDAS} | set(NDAS)
    for path in NOT_NDAS:
        row = rows[path.rsplit("/", 1)[1]]
        assert (row["status"], row["applies"]) == ("not_applicable", False), row
        assert row["applicability_score"] < THRESHOLD
        assert not (row["party"] or row["effective_date"] or row["jurisdiction"]), row
    for name in NDAS:
        assert (rows[name]["status"], rows[name]["applies"]) == ("succeeded", True), rows[name]
        assert rows[name]["applicability_score"] >= THRESHOLD
    valued = {r["source_name"] for r in sql(
        home, "SELECT DISTINCT d.source_name FROM result_fields f JOIN documents d "
        "USING (document_id)")}
    assert valued == set(NDAS)
    published = [json.loads(p.read_text()) for p in (tmp_path / "home").rglob("results/*.json")]
    skipped = [p for p in published if p["status"] == "not_applicable"]
    assert len(skipped) == len(NOT_NDAS)
    assert all(p["extracted_fields"] is None and p["values"] == [] and
               p["applicability"]["applies"] is False for p in skipped)


def test_the_nda_scorer_on_self_made_texts():
    assert nda_score(NDA_TEXT) >= THRESHOLD
    assert nda_score(INVOICE) < THRESHOLD
    assert nda_score(LEASE) < THRESHOLD  # a contract with a governing law is not an NDA
    assert nda_score("") < THRESHOLD
    decision = applicability(NdaFields, [PageText(1, INVOICE)])
    assert (decision.kind, decision.applies) == ("nda", False) and decision.score is not None


class Invoice(BaseModel):
    total: float | None = None


class Mystery(BaseModel):
    document_kind: ClassVar[str] = "horoscope"


def test_a_schema_without_a_kind_applies_everywhere_and_an_unknown_kind_is_refused():
    assert applicability(Invoice, [PageText(1, INVOICE)]).applies
    assert applicability(Invoice, [PageText(1, INVOICE)]).score is None
    with pytest.raises(TerminalError, match="horoscope"):
        applicability(Mystery, [PageText(1, INVOICE)])
