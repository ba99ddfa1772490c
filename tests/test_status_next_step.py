"""``status`` names the latest failed files with their reason and what to do, and the command to
type next; ``show`` prints only paths that exist and its durations in seconds."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.support.terminal import doclake_command


def doclake(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "DOCLAKE_HOME"}
    return subprocess.run([doclake_command(), *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("status")
    room = root / "room"
    (room / "sub").mkdir(parents=True)
    (room / "note.txt").write_text("A short note about the agreement.\n")
    (room / "sub" / "cut.docx").write_bytes(b"PK\x03\x04 this zip is cut short")
    home = root / "home"
    done = doclake("run", str(room), "--fields", "none", "--home", str(home), cwd=root)
    assert done.returncode == 0, done.stderr
    return home


def test_status_lists_the_failed_file_its_reason_and_hint_then_the_next_command(home):
    done = doclake("status", "--home", str(home), "--format", "json", cwd=home.parent)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["latest_failed"] == [{
        "file": "sub/cut.docx", "reason": "corrupt",
        "hint": "the file is damaged or truncated; re-export or re-download it, then run it "
                "again"}]
    assert f"next: doclake show --home {home} sub/cut.docx" in done.stderr
    rows = list(csv.reader(io.StringIO(doclake("status", "--home", str(home), "--format", "csv",
                                               cwd=home.parent).stdout)))
    assert ["latest_failed", "sub/cut.docx", "corrupt"] in rows


def test_show_of_a_failed_file_names_no_text_folder_and_gives_seconds(home):
    done = doclake("show", "sub/cut.docx", "--home", str(home), "--format", "json",
                   cwd=home.parent)
    assert done.returncode == 0, done.stderr
    about = json.loads(done.stdout)
    assert about["status"] == "failed" and about["text"] is None
    assert isinstance(about["took"], float) and 0 <= about["took"] < 300
    ok = json.loads(doclake("show", "note.txt", "--home", str(home), "--format", "json",
                            cwd=home.parent).stdout)
    assert Path(ok["text"]).is_dir() and isinstance(ok["took"], float)


def test_search_without_a_match_says_so_and_what_to_try(home):
    done = doclake("search", "zebra", "--home", str(home), "--format", "csv", cwd=home.parent)
    assert done.returncode == 0, done.stderr
    assert "no match for zebra" in done.stderr
    assert done.stdout.strip() == "document,page,snippet,document_id,job_id"
