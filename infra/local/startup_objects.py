"""Keep the objects a process made before its run out of the garbage collector's sight.

A run's process imports google-genai, pyarrow, DuckDB and pydantic's models before its first
message: about 150,000 objects the cyclic collector scanned again on every full collection, with
the event loop (and every thread) stopped meanwhile. ``gc.freeze`` moves them to the permanent
generation (CPython's own advice for objects allocated at start-up). `doclake run` of 2,032 NDAs
(text layer), two pairs: its full collections took 137 and 115 ms against 271 and 276, the
longest 57 and 44 ms against 87 and 73. Refcounting still frees a frozen object nobody holds;
only a cycle among them is never collected.
"""

from __future__ import annotations

import gc

__all__ = ["freeze_startup_objects"]


def freeze_startup_objects() -> None:
    """Freeze what exists now, once per process: a later run in the same process (tests, a
    bench's rounds) keeps the collector's view of its own objects. Nothing is collected first:
    a full collection here would stop the loop as long as the ones this saves."""
    if gc.get_freeze_count() == 0:
        gc.freeze()
