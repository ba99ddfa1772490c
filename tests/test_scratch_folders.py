"""Scratch folders belong to a process: none outlives a ``kill -9`` and a resume.

The probes: after ``kill -9`` during a conversion, ``$TMPDIR/doclake-convert-*/in/`` kept a copy
of the document and no later run removed it; two conversions starting together leaked one
``doclake-lo-template-*`` folder.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from extract.formats.scratch import scratch_folder, sweep_orphans
from tests.support.officegen import make_docx
from tests.support.processes import gone, gone_within


def _soffice():
    from extract.formats.office import find_soffice

    return find_soffice()


needs_soffice = pytest.mark.skipif(_soffice() is None, reason="LibreOffice is not installed")


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_the_sweep_removes_folders_of_dead_processes_only(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    dead, alive = _dead_pid(), os.getppid()
    orphan = tmp_path / f"doclake-convert-{dead}-abc"
    (orphan / "in").mkdir(parents=True)
    (orphan / "in" / "document.docx").write_bytes(b"copy of a document")
    living = tmp_path / f"doclake-convert-{alive}-def"
    living.mkdir()
    mine = scratch_folder("convert")
    other = tmp_path / f"doclake-cache-{dead}-x"  # not a scratch folder's name
    other.mkdir()
    assert mine.parent == tmp_path and str(os.getpid()) in mine.name
    assert sweep_orphans() == [str(orphan)]
    assert not orphan.exists() and living.exists() and mine.exists() and other.exists()


@needs_soffice
def test_two_conversions_starting_together_leave_no_template(tmp_path, monkeypatch):
    from extract.formats import office
    from extract.formats.sniff import Format

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    monkeypatch.setattr(office, "_template", None)
    documents = [make_docx(tmp_path / f"d{i}.docx", [f"document {i}"]) for i in range(2)]

    async def convert(path: Path) -> int:
        async with office.convert_to_pdf(path, Format.DOCX, office.ConvertLimits()) as done:
            return done.pdf.stat().st_size

    async def both() -> list[int]:
        return await asyncio.gather(*(convert(path) for path in documents))

    assert all(size > 0 for size in asyncio.run(both()))
    office._remove_template()  # what the process's exit does
    assert [p.name for p in scratch.iterdir() if p.name.startswith("doclake-")] == []


def _doclake(*args: str, home: Path) -> list[str]:
    return [sys.executable, "-m", "infra.cli.main", *args, "--home", str(home)]


@needs_soffice
def test_a_kill_during_a_conversion_then_a_resume_leaves_no_scratch_folder(tmp_path):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    room = tmp_path / "room"
    room.mkdir()
    make_docx(room / "memo.docx", ["A memo converted while the run is killed."])
    home = tmp_path / "home"
    env = {**os.environ, "TMPDIR": str(scratch), "DOCLAKE_POLL_INTERVAL_S": "0.2",
           "DOCLAKE_EVENT_FLUSH_S": "0.02", "DOCLAKE_CPU_WORKERS": "1"}
    process = subprocess.Popen(_doclake("run", str(room), "--fields", "none", home=home),
                               env=env, start_new_session=True, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not list(scratch.glob("doclake-convert-*/in/document-*.docx")):
        assert process.poll() is None and time.monotonic() < deadline
        time.sleep(0.01)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    assert list(scratch.glob("doclake-convert-*/in/document-*.docx"))  # what the kill left
    resumed = subprocess.run(_doclake("worker", "--until-idle", home=home), env=env,
                             capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    with sqlite3.connect(home / "jobs.db") as db:
        assert db.execute("SELECT status FROM jobs").fetchall() == [("succeeded",)]
    # The worker has exited: its own folders went with it, the killed run's were swept.
    assert [p.name for p in scratch.iterdir() if p.name.startswith("doclake-")] == []


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc (Linux)")
def test_the_sweep_ends_a_converter_whose_first_process_is_gone(tmp_path, monkeypatch):
    """A ``kill -9`` while bwrap sets its sandbox up leaves bwrap's init (no parent-death
    signal yet) and the converter under it running, the group's first process gone: the next
    start's sweep ends the group's processes that name the folder, and only those."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    owned = tmp_path / f"doclake-convert-{_dead_pid()}-abc"
    owned.mkdir()
    sleeper = "import time; time.sleep(600)"
    quiet = "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL"
    # A first process, leader of its own group, that starts two more in it and exits: one
    # names the folder on its command line (as bwrap's init and soffice do), one does not.
    leader = subprocess.run(
        [sys.executable, "-c",
         "import subprocess, sys\n"
         f"a = subprocess.Popen([sys.executable, '-c', {sleeper!r}, sys.argv[1]], {quiet})\n"
         f"b = subprocess.Popen([sys.executable, '-c', {sleeper!r}, 'elsewhere'], {quiet})\n"
         "print(a.pid, b.pid)",
         str(owned)],
        capture_output=True, text=True, start_new_session=True, timeout=60)
    naming, other = (int(pid) for pid in leader.stdout.split())
    try:
        group = os.getpgid(naming)
        assert group == os.getpgid(other) != os.getpgrp() and gone(group)
        (owned / "converter.pid").write_text(str(group))
        assert sweep_orphans() == [str(owned)]
        assert gone_within(naming, 10), "the converter left under a dead first process still runs"
        assert not gone(other), "a process of the group that does not name the folder was killed"
    finally:
        for pid in (naming, other):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
