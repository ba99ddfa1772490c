"""Every file of the shared corpus (../shared/corpus), in one run, ends as its MANIFEST says.

The MANIFEST describes each file (what it exercises, whether pypdfium2 and calamine open it,
its pages and sheets); ``EXPECTED`` turns that into an outcome per file, and the test fails when
the MANIFEST lists a file the table does not classify. Succeeded files are checked against the
MANIFEST's own figures: pages of a PDF, sheet names of a workbook, text where it says there is
text; spreadsheet outputs are compared cell by cell with what python-calamine reads.
"""

from __future__ import annotations

import asyncio
import csv
import os
import re
import shutil
import socket
import tempfile
import threading
from pathlib import Path

import pytest
from conftest import CORPUS, needs_corpus
from test_runtime import run_to_completion

from extract.formats.office import find_soffice
from extract.formats.spreadsheet import format_cell
from extract.readers.ocr import tesseract_status
from infra.local.runtime import LocalRuntime
from lake.catalog import query

# Each test skips for the tools it needs itself: the manifest check needs none, the XXE and
# password tests need LibreOffice only, the whole-corpus run needs LibreOffice and tesseract.
pytestmark = [needs_corpus()]
needs_soffice = pytest.mark.skipif(
    find_soffice() is None, reason="LibreOffice is not installed (apt-get install "
    "libreoffice-writer-nogui libreoffice-impress-nogui)")
needs_tesseract = pytest.mark.skipif(tesseract_status() is not None,
                                     reason=f"OCR unavailable: {tesseract_status()}")

OK = ("succeeded", None)
EXPECTED: dict[str, tuple[str, str | None]] = {
    "csv/frictionless_invalid_ragged.csv": OK,
    "csv/frictionless_semicolon_leading_zeros.csv": OK,
    "csv/frictionless_table_10x10k.csv": OK,
    "doc/poi_SampleDoc.doc": OK,
    "doc/poi_word2_not_ole.doc": OK,  # Word 2.0, no OLE2: LibreOffice still reads it
    "docx/python-docx_comments.docx": OK,
    "docx/python-docx_having_images.docx": OK,
    "empty/calamine_empty_sheet.xlsx": ("failed", "no_content"),
    "empty/python-pptx_no_slides.pptx": ("failed", "no_content"),
    "empty/zero_bytes.pdf": ("failed", "empty_file"),
    "encrypted_office/calamine_pass_protected.ods": ("failed", "encrypted"),
    "encrypted_office/calamine_pass_protected.xlsx": ("failed", "encrypted"),
    "encrypted_office/poi_PasswordProtected.doc": ("failed", "encrypted"),
    "encrypted_office/poi_Password_Protected-hello.ppt": ("failed", "encrypted"),
    "encrypted_office/poi_bug53475_password_is_pass.docx": ("failed", "encrypted"),
    "ext_mismatch/calamine_any_sheets_xls_renamed.xlsx": OK,  # sniffed as xls
    "hostile_office/calamine_OOM_alloc.xls": OK,  # calamine 0.9 reads it within the limits
    "hostile_office/calamine_too_small.xls": ("failed", "unsupported_format"),  # plain text
    "hostile_office/poi_54764_billion_laughs.xlsx": ("failed", "corrupt"),
    "hostile_office/poi_ExternalEntityInText_xxe.docx": ("failed", "links_outside"),
    "hostile_office/poi_invalid_empty_zip.xlsx": ("failed", "no_content"),
    "hostile_office/poi_truncated62886.docx": ("failed", "corrupt"),
    "ods/calamine_any_sheets.ods": OK,
    "ods/calamine_date.ods": OK,
    "odt/sample-files_libreoffice_source.odt": OK,
    "pdf_broken/ocrmypdf_hugemono_35000px_jbig2.pdf": ("failed", "page_too_large"),
    "pdf_broken/ocrmypdf_invalid_header_eof_only.pdf": ("failed", "corrupt"),
    "pdf_broken/pdfjs_PDFBOX-4352-0_bad_xref_entry.pdf": OK,
    "pdf_broken/pdfjs_bug1020226_severely_corrupt.pdf": ("failed", "corrupt"),
    "pdf_broken/pdfjs_bug1606566_no_pdf_header.pdf": ("failed", "unsupported_format"),
    "pdf_broken/pdfjs_issue15590_incomplete_trailer_js.pdf": OK,
    "pdf_broken/pdfjs_poppler-91414-0-53_circular_refs.pdf": OK,
    "pdf_broken/pdfjs_xref_command_missing.pdf": OK,
    "pdf_encrypted/libreoffice_user_pw_openpassword.pdf": ("failed", "encrypted"),
    "pdf_encrypted/qpdf_r2_rc4_40_user_pw_asdfzxcv.pdf": ("failed", "encrypted"),
    "pdf_encrypted/qpdf_r6_aes256_owner_pw_only.pdf": OK,
    "pdf_scanned/ocrmypdf_c02-22_huckfinn_scan.pdf": OK,
    "pdf_scanned/ocrmypdf_ccitt_g4_scan.pdf": OK,
    "pdf_scanned/ocrmypdf_multipage_mixed_scans_6p.pdf": OK,
    "pdf_scanned/pypdf_vicksburg_scan_with_ocr_layer_6p.pdf": OK,
    "pdf_text/geotopo_117p_optimized.pdf": OK,
    "pdf_text/pdflatex_acroform_fields.pdf": OK,
    "pdf_text/pdkids_55p_openoffice.pdf": OK,
    "pdf_text/tamreview_23p_garbled_textlayer.pdf": OK,
    "pdf_text/tracemonkey_14p_twocolumn.pdf": OK,
    "pdf_text/with_embedded_attachment.pdf": OK,
    "ppt/poi_SampleShow.ppt": OK,
    "pptx/python-pptx_charts.pptx": OK,
    "pptx/python-pptx_speaker_notes.pptx": OK,
    "xls/calamine_any_sheets.xls": OK,
    "xls/calamine_date_1904.xls": OK,
    "xls/poi_testEXCEL_4_not_ole.xls": ("failed", "unsupported_format"),  # BIFF4, no OLE2
    "xls/poi_testEXCEL_95.xls": OK,
    "xlsb/calamine_any_sheets.xlsb": OK,
    "xlsx/calamine_any_sheets.xlsx": OK,
    "xlsx/calamine_merged_range.xlsx": OK,
    "xlsx/calamine_vba_macros.xlsm": OK,
    "xlsx/poi_bug62181_19k_rows.xlsx": OK,
}

