"""What makes a folder a doclake home: a small versioned marker file that only the commands that
work (``run``, ``worker``, ``serve``) write.

Commands that only read refuse a folder without it, so ``doclake status --home ~/dataroom`` (an
easy slip) says so instead of answering "0 jobs" and leaving databases among the user's files.
Homes made before the marker existed are recognised by the layout every run leaves (``jobs.db``
beside ``lake/`` or ``objects/``); the next command that writes adds the marker.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

__all__ = ["MARKER_NAME", "MARKER_VERSION", "HomeVersionError", "is_home", "mark_home"]

MARKER_NAME = "doclake-home.json"
MARKER_VERSION = 1


class HomeVersionError(ValueError):
    """The marker names a layout newer than this build knows: reading it could mislead."""


def _marker_version(home: Path) -> int | None:
    """The marker's version; None when there is no marker (or not a readable one)."""
    try:
        data = json.loads((home / MARKER_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    version = data.get("version") if isinstance(data, dict) else None
    return version if isinstance(version, int) and data.get("format") == "doclake-home" else None


def _legacy_layout(home: Path) -> bool:
    """A home from before the marker: ``run`` always leaves its job store and one of the two
    folders beside it, or at least a lake's event partitions (``lake/events/event_type=...``,
    as a lake copied alone is). A stray ``jobs.db`` alone (once left by a read command in the
    wrong folder) does not count."""
    if (home / "jobs.db").is_file() and ((home / "lake").is_dir() or (home / "objects").is_dir()):
        return True
    events = home / "lake" / "events"
    return events.is_dir() and any(p.name.startswith("event_type=") for p in events.iterdir())


def is_home(home: Path) -> bool:
    """True for a folder a doclake command made a home; ``HomeVersionError`` when its marker is
    from a newer build."""
    if not home.is_dir():
        return False
    version = _marker_version(home)
    if version is not None and version > MARKER_VERSION:
        raise HomeVersionError(f"{home} is a home of a newer doclake (layout {version}; this "
                               f"build knows {MARKER_VERSION})")
    return version is not None or _legacy_layout(home)


def mark_home(home: Path) -> None:
    """Write the marker (atomically: a reader never sees half a file); kept when present."""
    target = home / MARKER_NAME
    if _marker_version(home) is not None:
        return
    partial = home / f".{MARKER_NAME}.{os.getpid()}.tmp"
    partial.write_text(json.dumps({"format": "doclake-home", "version": MARKER_VERSION}) + "\n",
                       encoding="utf-8")
    os.replace(partial, target)
