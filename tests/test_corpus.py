"""Real hostile files from other projects' test suites (../shared/corpus), in one run."""

from __future__ import annotations

from conftest import CORPUS, needs_corpus
from test_runtime import run_to_completion

from infra.local.runtime import LocalRuntime
from lake.catalog import query

pytestmark = needs_corpus()

EXPECTED = {
    "pdf_broken/ocrmypdf_invalid_header_eof_only.pdf": ("failed", "corrupt"),
    "pdf_broken/pdfjs_bug1020226_severely_corrupt.pdf": ("failed", "corrupt"),
    "pdf_broken/pdfjs_bug1606566_no_pdf_header.pdf": ("failed", "unsupported_format"),
    "pdf_broken/pdfjs_PDFBOX-4352-0_bad_xref_entry.pdf": ("succeeded", None),
    "pdf_broken/pdfjs_poppler-91414-0-53_circular_refs.pdf": ("succeeded", None),
    "pdf_broken/pdfjs_xref_command_missing.pdf": ("succeeded", None),
    "pdf_broken/pdfjs_issue15590_incomplete_trailer_js.pdf": ("succeeded", None),
    "pdf_broken/ocrmypdf_hugemono_35000px_jbig2.pdf": ("succeeded", None),
    "pdf_encrypted/libreoffice_user_pw_openpassword.pdf": ("failed", "encrypted"),
    "pdf_encrypted/qpdf_r2_rc4_40_user_pw_asdfzxcv.pdf": ("failed", "encrypted"),
    "pdf_encrypted/qpdf_r6_aes256_owner_pw_only.pdf": ("succeeded", None),
    "empty/zero_bytes.pdf": ("failed", "empty_file"),
    "docx/python-docx_comments.docx": ("failed", "unsupported_format"),
    "ext_mismatch/calamine_any_sheets_xls_renamed.xlsx": ("failed", "unsupported_format"),
    "hostile_office/poi_54764_billion_laughs.xlsx": ("failed", "unsupported_format"),
    "hostile_office/poi_truncated62886.docx": ("failed", "unsupported_format"),
    "pdf_text/tracemonkey_14p_twocolumn.pdf": ("succeeded", None),
    "pdf_scanned/pypdf_vicksburg_scan_with_ocr_layer_6p.pdf": ("succeeded", None),
}


def test_hostile_corpus_files_fail_cleanly_and_good_ones_succeed(settings):
    runtime = LocalRuntime(settings)
    run_to_completion(runtime, [CORPUS / name for name in EXPECTED])
    jobs = {j.source_name: j for j in runtime.store.list_jobs()}
    got = {name: (jobs[name.split("/")[1]].status.value, jobs[name.split("/")[1]].failure_reason)
           for name in EXPECTED}
    assert got == EXPECTED
    assert jobs["tracemonkey_14p_twocolumn.pdf"].pages == 14
    hits = runtime.index.search("TraceMonkey trace")
    assert hits and hits[0].source_name == "tracemonkey_14p_twocolumn.pdf"
    formats = query(settings.lake, "SELECT source_name, detected_format FROM documents")
    detected = {r["source_name"]: r["detected_format"] for r in formats.to_pylist()}
    # Judged by content, not by name: an .xls renamed .xlsx, a text file named .pdf.
    assert detected["calamine_any_sheets_xls_renamed.xlsx"] == "xls"
    assert detected["pdfjs_bug1606566_no_pdf_header.pdf"] == "text"
    assert detected["poi_truncated62886.docx"] == "zip"


def test_the_password_option_opens_an_encrypted_pdf(settings):
    settings = settings.model_copy(update={"password": "openpassword"})
    runtime = LocalRuntime(settings)
    (ingested,) = run_to_completion(
        runtime, [CORPUS / "pdf_encrypted/libreoffice_user_pw_openpassword.pdf"])
    job = runtime.store.get_job(ingested.job_id)
    assert (job.status.value, job.pages) == ("succeeded", 1)
    key = runtime.objects.list(f"pages/{ingested.document_id}/{ingested.job_id}/")[0]
    assert len(runtime.objects.get(key)) > 500
