"""User errors through the real command: a short message naming the value, exit 2, no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from infra.cli.main import app
from tests.support.homes import empty_home

runner = CliRunner()


def invoke(*args: str, env: dict[str, str] | None = None):
    return runner.invoke(app, list(args), env=env)


def assert_user_error(result, *fragments: str) -> None:
    """Exit 2, an ``error:`` line carrying every fragment, and no Python traceback."""
    assert result.exit_code == 2, result.output
    assert "error" in result.output.lower()
    for fragment in fragments:
        assert fragment in result.output, (fragment, result.output)
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_a_home_that_is_a_file(tmp_path):
    home = tmp_path / "file"
    home.write_text("not a folder")
    assert_user_error(invoke("status", "--home", str(home)), str(home), "is a file")


def _as_a_user_who_cannot_write(room: Path) -> list[str]:
    """The prefix that runs a command as a user the folder ``room/locked`` refuses writes:
    this one when it is not root; as root (CI), ``nobody`` through ``setpriv``, keeping only
    CAP_DAC_READ_SEARCH (it may read every file, the interpreter under /root included, and write
    none it does not own), so the unwritable home is a real one, never skipped."""
    import os
    import shutil

    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.fail("running as root without setpriv (util-linux): cannot drop to nobody")
    return [setpriv, "--reuid=nobody", "--regid=nogroup", "--clear-groups",
            "--inh-caps=+dac_read_search", "--ambient-caps=+dac_read_search"]


@pytest.mark.parametrize("command", [["status"], ["search", "word"], ["lake", "check"],
                                     ["run", "PDF"], ["worker", "--until-idle"]])
def test_an_unwritable_home(tmp_path, pdf_factory, command):
    """The installed command, in its own process, as a user who cannot write the home."""
    import os
    import shutil
    import subprocess
    import sys
    import tempfile

    # Outside pytest's own folder (mode 700: typer's access() check, made with the real user and
    # no capabilities, would find the home unreadable first).
    room = Path(tempfile.mkdtemp(prefix="doclake-unwritable-"))
    room.chmod(0o755)
    home = empty_home(room / "locked")  # a home (its marker), which this user may not write
    home.chmod(0o555)
    pdf = Path(shutil.copy(pdf_factory("a.pdf", 1), room / "a.pdf"))
    pdf.chmod(0o644)  # whatever umask an earlier test left: readable by the other user
    args = [str(pdf) if a == "PDF" else a for a in command]
    doclake = str(Path(sys.executable).with_name("doclake"))
    try:
        done = subprocess.run([*_as_a_user_who_cannot_write(room), doclake, *args,
                               "--home", str(home)], capture_output=True, text=True, timeout=120,
                              env={**os.environ, "HOME": str(room), "COLUMNS": "200"})
        assert [p.name for p in home.iterdir()] == ["doclake-home.json"]
    finally:
        home.chmod(0o700)
        shutil.rmtree(room)
    assert done.returncode == 2, (done.stdout, done.stderr)
    first = done.stderr.splitlines()[0]
    # A reading command names the home; a writing one says it cannot make it its home.
    assert first in (f"error: home {home} is not writable",
                     f"error: cannot use {home} as a home: not writable"), done.stderr
    assert "Traceback" not in done.stderr


def test_run_with_concurrency_zero(tmp_path, pdf_factory):
    pdf = pdf_factory("a.pdf", 1)
    result = invoke("run", str(pdf), "--concurrency", "0", "--home", str(tmp_path / "h"))
    assert_user_error(result, "--concurrency 0", "at least 1")
    assert not (tmp_path / "h").exists()


@pytest.mark.parametrize("query", [";", "", "-- only a comment;", "  ;  ; "])
def test_sql_with_no_statement(tmp_path, query):
    assert_user_error(invoke("sql", "--home", str(empty_home(tmp_path)), "--", query),
                      "no SQL statement",
                      repr(query))


def test_compact_with_target_rows_zero(tmp_path):
    assert_user_error(invoke("lake", "compact", "--target-rows", "0", "--home", str(empty_home(tmp_path))),
                      "--target-rows 0", "at least 1")


def test_a_bad_setting_in_the_environment(tmp_path):
    result = invoke("status", "--home", str(empty_home(tmp_path)), env={"DOCLAKE_PAGES_PER_UNIT": "abc"})
    assert_user_error(result, "DOCLAKE_PAGES_PER_UNIT='abc'", "valid integer")


def test_a_setting_out_of_range_in_the_environment(tmp_path):
    result = invoke("status", "--home", str(empty_home(tmp_path)), env={"DOCLAKE_MAX_RECEIVES": "0"})
    assert_user_error(result, "DOCLAKE_MAX_RECEIVES='0'", "greater than or equal to 1")


def test_debug_shows_the_traceback_instead(tmp_path):
    result = invoke("--debug", "status", "--home", str(empty_home(tmp_path)),
                    env={"DOCLAKE_PAGES_PER_UNIT": "abc"})
    assert result.exit_code == 1
    assert type(result.exception.__cause__).__name__ == "ValidationError"


@pytest.mark.parametrize("command", [["sql", "SELECT count(*) FROM jobs"], ["status"],
                                     ["search", "word"], ["lake", "check"],
                                     ["lake", "replay"], ["lake", "views"]])
def test_reading_commands_refuse_a_missing_home_and_create_nothing(tmp_path, command):
    home = tmp_path / "typo"
    assert_user_error(invoke(*command, "--home", str(home)), str(home), "--home")
    assert not home.exists()


def test_the_default_home_is_not_created_by_status(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["status"], env={"DOCLAKE_HOME": None})
    assert_user_error(result, str(tmp_path / ".doclake"))
    assert not (tmp_path / ".doclake").exists()


def test_unknown_format_reader_and_table(tmp_path, pdf_factory):
    assert_user_error(invoke("status", "--home", str(empty_home(tmp_path)), "--format", "xml"),
                      "--format 'xml'", "table, csv, json")
    assert_user_error(invoke("run", str(pdf_factory("a.pdf", 1)), "--reader", "magic",
                             "--home", str(tmp_path)), "--reader 'magic'", "auto, ", "simulated, text")
    assert_user_error(invoke("schema", "nope"), "no table 'nope'", "documents")


def test_athena_without_a_region_or_credentials_is_an_error_with_a_hint(monkeypatch):
    """Finding 7: no region, no credentials: ``error:`` and ``hint:`` lines, not a traceback."""
    pytest.importorskip("awswrangler")
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_ACCESS_KEY_ID",
                 "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    result = invoke("sql", "--engine", "athena", "SELECT 1")
    assert_user_error(result, "no AWS region", "--region")
    assert "hint" in result.output.lower()
    result = invoke("sql", "--engine", "athena", "--region", "us-east-1", "SELECT 1")
    assert_user_error(result, "no AWS credentials")


def test_athena_statements_are_split_by_a_sql_parser_not_on_every_semicolon():
    from infra.cli.aws import split_statements

    query = ("SELECT 'a;b' AS x; -- a comment; still a comment\nSELECT \"odd;name\" FROM t;"
             "SELECT 3;")
    assert split_statements(query) == [
        "SELECT 'a;b' AS x", "-- a comment; still a comment\nSELECT \"odd;name\" FROM t",
        "SELECT 3"]
    assert_user_error(invoke("sql", "--engine", "athena", "--region", "us-east-1",
                             "SELECT 'unclosed"), "cannot be read")


@pytest.mark.parametrize("model", ["gemini-9-ultra", "models/gemini-9-ultra-001"])
def test_a_model_with_no_price_stops_the_run_at_start_naming_it(tmp_path, pdf_factory, model):
    """Issue 19: a model missing from the price table was recorded at $0 all run long."""
    pdf = pdf_factory("a.pdf", 1)
    home = tmp_path / "home"
    result = invoke("run", str(pdf), "--home", str(home), "--reader", "simulated",
                    env={"DOCLAKE_PRIMARY_MODEL": model})
    assert_user_error(result, f"no price for model '{model}'", "DOCLAKE_MODEL_PRICES")
    assert not (home / "lake").exists() or not any((home / "lake").rglob("*.parquet"))


def test_a_priced_model_spelled_as_the_provider_spells_it_has_its_price():
    """``models/`` before the name or a pinned ``-001`` after it: the same price."""
    from extract.models.pricing import PriceTable

    prices = PriceTable()
    assert prices.missing(["models/gemini-2.5-flash", "gemini-2.5-flash-lite-001"]) == []
    assert prices.cost("models/gemini-2.5-flash-001", 1_000_000, 0) == prices.cost(
        "gemini-2.5-flash", 1_000_000, 0) > 0

