"""Looking into a home from outside while a ``doclake`` process runs on it (the kill tests)."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def _count(home: Path, sql: str) -> int:
    """``sql``'s count in the home's job store; 0 while the store cannot be read yet."""
    try:
        with sqlite3.connect(home / "jobs.db", timeout=5) as db:
            return db.execute(sql).fetchone()[0]
    except sqlite3.Error:
        return 0


def jobs_created(home: Path) -> int:
    """How many jobs the home's store holds.

    A kill test waits for every file to have a job before it kills a run: the run plans its
    files in batches of 1, 2, 4, ..., so on a loaded machine pages can be stored before the last
    file has a job, and the ``doclake worker`` that resumes finishes jobs, it does not ingest."""
    return _count(home, "SELECT count(*) FROM jobs")


def units_done(home: Path) -> int:
    """How many units the home's store has marked done."""
    return _count(home, "SELECT count(*) FROM units WHERE status = 'done'")


def empty_home(folder: Path) -> Path:
    """``folder`` made an empty doclake home (its marker written by hand, as ``run`` writes it),
    for the reading commands, which refuse a folder that is not a home."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "doclake-home.json").write_text('{"format": "doclake-home", "version": 1}\n')
    return folder
