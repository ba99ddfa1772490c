"""A workbook whose repeated rows and columns span billions of cells (calamine's issue 594, an
ODS cell bomb) is refused as ``too_many_cells``, not ``corrupt``: nothing is damaged, a size limit
is hit, and ``doclake show`` names the setting that sets it instead of "re-export it"."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from infra.cli.main import app

FAST = {"DOCLAKE_EVENT_FLUSH_S": "0.02", "DOCLAKE_POLL_INTERVAL_S": "0.2",
        "DOCLAKE_CPU_WORKERS": "1", "COLUMNS": "200"}
ROWS, COLUMNS = 1_048_576, 16_384  # one cell, repeated across a whole sheet
CELLS = 17_179_869_184  # ROWS x COLUMNS, multiplied by hand


def _cell_bomb(path: Path) -> Path:
    """An 800-byte ODS: one cell repeated COLUMNS times in a row repeated ROWS times."""
    content = (
        '<?xml version="1.0" encoding="UTF-8"?><office:document-content '
        'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
        'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
        'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" office:version="1.2">'
        '<office:body><office:spreadsheet><table:table table:name="Sheet1">'
        f'<table:table-row table:number-rows-repeated="{ROWS}">'
        f'<table:table-cell table:number-columns-repeated="{COLUMNS}" '
        'office:value-type="string"><text:p>x</text:p></table:table-cell></table:table-row>'
        '</table:table></office:spreadsheet></office:body></office:document-content>')
    manifest = (
        '<?xml version="1.0" encoding="UTF-8"?><manifest:manifest '
        'xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" '
        'manifest:version="1.2"><manifest:file-entry manifest:full-path="/" '
        'manifest:media-type="application/vnd.oasis.opendocument.spreadsheet"/>'
        '<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/>'
        '</manifest:manifest>')
    with zipfile.ZipFile(path, "w") as book:
        book.writestr(zipfile.ZipInfo("mimetype"), "application/vnd.oasis.opendocument.spreadsheet")
        book.writestr("content.xml", content, compress_type=zipfile.ZIP_DEFLATED)
        book.writestr("META-INF/manifest.xml", manifest, compress_type=zipfile.ZIP_DEFLATED)
    return path


def test_the_reader_refuses_the_grid_as_too_many_cells(tmp_path):
    from extract.errors import LimitExceeded
    from extract.formats.sniff import Format
    from extract.formats.spreadsheet import SheetLimits, plan_workbook

    with pytest.raises(LimitExceeded) as refused:
        plan_workbook(_cell_bomb(tmp_path / "bomb.ods"), Format.ODS, SheetLimits(max_cells=1000))
    assert refused.value.error_type == "too_many_cells"
    assert str(refused.value) == f"the workbook spans {CELLS} cells, over the limit of 1000"


def test_show_names_the_limit_and_its_setting(tmp_path):
    folder = tmp_path / "room"
    folder.mkdir()
    _cell_bomb(folder / "calamine_issue_594_dos.ods")
    home = str(tmp_path / "home")
    runner = CliRunner()
    assert runner.invoke(app, ["run", str(folder), "--home", home], env=FAST).exit_code == 0
    shown = runner.invoke(app, ["show", "calamine_issue_594_dos.ods", "--home", home,
                                "--format", "json"], env=FAST)
    assert shown.exit_code == 0, shown.output
    document = json.loads(shown.stdout)
    assert (document["status"], document["failure_reason"]) == ("failed", "too_many_cells")
    assert document["failure_message"] == (f"the workbook spans {CELLS} cells, over the limit "
                                           "of 5000000")
    assert document["hint"] == ("raise DOCLAKE_MAX_SHEET_CELLS if the sheet is expected to be "
                                "this large")
    assert "damaged" not in shown.output and "re-export" not in shown.output
