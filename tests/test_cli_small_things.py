"""The smaller things of issue 26 (finding 9): every command takes --home, mistakes in arguments
read as `error:`/`hint:` lines, and `.tables` lists every analyst table."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from infra.cli.main import app
from tests.support.homes import empty_home

runner = CliRunner()


def invoke(*args: str, input: str | None = None):
    return runner.invoke(app, list(args), input=input)


def _plain_user_error(result, *fragments: str) -> None:
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: "), result.output
    assert "\nhint: " in result.output
    assert "╭" not in result.output and "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in result.output


def test_schema_takes_home_like_every_command(tmp_path):
    result = invoke("schema", "jobs", "--home", str(empty_home(tmp_path)), "--format", "json")
    assert result.exit_code == 0, result.output
    assert {r["column"] for r in json.loads(result.output)} >= {"job_id", "status"}


def test_argument_mistakes_print_error_and_hint(tmp_path):
    _plain_user_error(invoke("run", str(tmp_path), "--home", str(tmp_path / "h"),
                             "--concurrency", "abc"), "--concurrency", "doclake run --help")
    _plain_user_error(invoke("search", "--home", str(empty_home(tmp_path))), "query", "doclake search --help")
    _plain_user_error(invoke("run", str(tmp_path), "--home", str(tmp_path / "h"),
                             "--concurrency", "0"), "--concurrency 0", "1 or more")


def test_tables_lists_labels_and_the_eval_views():
    tables = {r["table"] for r in json.loads(invoke("sql", "--tables", "--format", "json").output)}
    assert {"labels", "label_values", "eval_runs", "eval_scores", "eval_outcomes"} <= tables


def test_a_piped_summary_names_failed_files_by_path_on_one_line(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    folder = tmp_path / "docs" / "a-rather-long-folder-name-for-the-data-room" / "second-level"
    folder.mkdir(parents=True)
    names = [f"broken-file-number-{n}-with-a-long-descriptive-name.pdf" for n in range(2)]
    for name in names:
        (folder / name).write_bytes(b"%PDF-1.7 truncated nonsense " + name.encode())
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-m", "infra.cli.main", "run", str(tmp_path / "docs"),
                           "--home", str(tmp_path / "home")], cwd=root, capture_output=True,
                          text=True, timeout=240, env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin",
                                                       "HOME": str(tmp_path), "COLUMNS": "80"})
    assert done.returncode == 0, done.stderr
    failed = [line for line in done.stdout.splitlines() if line.startswith("  corrupt")]
    assert len(failed) == 1, done.stdout
    for name in names:
        assert f"a-rather-long-folder-name-for-the-data-room/second-level/{name}" in failed[0]


def test_export_finetune_refuses_a_folder_for_out(tmp_path):
    _plain_user_error(invoke("evals", "export-finetune", "--out", str(tmp_path), "--home",
                             str(tmp_path)), "is a folder", "train.jsonl")
