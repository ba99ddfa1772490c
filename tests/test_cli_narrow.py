"""The ``doclake`` process builds only the command it runs, and that command is the same.

``infra.cli.narrow.DoclakeApp`` narrows the application to the command its first argument
names (start-up, issue 26); these tests hold it to the whole application's behaviour.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import typer
from typer.testing import CliRunner

from infra.cli.main import app
from tests.support.homes import empty_home

WIDE = {"COLUMNS": "120", "TERM": "dumb", "NO_COLOR": "1"}


def _help(application: typer.Typer, *args: str) -> str:
    result = CliRunner().invoke(application, [*args, "--help"], env=WIDE)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("name", app.command_names())
def test_every_command_narrowed_prints_the_help_of_the_whole_application(name):
    narrowed = app.narrowed_to(name)
    assert narrowed is not None
    assert _help(narrowed, name) == _help(app, name)
    built = typer.main.get_command(narrowed)
    assert list(built.commands) == [name]  # only what the process runs


def test_the_whole_application_still_lists_every_command():
    names = app.command_names()
    assert {"run", "sql", "lake", "evals", "serve", "dashboard", "schema"} <= set(names)
    listing = _help(app)
    assert all(name in listing for name in names)


@pytest.mark.parametrize("first", ["--debug", "--version", "--help", "sqll", "-h"])
def test_an_option_or_an_unknown_name_gets_the_whole_application(first):
    assert app.narrowed_to(first) is None


def test_a_misspelt_command_still_gets_clicks_suggestion(tmp_path):
    result = subprocess.run([sys.executable, "-m", "infra.cli.main", "sqll"],
                            capture_output=True, text=True)
    assert result.returncode == 2
    assert "Did you mean 'sql'?" in result.stderr


PROBE = """
import json, sys, typer.main
built = []
original = typer.main.get_command
def counting(application):
    command = original(application)
    built.append(sorted(getattr(command, "commands", {{}})))
    return command
typer.main.get_command = counting
from infra.cli.main import app
try:
    app()
except SystemExit:
    pass
print(json.dumps({{"built": built, "pydantic": "pydantic" in sys.modules}}))
"""


def test_doclake_sql_builds_one_command_and_imports_no_pydantic(tmp_path):
    """What the start-up figure rests on: the process builds the ``sql`` command alone, and no
    pydantic is imported for its parameters (Typer 0.29 would; the pin says why)."""
    out = subprocess.run([sys.executable, "-c", PROBE.format(), "sql", "SELECT 42 AS answer",
                          "--format", "json", "--home", str(empty_home(tmp_path))],
                         capture_output=True, text=True, check=True).stdout
    lines = out.strip().splitlines()
    probe = json.loads(lines[-1])
    assert probe == {"built": [["sql"]], "pydantic": False}
    assert json.loads("\n".join(lines[:-1])) == [{"answer": 42}]
