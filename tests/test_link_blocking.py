"""A document that reaches outside itself leaves nothing of the outside in the home, with or
without bubblewrap.

The probe: an RTF ``INCLUDEPICTURE`` field naming a local picture was converted with the
picture in it when bwrap was missing (the profile's link blocking does not cover RTF fields),
then OCR'd and found by ``doclake search``. ``tests/support/linkgen.py`` makes a room with every
way of linking out; each Office file must fail with ``links_outside`` before LibreOffice opens
it, HTML and e-mail must be read without fetching anything.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from extract.formats.links import LinksOutside, check_links
from extract.formats.sniff import OFFICE_FORMATS, Format, sniff_file
from infra.cli.main import app
from tests.support.linkgen import PICTURE_MARKER, TEXT_MARKER, make_room
from tests.support.officegen import make_docx

runner = CliRunner()
FAST = {"DOCLAKE_EVENT_FLUSH_S": "0.02", "DOCLAKE_POLL_INTERVAL_S": "0.2",
        "DOCLAKE_CPU_WORKERS": "1"}


def invoke(*args: str, env: dict[str, str] | None = None):
    return runner.invoke(app, list(args), env={**FAST, **(env or {})}, catch_exceptions=False)


def _soffice():
    from extract.formats.office import find_soffice

    return find_soffice()


needs_soffice = pytest.mark.skipif(_soffice() is None, reason="LibreOffice is not installed")


@pytest.fixture
def room(tmp_path) -> tuple[Path, dict[str, str]]:
    made = make_room(tmp_path / "room", tmp_path / "outside")
    return tmp_path / "room", made


@pytest.fixture(params=["with bwrap", "without bwrap"])
def sandbox_mode(request, monkeypatch):
    """Conversions with the sandbox, or as on a machine without bwrap (or on Lambda)."""
    from extract.formats import office, sandbox

    if request.param == "with bwrap":
        if sandbox.find_bwrap() is None:
            pytest.skip("bwrap is not installed or cannot make namespaces here")
    else:
        monkeypatch.setattr(sandbox, "find_bwrap", lambda: None)
        monkeypatch.setattr(office, "find_bwrap", lambda: None)
    monkeypatch.setattr(office, "_template", None)
    return request.param


def everything_under(home: Path) -> bytes:
    """Every byte the home holds, Parquet files decoded (their pages are compressed: a marker
    inside would not show in their raw bytes)."""
    import pyarrow.parquet as pq

    found = []
    for path in home.rglob("*"):
        if not path.is_file() or path.is_symlink():
            continue
        found.append(path.read_bytes())
        if path.suffix == ".parquet":
            found.append(repr(pq.read_table(path).to_pylist()).encode())
    return b"\n".join(found)


def test_the_scan_sees_inside_compressed_parquet(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    # The marker's text but its last character, then the marker: compressed, the second is a
    # back-reference to the first plus one byte, and the marker is nowhere in the raw file.
    text = TEXT_MARKER[:-1] + " and then " + TEXT_MARKER
    pq.write_table(pa.table({"text": [text]}), tmp_path / "x.parquet", compression="zstd",
                   write_statistics=False)  # no min/max copy of the value in the footer
    assert TEXT_MARKER.encode() not in (tmp_path / "x.parquet").read_bytes()  # hidden raw
    assert TEXT_MARKER.encode() in everything_under(tmp_path)


@needs_soffice
def test_the_sandbox_alone_keeps_linked_files_out_of_a_conversion(room, monkeypatch):
    """With the links check out of the way (``convert_to_pdf`` called directly, as no handler
    does): files that link outside are converted under bwrap, and nothing of the outside gets
    into the PDF. The profile's link blocking misses the RTF fields; the sandbox must not."""
    import asyncio

    import pypdfium2

    from extract.formats import office, sandbox

    if sandbox.find_bwrap() is None:
        pytest.skip("bwrap is not installed or cannot make namespaces here")
    monkeypatch.setattr(office, "_template", None)
    folder, _ = room

    async def convert(name: str, fmt: Format) -> tuple[str, int]:
        async with office.convert_to_pdf(folder / name, fmt,
                                         office.ConvertLimits(timeout_s=120)) as done:
            assert done.converter  # converted, not refused
            document = pypdfium2.PdfDocument(done.pdf)
            text = "".join(page.get_textpage().get_text_range() for page in document)
            images = sum(1 for page in document for obj in page.get_objects()
                         if obj.type == pypdfium2.raw.FPDF_PAGEOBJ_IMAGE)
            document.close()
            return text, images

    for name in ("include-text.rtf", "include-picture.rtf", "include-text.docx"):
        fmt = sniff_file(folder / name).format
        with pytest.raises(LinksOutside):
            check_links(folder / name, fmt)  # the check would refuse it ...
        text, images = asyncio.run(convert(name, fmt))  # ... the sandbox alone must hold
        assert TEXT_MARKER not in text and PICTURE_MARKER not in text, (name, text[:300])
        assert images == 0, name