DETECTED = {  # judged by content, not by name
    "calamine_any_sheets_xls_renamed.xlsx": "xls",
    "pdfjs_bug1606566_no_pdf_header.pdf": "text",
    "poi_truncated62886.docx": "zip",
    "calamine_pass_protected.xlsx": "encrypted_office",
    "poi_word2_not_ole.doc": "doc",
    "calamine_vba_macros.xlsm": "xlsm",
    "calamine_any_sheets.xlsb": "xlsb",
}


def manifest() -> list[dict[str, str]]:
    with open(CORPUS / "MANIFEST.tsv", newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


def sheet_names(row: dict[str, str]) -> list[str]:
    return [re.sub(r" \[.*\]$", "", part) for part in row["sheets"].split(" | ")]


@pytest.fixture(scope="module")
def corpus_run(tmp_path_factory):
    from infra.settings import Settings

    home = tmp_path_factory.mktemp("corpus") / "home"
    settings = Settings(home=home, poll_interval_s=0.2, event_flush_s=0.02, cpu_workers=2,
                        concurrency=8, visibility_timeout_s=60)
    runtime = LocalRuntime(settings)
    rows = manifest()
    ingested = run_to_completion(runtime, [CORPUS / row["path"] for row in rows])
    # Identical bytes under two names (an .xls and its renamed copy) share one job.
    jobs = {j.job_id: j for j in runtime.store.list_jobs()}
    by_path = {row["path"]: jobs[i.job_id] for row, i in zip(rows, ingested, strict=True)}
    return settings, runtime, by_path


def test_every_manifest_file_is_classified():
    assert sorted(EXPECTED) == sorted(row["path"] for row in manifest())


@needs_soffice
@needs_tesseract
def test_every_corpus_file_ends_as_its_manifest_says(corpus_run):
    settings, runtime, jobs = corpus_run
    got = {path: (jobs[path].status.value, jobs[path].failure_reason) for path in EXPECTED}
    assert got == EXPECTED
    formats = query(settings.lake, "SELECT source_name, detected_format FROM documents")
    detected = {r["source_name"]: r["detected_format"] for r in formats.to_pylist()}
    assert {name: detected[name] for name in DETECTED} == DETECTED


def _stored(runtime, job) -> dict[int, str]:
    keys = runtime.objects.list(f"pages/{job.document_id}/{job.job_id}/")
    return {int(k.rsplit("/", 1)[1].split(".")[0]): runtime.objects.get(k).decode()
            for k in keys}


@needs_soffice
@needs_tesseract
def test_succeeded_files_match_the_manifest_figures(corpus_run):
    _, runtime, jobs = corpus_run
    for row in manifest():
        job = jobs[row["path"]]
        if EXPECTED[row["path"]] != OK:
            continue
        pages = _stored(runtime, job)
        if row["sheets"]:
            names = sheet_names(row)
            assert job.pages == len(names), row["path"]
            headers = [pages[n].split("\n", 1)[0] for n in sorted(pages)]
            assert [re.sub(r"^# Sheet: | \(.*\)$", "", h) for h in headers] == names
        elif row["pages"]:
            assert job.pages == int(row["pages"]), row["path"]
            if row["has_text"].startswith("yes"):
                assert sum(len(t.strip()) for t in pages.values()) > 0, row["path"]
        elif row["path"] != "pptx/python-pptx_speaker_notes.pptx":  # text only in the notes,
            # which LibreOffice's PDF export leaves out; Office and CSV: some text came out
            assert "".join(pages.values()).strip(), row["path"]
    # Scans without a text layer were read by OCR, with recognisable words.
    huck = _stored(runtime, jobs["pdf_scanned/ocrmypdf_c02-22_huckfinn_scan.pdf"])[1]
    assert "trees" in huck and "widow" in huck


@needs_soffice
@needs_tesseract
def test_sheets_are_read_as_units_and_recorded_per_sheet(corpus_run):
    settings, _, _ = corpus_run
    rows = query(settings.lake, """
        SELECT u.sheet_name, p.page_number, p.reader, u.kind
        FROM units u JOIN pages p ON p.job_id = u.job_id AND p.unit_id = u.unit_id
        JOIN documents d ON d.latest_job_id = u.job_id
        WHERE d.source_name = 'calamine_any_sheets.xlsx' ORDER BY p.page_number""").to_pylist()
    assert rows == [{"sheet_name": n, "page_number": i, "reader": "calamine", "kind": "sheet"}
                    for i, n in enumerate(["Visible", "Hidden", "VeryHidden", "Chart"], 1)]
    readers = query(settings.lake, "SELECT DISTINCT reader FROM pages ORDER BY 1").to_pylist()
    assert {r["reader"] for r in readers} >= {"calamine", "csv", "ocr", "text"}
    converted = query(settings.lake, """
        SELECT converter, conversion_ms FROM ev_job_split WHERE converter IS NOT NULL""")
    assert converted.num_rows >= 8 and all(r["conversion_ms"] > 0 for r in converted.to_pylist())


def _calamine_rows(path: Path, fmt: str, sheet: str) -> list[list[str]]:
    """What python-calamine itself reads, formatted cell by cell."""
    import python_calamine

    with tempfile.TemporaryDirectory() as folder:
        link = Path(folder) / f"book.{fmt}"
        os.symlink(path, link)
        values = python_calamine.CalamineWorkbook.from_path(str(link)) \
            .get_sheet_by_name(sheet).to_python(skip_empty_area=False)
    rows = [[format_cell(v) for v in row] for row in values]
    for row in rows:
        while row and row[-1] == "":
            row.pop()
    while rows and not rows[-1]:
        rows.pop()
    return rows


@needs_soffice
@needs_tesseract
def test_spreadsheet_text_matches_calamine_cell_by_cell(corpus_run):
    _, runtime, jobs = corpus_run
    checked = 0
    for row in manifest():
        job = jobs[row["path"]]
        if not row["sheets"] or EXPECTED[row["path"]] != OK:
            continue
        pages = _stored(runtime, job)
        for position, name in enumerate(sheet_names(row), 1):
            if "ERR" in row["sheets"].split(" | ")[position - 1]:
                continue  # calamine itself cannot read it (an xlsb chart sheet)
            lines = pages[position].rstrip("\n").split("\n")[1:]
            ours = [line.split("\t") if line else [] for line in lines]
            assert ours == _calamine_rows(CORPUS / row["path"], job.detected_format, name), \
                (row["path"], name)
            checked += sum(len(r) for r in ours)
    assert checked > 150_000  # the 19k-row sheet alone has 155k cells
    text = _stored(runtime, jobs["ods/calamine_date.ods"])[1]
    assert text == ("# Sheet: Sheet1\n2021-01-01\t15\n2021-01-01T10:10:10\t16\n10:10:10\t17\n"
                    "10:10:10.123456\t18\n")
    assert "P10DT15H10M10S\t17" in _stored(runtime, jobs["xls/calamine_date_1904.xls"])[1]
    assert "0123\tc" in _stored(runtime, jobs["csv/frictionless_semicolon_leading_zeros.csv"])[1]
    hidden = _stored(runtime, jobs["xlsx/calamine_any_sheets.xlsx"])[2]
    assert hidden == "# Sheet: Hidden (hidden)\n"
    big = _stored(runtime, jobs["xlsx/poi_bug62181_19k_rows.xlsx"])[1]
    assert not re.search(r"(^|\t)-?\d+\.0(\t|$)", big, re.M)  # no 8337.0


@needs_soffice
def test_passwords_open_encrypted_pdfs_and_office_files(settings):
    # Office files: msoffcrypto-tool decrypts the .ppt with "hello", but LibreOffice 7.4 then
    # refuses the decrypted stream (an open gap, see the README); the wrong password is still
    # told apart from the right one.
    cases = {"pdf_encrypted/libreoffice_user_pw_openpassword.pdf": "openpassword",
             "pdf_encrypted/qpdf_r2_rc4_40_user_pw_asdfzxcv.pdf": "asdfzxcv"}
    for name, password in cases.items():
        home = settings.home.parent / Path(name).stem
        runtime = LocalRuntime(settings.model_copy(update={"home": home,
                                                           "password": password}))
        (ingested,) = run_to_completion(runtime, [CORPUS / name])
        job = runtime.store.get_job(ingested.job_id)
        assert (job.status.value, job.failure_reason) == ("succeeded", None), name
        assert sum(len(t) for t in _stored(runtime, job).values()) > 20
    wrong = LocalRuntime(settings.model_copy(update={"home": settings.home.parent / "wrong",
                                                     "password": "nope"}))
    (ingested,) = run_to_completion(
        wrong, [CORPUS / "encrypted_office/poi_Password_Protected-hello.ppt"])
    assert wrong.store.get_job(ingested.job_id).failure_reason == "encrypted"
    # msoffcrypto-tool 6.1 cannot undo this docx's encryption (a 160-bit AES key): the right
    # password still ends in a clear `encrypted`, not a crash.
    odd = LocalRuntime(settings.model_copy(update={"home": settings.home.parent / "odd",
                                                   "password": "pass"}))
    (ingested,) = run_to_completion(
        odd, [CORPUS / "encrypted_office/poi_bug53475_password_is_pass.docx"])
    assert odd.store.get_job(ingested.job_id).failure_reason == "encrypted"


@needs_soffice
def test_the_xxe_sample_fetches_nothing(monkeypatch):
    """LibreOffice converts the XXE docx with every proxy pointed at a listener of ours and no
    network namespace: nothing connects (and the file is refused as corrupt)."""
    from extract.errors import CorruptDocument
    from extract.formats import office
    from extract.formats.sniff import Format

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(5)
    listener.settimeout(0.2)
    connections: list[object] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                connections.append(listener.accept())
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    monkeypatch.setattr(office, "PROXY_PORT", listener.getsockname()[1])
    monkeypatch.setattr(office, "network_isolation", lambda: ())
    monkeypatch.setattr(office, "_template", None)

    async def convert() -> None:
        async with office.convert_to_pdf(CORPUS / "hostile_office/poi_ExternalEntityInText_xxe.docx",
                                         Format.DOCX, office.ConvertLimits(timeout_s=60)):
            pass

    try:
        with pytest.raises(CorruptDocument):
            asyncio.run(convert())
    finally:
        stop.set()
        thread.join()
        listener.close()
        template = office._template
        if template is not None:
            shutil.rmtree(template, ignore_errors=True)
    assert connections == []
