"""Whether a process the test started (or had started for it) has exited."""

from __future__ import annotations

import time
from pathlib import Path


def gone(pid: int) -> bool:
    """True once ``pid`` has exited (a zombie waiting for a reaper counts as gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def gone_within(pid: int, seconds: float) -> bool:
    """``gone``, waiting up to ``seconds`` for it."""
    deadline = time.monotonic() + seconds
    while not gone(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True