def test_the_sandbox_sees_no_outside_file_and_no_network(tmp_path):
    """The prefix itself, probed: inside it a process reads and writes its work folder only."""
    import socket
    import subprocess

    from extract.formats import sandbox

    if sandbox.find_bwrap() is None:
        pytest.skip("bwrap is not installed or cannot make namespaces here")
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text(TEXT_MARKER)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    # bash from /usr (the sandbox's system view): its /dev/tcp needs no other program.
    probe = (f"echo written > {work}/ok; "
             f"cat {outside}/secret.txt 2>/dev/null || echo 'no file'; "
             f"(echo hi > /dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo connected "
             f"|| echo 'no network'")
    try:
        done = subprocess.run([*sandbox.sandbox([work]), "/usr/bin/bash", "-c", probe],
                              capture_output=True, text=True, timeout=60)
    finally:
        listener.close()
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["no file", "no network"], done.stdout
    assert (work / "ok").read_text() == "written\n"


def test_every_office_file_of_the_room_is_refused_for_its_link(room):
    folder, made = room
    office = [name for name in made if sniff_file(folder / name).format in OFFICE_FORMATS]
    assert len(office) >= 15
    for name in office:
        with pytest.raises(LinksOutside) as refused:
            check_links(folder / name, sniff_file(folder / name).format)
        assert refused.value.error_type == "links_outside", name


def test_hyperlinks_pictures_inside_and_plain_text_pass(tmp_path):
    from tests.support.linkgen import _docx, _external, _odf

    plain = make_docx(tmp_path / "plain.docx", ["A plain memo with the word LINK in it."])
    hyperlinked = _docx(tmp_path / "hyperlink.docx",
                        '<w:p><w:hyperlink r:id="rIdH"><w:r><w:t>see</w:t></w:r></w:hyperlink>'
                        '</w:p><w:p><w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r>'
                        '<w:instrText> PAGE </w:instrText></w:r><w:r><w:fldChar '
                        'w:fldCharType="end"/></w:r></w:p>',
                        _external("rIdH", "hyperlink", "https://example.com/x")
                        + _external("rIdV", "video", "https://example.com/talk.mp4"))
    inside = _odf(tmp_path / "inside.odt", "application/vnd.oasis.opendocument.text",
                  '<text:p>A memo <text:a xlink:href="https://example.com">a link</text:a>'
                  '<draw:frame><draw:image xlink:href="Pictures/a.png"/></draw:frame></text:p>')
    with zipfile.ZipFile(inside, "a") as archive:  # the picture is a part: allowed
        archive.writestr("Pictures/a.png", b"\x89PNG\r\n\x1a\n")
    rtf = tmp_path / "page.rtf"
    rtf.write_text('{\\rtf1\\ansi {\\field{\\*\\fldinst PAGE}{\\fldrslt 1}} link text\\par}')
    for path in (plain, hyperlinked, inside, rtf):
        check_links(path, sniff_file(path).format)


