"""Start-up: commands that do not need the heavy libraries do not import them.

Not a timing test: it checks which modules a fresh interpreter holds after the command, which is
what decides the start-up time (``python -X importtime`` shows the cost of each)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.support.homes import empty_home

HEAVY = ("pyarrow", "duckdb", "pandas", "numpy", "great_expectations", "sqlglot", "boto3")

PROBE = """
import json, sys
from infra.cli.main import app
try:
    app(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps([m for m in {heavy!r} if m in sys.modules]))
"""


def heavy_modules_after(*args: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", PROBE.format(heavy=HEAVY), *args],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.parametrize("args", [["--help"], ["--version"], ["status", "--format", "json"],
                                  ["search", "word", "--format", "json"], ["run", "-h"]])
def test_light_commands_stay_light(tmp_path, args):
    home = [] if "-h" in args or "--help" in args or "--version" in args else [
        "--home", str(empty_home(tmp_path))]
    assert heavy_modules_after(*args, *home) == []


def test_every_command_still_finds_its_heavy_libraries_when_it_needs_them(tmp_path):
    assert "duckdb" in heavy_modules_after("sql", "SELECT 1", "--home", str(empty_home(tmp_path)))


UNMET_STAGES = ("extract.handlers.convert", "extract.handlers.convert_together",
                "extract.handlers.fields", "extract.handlers.sheet", "extract.readers.ocr",
                "extract.readers.vision")
"""The code of stages and readers a text run of PDFs never meets (LibreOffice's conversion,
sheets, the fields, OCR, the vision models): loaded when their first message or chain comes."""

RUN_PROBE = """
import json, sys
from infra.cli.main import app
code = 0
try:
    app(sys.argv[1:])
except SystemExit as stop:
    code = stop.code
print(json.dumps([code, [m for m in {unmet!r} if m in sys.modules]]))
"""


def test_a_text_run_of_pdfs_imports_no_stage_it_never_meets(tmp_path, pdf_factory):
    room = pdf_factory("letter.pdf", 1).parent
    out = subprocess.run([sys.executable, "-c", RUN_PROBE.format(unmet=UNMET_STAGES), "run",
                          str(room), "--home", str(tmp_path / "home"), "--reader", "text",
                          "--fields", "none"], capture_output=True, text=True, check=True,
                         cwd=tmp_path).stdout
    code, imported = json.loads(out.strip().splitlines()[-1])
    assert code in (0, None)
    assert imported == []


def test_a_stage_met_loads_its_code_and_handles_its_message(monkeypatch):
    """The handler of a stage loaded on its first message is the stage's own."""
    import asyncio

    import extract.handlers.convert as convert_module
    from extract import handling

    calls = []

    async def fake_convert(*args):
        calls.append(args)
        return "converted"

    monkeypatch.setattr(convert_module, "handle_convert", fake_convert)
    handler = handling._loaded_on_first_message("extract.handlers.convert:handle_convert")
    assert asyncio.run(handler("ctx", "message", "delivery")) == "converted"
    assert calls == [("ctx", "message", "delivery")]
