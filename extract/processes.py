"""Whether a process of this host is still running: how local state held by a dead process is freed
at once after ``kill -9`` (queue messages, the poller's lease, a field claim, a conversion's
scratch folder) instead of after a timeout. Here, below ``infra``, so that the formats' scratch
sweep and the local stores ask the same question the same way."""

from __future__ import annotations

import os

__all__ = ["process_alive"]


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True
