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

__all__ = ["MAIN_PATH_ENV", "PRELOAD", "context", "start"]

MAIN_PATH_ENV = "DOCLAKE_FORKSERVER_MAIN"
"""The environment variable that names the parent's main script to the fork server."""

# Modules every worker needs: imported once in the fork server, inherited by every worker it
# starts (a worker replaced after a timeout is ready in milliseconds, not after a fresh import).
# They are the modules of the functions the lanes run and of the objects sent with them (the
# readers, the handlers' pool calls, ingest's file work, the stores a worker writes to): a
# worker unpickles a call by importing its function's module, and before these were preloaded
# each fresh worker paid that import (0.2 s) on its first call. A burst's first ten renders
# for a model waited 0.43 to 0.51 s each for it (3 to 20 ms afterwards).
PRELOAD = ["infra.local.forkserver_main", "pypdfium2", "extract.formats.pdf",
           "extract.readers.text", "extract.readers.ocr", "extract.readers.vision",
           "extract.handlers.split", "extract.handlers.index", "extract.handlers.sheet",
           "ingest.fingerprint", "infra.local.search", "infra.local.objectstore"]


def context() -> multiprocessing.context.ForkServerContext:
    """The forkserver context, with the preload set (before the server starts, or it is lost)."""
    # The server is a fresh ``python -c`` interpreter: it puts the current folder first on its
    # path and (on Python 3.11) never takes the parent's, so a user's own ``infra/`` or ``lake/``
    # folder where `doclake run` is typed would shadow doclake's packages in the preload (whose
    # ImportError multiprocessing swallows) and every worker would fail. PYTHONSAFEPATH keeps
    # the folder off the path of the server and of every Python process doclake starts.
    os.environ["PYTHONSAFEPATH"] = "1"
    _hand_main_to_server()
    forkserver = multiprocessing.get_context("forkserver")
    forkserver.set_forkserver_preload(PRELOAD)
    return forkserver


def _hand_main_to_server() -> None:
    """Name this process's main script for the server (``MAIN_PATH_ENV``), which runs it once
    (``infra.local.forkserver_main``, first in ``PRELOAD``).

    multiprocessing runs the parent's main script again in every child it starts, as
    ``__mp_main__``, unless the child already holds it: for ``doclake`` that is the console
    script, so each worker imported the CLI's modules at its own start (16 to 24 ms of CPU,
    five workers at a run's start), and a worker still doing so when its pool was stopped read
    its channel after it was closed. ``set_forkserver_preload(["__main__", ...])`` is meant to
    run it once in the server, but on Python 3.11 the server is never given the script's path
    (CPython gh-126631, fixed in 3.13)."""
    from multiprocessing import spawn

    main_path = spawn.get_preparation_data("doclake").get("init_main_from_path")
    if main_path:
        os.environ[MAIN_PATH_ENV] = main_path
    else:
        os.environ.pop(MAIN_PATH_ENV, None)


def start() -> None:
    """Launch the fork server now if it is not running; never waits for its imports. A failure
    here is left for the first worker to report (it starts the server itself)."""
    from multiprocessing import forkserver

    context()
    try:
        forkserver.ensure_running()
    except Exception:  # noqa: BLE001 - the first pool call starts it again and says why
        return
