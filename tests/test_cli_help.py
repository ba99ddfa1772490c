"""Help shows no type on flags (issue 26, finding 9: ``--jobs <bool>`` read as if it took a
value), and keeps it on options that take one."""

from __future__ import annotations

import typer
from typer.testing import CliRunner

from infra.cli.main import app


def _every_command(command, path=()):
    yield path
    for name, sub in getattr(command, "commands", {}).items():
        yield from _every_command(sub, (*path, name))


def test_no_flag_shows_a_type_in_any_help():
    runner = CliRunner()
    seen_flags = 0
    for path in _every_command(typer.main.get_command(app)):
        result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "160"})
        assert result.exit_code == 0, (path, result.output)
        assert "<bool>" not in result.output, path
        seen_flags += result.output.count("--help")
    assert seen_flags > 20  # every command's help was printed, with its --help flag
    status = runner.invoke(app, ["status", "--help"], env={"COLUMNS": "160"}).output
    jobs = next(line for line in status.splitlines() if "--jobs" in line)
    home = next(line for line in status.splitlines() if "--home" in line)
    assert "<path>" in home and "Count every job" in jobs and "<" not in jobs


def test_the_command_list_opens_with_a_first_hours_commands():
    """``doclake --help`` lists run, then what a person looks at next, before the tools."""
    from infra.cli.errors import COMMAND_ORDER

    output = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "160"}).output
    listed = [line.split()[1] for line in output.splitlines()
              if line.startswith("│ ") and len(line.split()) > 1 and line.split()[1].isalpha()
              and line.split()[1] in COMMAND_ORDER]
    assert listed[:5] == ["run", "status", "search", "show", "sql"]
    assert sorted(listed) == sorted(COMMAND_ORDER)  # every command named, each once
