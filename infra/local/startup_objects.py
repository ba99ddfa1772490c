"""Keep the objects a process made before its run out of the garbage collector's sight.

A run's process imports google-genai, pyarrow, DuckDB and pydantic's models before its first
message: about 150,000 objects the cyclic collector scanned again on every full collection, with
the event loop (and every thread) stopped meanwhile. On `doclake run` of 2,032 NDAs (text
layer) its five full collections took 301 ms, the longest 96 ms; in a burst of 200 documents
three of them stopped the loop for up to 78 to 101 ms, each one delaying every call answered
meanwhile. ``gc.freeze`` moves those objects to the permanent generation (CPython's own advice
for objects allocated at start-up): the same run's full collections took 100 ms, the longest 44,
and the burst's longest stall of the loop fell from 110 to 120 ms to 33 to 41.
"""

from __future__ import annotations

import gc


def freeze_startup_objects() -> None:
    """Freeze what exists now, once per process: a later run in the same process (tests, a
    bench's rounds) keeps the collector's view of its own objects. Nothing is collected first:
    a full collection here would stop the loop as long as the ones this saves."""
    if gc.get_freeze_count() == 0:
        gc.freeze()
