"""What a doclake process sets in its environment for the native libraries it loads, before
they load (the worker processes it starts inherit it).

``OPENBLAS_NUM_THREADS=1``: numpy's OpenBLAS starts a thread a core when numpy is imported, and
those threads spin before they sleep. doclake never does linear algebra worth a thread (numpy
holds a compaction's masks and the fields' small scores), but a ``doclake run`` imports numpy
with pyarrow, and the spin took 0.07 s of the other core at every start, while that core had the
fork server's imports to do: ``import numpy`` alone used 0.16 s of CPU for 0.09 s of wall on two
cores, 0.085 s with one thread; the run's own process over 84 text documents used 0.89 to 1.04 s
of CPU with it set, 1.01 to 1.24 s without (three pairs). A value the user set is kept.
"""

from __future__ import annotations

import os

__all__ = ["NATIVE_THREADS", "settle_native_threads"]

NATIVE_THREADS = {"OPENBLAS_NUM_THREADS": "1"}


def settle_native_threads() -> None:
    """Set ``NATIVE_THREADS`` where the environment has no value of its own; before numpy's
    first import (later, OpenBLAS has read it already)."""
    for name, value in NATIVE_THREADS.items():
        os.environ.setdefault(name, value)
