"""The fork server every CPU worker is forked from: started first, while the run still imports.

Each worker process of the lanes (``infra.local.cpu_lanes``) is forked from one multiprocessing
fork server, a fresh interpreter that imports ``PRELOAD`` once (PDFium, the readers, the
handlers' pool functions: 0.5 to 0.8 s of CPU). Until it has, no worker exists and a run's first
split waits. ``start`` launches it without waiting for it (``ensure_running`` spawns it and
returns; the first worker asked for waits for its imports), so ``doclake run`` starts it before
its own imports and the two overlap on two cores. Only ``multiprocessing`` is imported here.
"""

from __future__ import annotations

import multiprocessing
import os

__all__ = ["PRELOAD", "context", "start"]

# Modules every worker needs: imported once in the fork server, inherited by every worker it
# starts (a worker replaced after a timeout is ready in milliseconds, not after a fresh import).
# They are the modules of the functions the lanes run and of the objects sent with them (the
# readers, the handlers' pool calls, ingest's file work, the stores a worker writes to): a
# worker unpickles a call by importing its function's module, and before these were preloaded
# each fresh worker paid that import (0.2 s) on its first call. A burst's first ten renders
# for a model waited 0.43 to 0.51 s each for it (3 to 20 ms afterwards).
PRELOAD = ["pypdfium2", "extract.formats.pdf", "extract.readers.text", "extract.readers.ocr",
           "extract.readers.vision", "extract.handlers.split", "extract.handlers.index",
           "extract.handlers.sheet", "ingest.fingerprint", "infra.local.search",
           "infra.local.objectstore"]


def context() -> multiprocessing.context.ForkServerContext:
    """The forkserver context, with the preload set (before the server starts, or it is lost)."""
    # The server is a fresh ``python -c`` interpreter: it puts the current folder first on its
    # path and (on Python 3.11) never takes the parent's, so a user's own ``infra/`` or ``lake/``
    # folder where `doclake run` is typed would shadow doclake's packages in the preload (whose
    # ImportError multiprocessing swallows) and every worker would fail. PYTHONSAFEPATH keeps
    # the folder off the path of the server and of every Python process doclake starts.
    os.environ["PYTHONSAFEPATH"] = "1"
    forkserver = multiprocessing.get_context("forkserver")
    forkserver.set_forkserver_preload(PRELOAD)
    return forkserver


def start() -> None:
    """Launch the fork server now if it is not running; never waits for its imports. A failure
    here is left for the first worker to report (it starts the server itself)."""
    from multiprocessing import forkserver

    context()
    try:
        forkserver.ensure_running()
    except Exception:  # noqa: BLE001 - the first pool call starts it again and says why
        return
