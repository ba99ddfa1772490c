"""Looking into a home from outside while a ``doclake`` process runs on it (the kill tests)."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def jobs_created(home: Path) -> int:
    """How many jobs the home's store holds; 0 while it cannot be read yet.

    A kill test waits for every file to have a job before it kills a run: the run plans its
    files in batches of 1, 2, 4, ..., so on a loaded machine pages can be stored before the last
    file has a job, and the ``doclake worker`` that resumes finishes jobs, it does not ingest."""
    try:
        with sqlite3.connect(home / "jobs.db", timeout=5) as db:
            return db.execute("SELECT count(*) FROM jobs").fetchone()[0]
    except sqlite3.Error:
        return 0
