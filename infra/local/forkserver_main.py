"""Imported by the fork server only, first of its preload: it runs the parent's main script
once, as multiprocessing would in every worker (``infra.local.forkserver._hand_main_to_server``
says why). A worker forked from the server then holds ``__mp_main__`` already and does not
run the script again. Only ``multiprocessing``, ``os`` and ``infra.local.forkserver`` (which
imports nothing more) are imported here."""

from __future__ import annotations

import os
from multiprocessing import process, spawn

from infra.local.forkserver import MAIN_PATH_ENV

__all__ = ["run_main_once"]


def run_main_once(path: str | None) -> None:
    """Run the script at ``path`` as ``__mp_main__``, as multiprocessing's own preload of
    ``"__main__"`` does (its ``if __name__ == "__main__"`` part does not run; ``sys.argv`` is
    empty here, as in that preload before CPython gh-143706). A script that fails here is left
    to each worker, as before: the server itself must start."""
    if not path:
        return
    process.current_process()._inheriting = True
    try:
        spawn.import_main_path(path)
    except Exception:  # noqa: BLE001, S110 - each worker runs it then, and says why if it fails
        pass
    finally:
        del process.current_process()._inheriting


run_main_once(os.environ.get(MAIN_PATH_ENV))
