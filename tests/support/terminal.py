"""Run a command the way a person does: in a pseudo-terminal, so rich sees a terminal.

Tests that pipe a command's output never start its live progress bar, its colours or its
interactive prompt, which is where a command can break for a person and not for a test. Here the
child's stdin, stdout and stderr are the slave side of a pty (``pty.openpty``); the test reads the
master side until the child exits and may type into it.
"""

from __future__ import annotations

import os
import re
import select
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[=>]")
HIDE_CURSOR = "\x1b[?25l"  # rich's Live hides the cursor while a progress bar is drawn


@dataclass
class TerminalRun:
    returncode: int
    raw: str
    """Everything the terminal received, escape sequences included."""

    @property
    def text(self) -> str:
        """What a person reads: escape sequences removed, carriage returns as line breaks."""
        return ANSI.sub("", self.raw).replace("\r\n", "\n").replace("\r", "\n")


def doclake_command() -> str:
    """The installed ``doclake`` script beside this interpreter (what a user's shell finds)."""
    script = Path(sys.executable).parent / "doclake"
    assert script.exists(), f"no installed doclake script at {script}: run `make install`"
    return str(script)


def run_in_terminal(argv: list[str], *, env: dict[str, str] | None = None,
                    cwd: str | Path | None = None, typed: list[str] | None = None,
                    timeout: float = 240.0, columns: int = 100) -> TerminalRun:
    """Run ``argv`` with a pty as its terminal; ``typed`` lines are sent one by one, each after
    the output has been quiet a moment (a person typing at the prompt)."""
    master, slave = os.openpty()
    os.set_blocking(master, False)
    full_env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": str(columns), "LINES": "40",
                **(env or {})}
    for name in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "CI"):
        full_env.pop(name, None)  # rich would stop treating the pty as a terminal
    process = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=full_env,
                               cwd=cwd, start_new_session=True, close_fds=True)
    os.close(slave)
    chunks: list[bytes] = []
    pending = list(typed or [])
    deadline = time.monotonic() + timeout
    last_output = time.monotonic()
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:  # EIO: the child closed the terminal
                    data = b""
                if data:
                    chunks.append(data)
                    last_output = time.monotonic()
                elif process.poll() is not None:
                    break
            elif process.poll() is not None:
                break
            if pending and time.monotonic() - last_output > 0.7:
                os.write(master, pending.pop(0).encode())
                last_output = time.monotonic()
            if time.monotonic() > deadline:
                process.kill()
                raise AssertionError(f"{argv} did not end in {timeout} s; it printed:\n"
                                     + ANSI.sub("", b"".join(chunks).decode(errors="replace")))
    finally:
        process.wait(timeout=30)
        os.close(master)
    return TerminalRun(process.returncode, b"".join(chunks).decode(errors="replace"))
