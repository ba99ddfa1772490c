"""A converter dies with the run that started it, and its work folder goes at the next start.

Before: after ``kill -9`` of ``doclake run`` during a conversion, the LibreOffice child kept
running (it was in a session of its own) and its work folder (a copy of the document, the PDF)
stayed until the next run. Now the first process of a conversion has a parent-death signal and
the conversion runs in a PID namespace where unshare or bwrap make one
(``extract.formats.confine``): every converter process is gone at once (well under a second,
even beside busy loops), long before the conversion itself could have ended.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from extract.formats.office import find_soffice
from extract.formats.scratch import sweep_orphans
from tests.support.officegen import make_docx

pytestmark = pytest.mark.skipif(find_soffice() is None or not Path("/proc").is_dir(),
                                reason="needs LibreOffice and /proc (Linux)")


_GONE_WITHIN_S = 5.0


def _processes_naming(marker: bytes) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def _names(pids: list[int]) -> set[str]:
    names = set()
    for pid in pids:
        with contextlib.suppress(OSError):
            names.add(Path(f"/proc/{pid}/comm").read_text().strip())
    return names


def _wait_for(condition, timeout_s: float, step_s: float = 0.02):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if value := condition():
            return value
        time.sleep(step_s)
    return condition()


@pytest.mark.parametrize("boundary", ["as found", "without bwrap"])
def test_kill_9_of_a_run_during_a_conversion_leaves_no_converter(tmp_path, boundary):
    room = tmp_path / "room"
    room.mkdir()
    # Long enough that LibreOffice alone needs 20 s and more to convert it: a converter gone
    # within seconds of the kill was ended by it, not by finishing its work.
    make_docx(room / "memo.docx", [f"Paragraph {i} of a memo long enough to convert."
                                   for i in range(120_000)])
    env = {**os.environ, "DOCLAKE_CPU_WORKERS": "1", "TMPDIR": str(tmp_path)}
    if boundary == "without bwrap":
        env["PATH"] = _path_without_bwrap(tmp_path)
    run = subprocess.Popen([sys.executable, "-m", "infra.cli.main", "run", str(room), "--home",
                            str(tmp_path / "home")], env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    marker = f"doclake-convert-{run.pid}-".encode()
    try:
        converters = _wait_for(lambda: _processes_naming(marker), timeout_s=120)
        assert converters, "the run never started a conversion"
        # The converter itself (soffice.bin), not only its launcher, is running: bwrap's own
        # command line names soffice too, and a kill while bwrap still sets its sandbox up is
        # the next start's sweep's to end (test_scratch_folders).
        assert _wait_for(lambda: "soffice.bin" in _names(_processes_naming(marker)),
                         timeout_s=60)
        os.kill(run.pid, signal.SIGKILL)
        run.wait()
        killed_at = time.monotonic()
        # A wait for the event itself: on a loaded machine the kernel may take a moment to
        # tear the namespace down, never the conversion's 20 s.
        left = _wait_for(lambda: not _processes_naming(marker), timeout_s=_GONE_WITHIN_S)
        took = time.monotonic() - killed_at
        assert left, f"converter processes still running: {_processes_naming(marker)}"
        print(f"converter processes gone {took:.2f} s after the kill")
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
        for pid in _processes_naming(marker):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    # Its work folder (a copy of the document) is there until the next writing command starts.
    folders = [p for p in tmp_path.iterdir() if p.name.startswith(f"doclake-convert-{run.pid}-")]
    assert folders
    swept = sweep_orphans(tmp_path)
    assert {str(p) for p in folders} <= set(swept)
    assert not any(p.exists() for p in folders)


def _path_without_bwrap(tmp_path: Path) -> str:
    """PATH with a ``bwrap`` that cannot start: the machine as if bubblewrap were missing."""
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "bwrap").write_text("#!/bin/sh\nexit 1\n")
    (shim / "bwrap").chmod(0o755)
    return f"{shim}:{os.environ.get('PATH', '')}"


def _pipes() -> set[Path]:
    """LibreOffice's single-instance sockets of this user in /tmp and /var/tmp."""
    return {path for folder in (Path("/tmp"), Path("/var/tmp"))
            for path in folder.glob(f"OSL_PIPE_{os.getuid()}_*")}


@pytest.mark.parametrize("boundary", ["as found", "without bwrap"])
def test_a_run_that_converts_leaves_no_socket_in_tmp(tmp_path, boundary):
    """LibreOffice makes its single-instance socket in /tmp whatever TMPDIR says. Under
    Landlock (no bwrap) it may make it there and not remove it, and every conversion, the
    profile's first start included, left one: 126 of them after a day of runs."""
    room = tmp_path / "room"
    room.mkdir()
    make_docx(room / "memo.docx", ["A memo converted on its way to the lake."])
    env = {**os.environ, "DOCLAKE_CPU_WORKERS": "1", "TMPDIR": str(tmp_path)}
    if boundary == "without bwrap":
        env["PATH"] = _path_without_bwrap(tmp_path)
    before = _pipes()
    subprocess.run([sys.executable, "-m", "infra.cli.main", "run", str(room), "--home",
                    str(tmp_path / "home"), "--reader", "text", "--fields", "none"],
                   env=env, check=True, capture_output=True, timeout=300)
    listed = subprocess.run([sys.executable, "-m", "infra.cli.main", "status", "--home",
                             str(tmp_path / "home"), "--format", "json"], env=env, check=True,
                            capture_output=True, text=True).stdout
    assert '"succeeded"' in listed, listed
    assert _pipes() - before == set()
