"""The help pages say what the build does: every reader ``--reader`` accepts, and the defaults
that are not shown by the option itself."""

from __future__ import annotations

import re

from typer.testing import CliRunner

from infra.cli.main import app


def _help(*command: str) -> str:
    result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", result.output).split())


def test_run_help_names_every_reader_the_build_has():
    from extract.readers import READERS

    page = _help("run")
    said = page[page.index("--reader"):page.index("--fields")]
    assert sorted(READERS) == ["auto", "gemini", "ocr", "simulated", "text"]
    for reader in READERS:
        assert re.search(rf"\b{reader}\b", said), (reader, said)


def test_concurrency_help_shows_the_settings_default():
    page = _help("run")
    said = page[page.index("--concurrency"):page.index("--password")]
    assert "default 64" in said
    from infra.settings import Settings

    assert Settings.model_fields["concurrency"].default == 64


def _every_command_path(command=None, path=()):
    import typer

    command = command or typer.main.get_command(app)
    subs = getattr(command, "commands", {})
    if not subs:
        yield path
    for name, sub in subs.items():
        yield from _every_command_path(sub, (*path, name))


def _raw_help(*command: str) -> str:
    result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return result.output


def test_evals_lists_its_commands_in_the_order_of_the_workflow():
    page = _raw_help("evals")
    listed = [line.split()[1] for line in page[page.index("Commands"):].splitlines()
              if line.startswith("│ ") and len(line.split()) > 1]
    assert listed == ["sample", "import-labels", "agreement", "score", "compare", "failures",
                      "report", "export-finetune"]
    assert all(len(line) <= 200 for line in page.splitlines())
    # one line each: a short help, not the whole docstring folded into the list
    assert len([line for line in page.splitlines() if line.startswith("│ ")]) == 1 + 8


def test_home_comes_first_among_the_options_of_every_command_that_has_one():
    seen = []
    for path in _every_command_path():
        page = _raw_help(*path)
        options = page[page.index("Options"):]
        names = re.findall(r"^│ (?:\*\s+)?\s*(--[a-z][a-z-]*)", options, flags=re.MULTILINE)
        if "--home" in names:
            seen.append(" ".join(path))
            assert names[0] == "--home", (path, names)
    assert {"evals import-labels", "evals score", "evals report", "evals sample", "dashboard",
            "schema", "run", "status", "bench plan"} <= set(seen), seen


def test_usage_lines_name_arguments_in_capitals_as_click_does():
    usage = {" ".join(path): next(line.strip() for line in _raw_help(*path).splitlines()
                                  if "Usage:" in line).split(maxsplit=2)[2]  # after the root's
             for path in _every_command_path()}                          # name (test: "root")
    assert usage["run"] == "run [OPTIONS] PATHS..."
    assert usage["show"] == "show [OPTIONS] DOCUMENT"
    assert usage["sql"] == "sql [OPTIONS] [QUERY]"
    assert usage["evals compare"] == "evals compare [OPTIONS] A B"
    assert not [line for line in usage.values() if "{" in line or "}" in line], usage


def test_format_is_always_how_the_result_is_printed_and_file_format_the_files():
    for path in _every_command_path():
        page = _help(*path)
        for said in re.findall(r"--format <str> (\S+)", page):
            assert said in ("table|csv|json", "table|json"), (path, said)
        assert "--report-format" not in page, path
    assert "--file-format <str> csv|jsonl|kleister|label-studio: the label file's layout" in \
        _help("evals", "import-labels")
    assert "--file-format <str> csv|label-studio:" in _help("evals", "sample")
    assert "--file-format <str> gemini|openai:" in _help("evals", "export-finetune")


def test_a_label_format_given_as_format_is_pointed_at_file_format(tmp_path):
    labels = tmp_path / "expected.tsv"
    labels.write_text("a\tb\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["evals", "import-labels", str(labels), "--home",
                                      str(tmp_path / "nowhere"), "--format", "kleister"],
                                env={"COLUMNS": "200"})
    assert result.exit_code == 2
    assert "error: --format 'kleister' is how the result is printed (table, csv or json)" in \
        result.output
    assert "hint: give the file's format as --file-format kleister" in result.output
    assert not (tmp_path / "nowhere").exists()


def test_serve_extracts_the_nda_fields_by_default_as_run_does():
    for command in ("run", "serve"):
        page = _help(command)
        said = page[page.index("--fields"):page.index("--strategy")]
        assert "[default: nda]" in said, (command, said)
    assert "the default, as for `doclake run`" in _help("serve")
