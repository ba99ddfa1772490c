"""A command that reads never writes: on a folder that is not a home, every reading command says
so (exit 2, ``error: no doclake home at ...``) and leaves the folder exactly as it was: no file
created, no permission changed. Only ``run``, ``worker`` and ``serve`` make a home, and only
after every check of their arguments passed."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from tests.support.terminal import doclake_command

MARKER = "doclake-home.json"  # written here by hand, not imported: the test pins the name


def tree(root: Path) -> dict[str, tuple[str, int]]:
    """Every path under ``root`` (and ``root`` itself) with its kind and mode."""
    found = {".": ("dir", stat.S_IMODE(root.lstat().st_mode))}
    for path in root.rglob("*"):
        info = path.lstat()
        kind = "dir" if stat.S_ISDIR(info.st_mode) else "file"
        found[path.relative_to(root).as_posix()] = (kind, stat.S_IMODE(info.st_mode))
    return found


@pytest.fixture
def dataroom(tmp_path: Path) -> Path:
    """A user's folder with open permissions, as ``~/dataroom`` would be."""
    room = tmp_path / "dataroom"
    (room / "contracts").mkdir(parents=True)
    (room / "contracts" / "nda.txt").write_text("Mutual non-disclosure agreement.\n")
    (room / "notes.md").write_text("# notes\n")
    for path in [room, room / "contracts"]:
        path.chmod(0o755)
    for path in [room / "contracts" / "nda.txt", room / "notes.md"]:
        path.chmod(0o644)
    return room


def doclake(*args: str, cwd: Path, env: dict[str, str] | None = None):
    """The installed command as a user types it (its own process, its own umask)."""
    full = {**os.environ, **(env or {})}
    full.pop("DOCLAKE_HOME", None)
    return subprocess.run([doclake_command(), *args], cwd=cwd, env=full, capture_output=True,
                          text=True, timeout=120)


READING_COMMANDS = [
    ["status"], ["status", "--config"], ["status", "--jobs"], ["search", "agreement"],
    ["show", "nda.txt"], ["sql", "SELECT 42 AS answer"], ["schema", "documents"],
    ["dashboard", "--out", "OUT"], ["evals", "report"], ["evals", "score"],
    ["evals", "failures"], ["lake", "views"], ["lake", "replay"],
]


@pytest.mark.parametrize("command", READING_COMMANDS, ids=lambda c: " ".join(c))
def test_a_reading_command_on_a_folder_that_is_not_a_home_changes_nothing(
        tmp_path, dataroom, command):
    before = tree(dataroom)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    args = [str(tmp_path / "page.html") if a == "OUT" else a for a in command]
    result = doclake(*args, "--home", str(dataroom), cwd=cwd)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert f"error: no doclake home at {dataroom}" in " ".join(result.stderr.split())
    assert "Traceback" not in result.stderr
    assert tree(dataroom) == before
    assert list(cwd.iterdir()) == []  # nothing written beside the user either
    assert not (tmp_path / "page.html").exists()


def test_a_run_refused_for_its_reader_leaves_no_home(tmp_path, dataroom):
    home = tmp_path / "new-home"
    result = doclake("run", str(dataroom), "--reader", "gemini", "--home", str(home),
                     cwd=tmp_path, env={"DOCLAKE_GEMINI_API_KEY": ""})
    assert result.returncode == 2, result.stderr
    assert "no API key" in result.stderr
    assert not home.exists()


def test_a_run_refused_for_its_reader_leaves_an_empty_folder_as_it_was(tmp_path, dataroom):
    home = tmp_path / "empty"
    home.mkdir(mode=0o755)
    home.chmod(0o755)
    result = doclake("run", str(dataroom), "--reader", "gemini", "--home", str(home),
                     cwd=tmp_path, env={"DOCLAKE_GEMINI_API_KEY": ""})
    assert result.returncode == 2, result.stderr
    assert tree(home) == {".": ("dir", 0o755)}


def test_run_will_not_make_a_home_of_a_users_folder(tmp_path, dataroom):
    before = tree(dataroom)
    result = doclake("run", str(dataroom / "notes.md"), "--fields", "none", "--home",
                     str(dataroom), cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "not a doclake home" in result.stderr
    assert tree(dataroom) == before


def test_a_run_marks_its_home_and_a_home_from_before_the_marker_still_reads(tmp_path, dataroom):
    home = tmp_path / "home"
    first = doclake("run", str(dataroom), "--fields", "none", "--home", str(home), cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert '"version": 1' in (home / MARKER).read_text()
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    (home / MARKER).unlink()  # a home an older build made: its layout, no marker
    listing = tree(home)
    status = doclake("status", "--home", str(home), "--format", "csv", cwd=tmp_path)
    assert status.returncode == 0, status.stderr
    assert "documents,succeeded,2" in status.stdout.replace(" ", "")
    new_paths = set(tree(home)) - set(listing)
    assert all(p.endswith(("-wal", "-shm")) for p in new_paths), new_paths  # SQLite's own only
    assert not (home / MARKER).exists()  # reading never marks
    again = doclake("worker", "--until-idle", "--home", str(home), cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert (home / MARKER).is_file()  # the next writing command does


def test_a_home_from_a_newer_build_is_refused_by_name(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / MARKER).write_text('{"format": "doclake-home", "version": 99}')
    result = doclake("status", "--home", str(home), cwd=tmp_path)
    assert result.returncode == 2
    assert "newer doclake" in result.stderr
