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
