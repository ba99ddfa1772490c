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