def test_an_office_file_inflating_past_the_limit_is_too_large(tmp_path):
    bomb = make_docx(tmp_path / "bomb.docx", ["x"])
    with zipfile.ZipFile(bomb, "a", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("word/footer1.xml", "<w:ftr>" + " " * (3 * 2**20) + "</w:ftr>")
    with pytest.raises(Exception) as failed:
        check_links(bomb, Format.DOCX, max_inflated_bytes=2**20)
    assert failed.value.error_type == "too_large"
    assert "DOCLAKE_MAX_INFLATED_BYTES" in str(failed.value)


def test_a_split_keyword_and_a_part_python_cannot_parse_are_still_found(tmp_path):
    from tests.support.linkgen import _docx, _field

    split = _docx(tmp_path / "split.docx", _field(["IN", "CLUDE", "TEXT \"/etc/hostname\""]))
    with pytest.raises(LinksOutside):
        check_links(split, Format.DOCX)
    # An undefined entity first: Python's parser stops there, LibreOffice's may read on.
    broken = _docx(tmp_path / "broken.docx", "<w:p><w:r><w:t>&nope;</w:t></w:r></w:p>" +
                   _field(['INCLUDETEXT "/etc/hostname"']))
    with pytest.raises(LinksOutside):
        check_links(broken, Format.DOCX)


@needs_soffice
def test_an_rtf_picture_field_is_not_pulled_in_without_bwrap(tmp_path, monkeypatch):
    """The probe, end to end: run, search, and look at every byte under the home."""
    from extract.formats import office, sandbox

    monkeypatch.setattr(sandbox, "find_bwrap", lambda: None)
    monkeypatch.setattr(office, "find_bwrap", lambda: None)
    monkeypatch.setattr(office, "_template", None)
    folder, _ = tmp_path / "room", make_room(tmp_path / "room", tmp_path / "outside")
    for path in folder.iterdir():
        if path.name != "include-picture.rtf":
            path.unlink()
    home = tmp_path / "home"
    result = invoke("run", str(folder), "--home", str(home), "--fields", "none")
    assert result.exit_code == 0, result.output
    assert "PRIVATE" not in invoke("search", "PRIVATE", "--home", str(home)).stdout
    assert PICTURE_MARKER.encode() not in everything_under(home)
    assert not [p for p in home.rglob("*.pdf") if b"/Image" in p.read_bytes()]
    jobs = json.loads(invoke("sql", "SELECT status, failure_reason FROM jobs", "--home",
                             str(home), "--format", "json").output)
    assert jobs == [{"status": "failed", "failure_reason": "links_outside"}]


@needs_soffice
def test_a_room_of_every_link_leaves_nothing_of_the_outside_in_the_home(room, tmp_path,
                                                                      sandbox_mode):
    folder, made = room
    home = tmp_path / "home"
    result = invoke("run", str(folder), "--home", str(home), "--fields", "none")
    assert result.exit_code == 0, result.output
    rows = json.loads(invoke("sql", "SELECT d.source_name, j.status, j.failure_reason FROM "
                             "documents d JOIN jobs j USING (document_id)", "--home", str(home),
                             "--format", "json").output)
    stored = everything_under(home)
    assert TEXT_MARKER.encode() not in stored and PICTURE_MARKER.encode() not in stored
    for marker in ("OUTSIDE", "PRIVATE"):
        assert marker not in invoke("search", marker, "--home", str(home)).stdout
    assert not [p for p in home.rglob("*.pdf") if b"/Image" in p.read_bytes()]
    by_name = {r["source_name"]: r for r in rows}
    assert set(by_name) == set(made)
    for name, row in by_name.items():
        if Path(name).suffix in (".html", ".eml", ".ods", ".xlsx"):
            assert row["status"] == "succeeded", row
        else:
            assert (row["status"], row["failure_reason"]) == ("failed", "links_outside"), row


@needs_soffice
def test_word_97_files_are_searched_for_the_same_fields(room, tmp_path):
    """LibreOffice writes the RTF fields into a .doc; the check finds them in its text."""
    import subprocess

    folder, _ = room
    out = tmp_path / "doc"
    plain = tmp_path / "plain.rtf"
    plain.write_text("{\\rtf1\\ansi A plain letter with a LINK word in it.\\par}")
    sources = [folder / "include-text.rtf", folder / "dde.rtf", plain]
    subprocess.run([_soffice(), "--headless", f"-env:UserInstallation={(tmp_path / 'p').as_uri()}",
                    "--convert-to", "doc", "--outdir", str(out), *map(str, sources)],
                   capture_output=True, timeout=180, check=True)
    for name in ("include-text.doc", "dde.doc"):
        assert sniff_file(out / name).format is Format.DOC
        with pytest.raises(LinksOutside):
            check_links(out / name, Format.DOC)
    check_links(out / "plain.doc", Format.DOC)
