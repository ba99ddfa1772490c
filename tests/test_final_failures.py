"""Failures that will recur are final at once, with a reason that names the limit.

The probes: 100,000 nested ``<div>``s in an ``.html`` and 3,000 nested ``multipart/mixed`` parts
in an ``.eml`` failed with the reason ``RecursionError`` after five attempts (65 s); a docx whose
XML inflates past what can be read failed ``corrupt``. Each now fails on its first delivery,
``too_deep`` or ``too_large``, and its message says which limit.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from infra.cli.main import app
from tests.support.officegen import make_docx

runner = CliRunner()
FAST = {"DOCLAKE_EVENT_FLUSH_S": "0.02", "DOCLAKE_POLL_INTERVAL_S": "0.2",
        "DOCLAKE_CPU_WORKERS": "1"}


def invoke(*args: str, env: dict[str, str] | None = None):
    return runner.invoke(app, list(args), env={**FAST, **(env or {})}, catch_exceptions=False)


def failures_of(room: Path, home: Path, env: dict[str, str] | None = None) -> list[dict]:
    result = invoke("run", str(room), "--home", str(home), "--fields", "none", env=env)
    assert result.exit_code == 0, result.output
    return json.loads(invoke("sql", "SELECT j.failure_reason AS reason, f.final, f.message "
                             "FROM jobs j JOIN failures f USING (job_id) ORDER BY f.occurred_at",
                             "--home", str(home), "--format", "json").output)


def deep_html(path: Path, depth: int) -> Path:
    path.write_text("<html><body>" + "<div>" * depth + "deep" + "</div>" * depth +
                    "</body></html>")
    return path


def deep_email(path: Path, depth: int) -> Path:
    lines = ["From: a@example.com", "To: b@example.com", "Subject: deep", "MIME-Version: 1.0"]
    for level in range(depth):
        lines += [f'Content-Type: multipart/mixed; boundary="b{level}"', "", f"--b{level}"]
    lines += ["Content-Type: text/plain", "", "deep"]
    lines += [f"--b{level}--" for level in reversed(range(depth))]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("make", [
    lambda room: deep_html(room / "deep.html", 100_000),
    lambda room: deep_email(room / "deep.eml", 3_000),
], ids=["html", "eml"])
def test_a_document_nested_too_deep_fails_once_too_deep(tmp_path, make):
    room = tmp_path / "room"
    room.mkdir()
    make(room)
    failures = failures_of(room, tmp_path / "home")
    assert [f["reason"] for f in failures] == ["too_deep"]  # one failure: not retried
    assert failures[0]["final"] is True
    assert "recursion limit" in failures[0]["message"]


def test_an_office_file_inflating_past_the_limit_fails_once_too_large(tmp_path):
    room = tmp_path / "room"
    room.mkdir()
    bomb = make_docx(room / "bomb.docx", ["x"])
    with zipfile.ZipFile(bomb, "a", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("word/footer1.xml", "<w:ftr>" + " " * (3 * 2**20) + "</w:ftr>")
    failures = failures_of(room, tmp_path / "home", {"DOCLAKE_MAX_INFLATED_BYTES": str(2**20)})
    assert [f["reason"] for f in failures] == ["too_large"]
    assert "DOCLAKE_MAX_INFLATED_BYTES" in failures[0]["message"]
