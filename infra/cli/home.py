"""Settings and the state folder (``--home``), checked before any command touches them.

Only the commands that do work (``run``, ``worker``, ``serve``) create a home, and mark it
(``infra.local.home_marker``), after every check of their arguments passed. Every other command
refuses a folder that is not a home: a typo in ``--home`` must not answer "0 jobs" with
confidence, nor leave databases in the user's folder or change its permissions.
"""

from __future__ import annotations

import os
import tempfile
from enum import Enum
from pathlib import Path
from typing import Any

from infra.cli.errors import UserError, settings_error
from infra.local import home_marker
from infra.local.home_marker import mark_home
from infra.local.private_home import PRIVATE_UMASK, make_private

__all__ = ["HOME_HINT", "Access", "load_settings", "check_home", "is_home", "open_settings", "open_home",
           "hold_writer_lock", "open_lake_location"]

HOME_HINT = "pass --home DIR or set DOCLAKE_HOME to the folder `doclake run` used"


class Access(Enum):
    READ = "read"  # must be a home; nothing written (sql over the lake)
    WRITE = "write"  # must be a home, writable (status and search open SQLite databases)
    CREATE = "create"  # made a home if missing or empty, must be writable (run, worker, serve)


def load_settings(home: Path | None = None, *, options: dict[str, str] | None = None,
                  **overrides: Any):
    """``Settings`` from the environment and the command line, or a ``UserError`` naming the bad
    value. ``options`` maps a field to the command-line option it came from, for the message."""
    from pydantic import ValidationError

    from infra.settings import Settings

    values = {k: v for k, v in overrides.items() if v is not None}
    if home is not None:
        values["home"] = home
    try:
        return Settings(**values)
    except ValidationError as error:
        raise settings_error(error, {"home": "--home", **(options or {})}) from error


def check_home(home: Path, access: Access) -> Path:
    """The home folder, usable as asked, or a ``UserError`` with the path and a hint.

    Only ``Access.CREATE`` writes here (the folder, its marker, its permissions), and only on a
    missing folder, an empty one, or one that already is a home: a command that reads never
    creates a file nor changes a mode, and no command adopts a folder of the user's."""
    if home.exists() and not home.is_dir():
        raise UserError(f"home {home} is a file, not a folder", HOME_HINT)
    if access is not Access.CREATE:
        if not is_home(home):
            raise UserError(_not_a_home(home), f"{HOME_HINT}; `doclake run PATH --home DIR` "
                            "creates one")
        os.umask(PRIVATE_UMASK)  # what SQLite may add beside its files is private; nothing chmod-ed
        if access is Access.WRITE and not _writable(home):
            raise UserError(f"home {home} is not writable",
                            "doclake keeps its queues and job store there (even `status` opens "
                            "them); fix its permissions or choose another --home")
        return home
    if home.exists() and not is_home(home) and any(home.iterdir()):
        raise UserError(f"{home.resolve()} is a folder that is not a doclake home, and not empty",
                        "give --home a new or empty folder (doclake makes it private to you), "
                        "or the home an earlier `doclake run` used")
    try:
        make_private(home)
        if not _writable(home):
            raise PermissionError(13, "not writable")
        mark_home(home)
    except OSError as error:
        raise UserError(f"cannot use {home} as a home: {error.strerror or error}",
                        "choose a folder you can write, with --home or DOCLAKE_HOME") from None
    return home


def is_home(home: Path) -> bool:
    """``home_marker.is_home``, a marker from a newer build said as a user's error."""
    try:
        return home_marker.is_home(home)
    except home_marker.HomeVersionError as error:
        raise UserError(str(error), "use the doclake that made it (pip install -U doclake)") \
            from None


def _not_a_home(home: Path) -> str:
    where = home.resolve()
    if not home.exists():
        return f"no doclake home at {where} (nothing has run there)"
    return f"no doclake home at {where} (the folder exists, but no `doclake run` made it a home)"


def _writable(folder: Path) -> bool:
    """Tried, not assumed: ``os.access`` says yes to root on read-only mounts and sysfs."""
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".doclake-probe-"):
            return True
    except OSError:
        return False


def open_settings(home: Path | None, access: Access, *, options: dict[str, str] | None = None,
                  **overrides: Any):
    """Settings whose home has passed ``check_home``: what every command starts with."""
    return open_home(load_settings(home, options=options, **overrides), access)


def open_home(settings, access: Access):
    """``settings`` once its home passed ``check_home``: ``run`` and ``serve`` build their
    settings first, check the models they will call, and only then create the home."""
    check_home(settings.home, access)
    _check_lake(settings.home, settings.lake_uri, settings.lake, access)
    if access is Access.CREATE:
        hold_writer_lock(settings.home)
    return settings


def hold_writer_lock(home: Path) -> None:
    """One home, one writer (``infra.local.home_lock``): held until the command ends (released
    by ``DoclakeGroup.invoke`` when it returns, so a test's in-process run lets the next one
    take it, and by the kernel on any exit); a second writer is refused naming the first."""
    import sys

    import click

    from infra.local.home_lock import HomeBusy, WriterLock

    context = click.get_current_context(silent=True)
    name = context.info_name if context is not None and context.parent is not None else None
    if name is None:  # as typed: `doclake run ...`
        name = next((w for w in sys.argv[1:3] if w in ("run", "worker", "serve")), None)
    try:
        WriterLock.acquire(home, f"doclake {name}" if name else "doclake")
    except HomeBusy as busy:
        pid = busy.holder.split(",")[0].removeprefix("pid ")
        raise UserError(f"another doclake is working on home {home} ({busy.holder})",
                        "one home has one writer: wait for it to finish"
                        + (f" (or stop it: kill -INT {pid})" if pid.isdigit() else "")
                        + ", or give this command another --home") from None
    except OSError as error:
        raise UserError(f"cannot lock home {home}: {error.strerror or error}",
                        "choose a folder you can write, with --home or DOCLAKE_HOME") from None


def _check_lake(home: Path, lake_uri: str | None, lake: str, access: Access) -> None:
    local = lake_uri is None or "://" not in lake_uri
    if local and access is Access.READ and not Path(lake).exists() and Path(lake) != home / "lake":
        raise UserError(f"no lake at {lake}", "check DOCLAKE_LAKE_URI")


def open_lake_location(home: Path | None) -> str:
    """The lake of a home that passed ``check_home`` for reading, resolved as ``Settings`` does
    (``--home``, else ``DOCLAKE_HOME``, else ``.doclake``; ``DOCLAKE_LAKE_URI``, else
    ``<home>/lake``) without building ``Settings``: pydantic-settings and the extract package it
    pulls in are most of what ``doclake sql`` would otherwise spend before its query (issue 26).
    The other settings are not read, so one set wrong does not stop a query that ignores it.
    ``tests/test_sql_startup.py`` pins that both resolve alike."""
    # pydantic-settings matches names case-insensitively; an empty value counts as unset below
    # as it does there (``lake_uri or <home>/lake``; ``Path("")`` is ``.``).
    environ = {name.upper(): value for name, value in os.environ.items()}
    if home is None:
        home = Path(environ.get("DOCLAKE_HOME", ".doclake"))
    lake_uri = environ.get("DOCLAKE_LAKE_URI")
    lake = lake_uri or str(home / "lake")
    check_home(home, Access.READ)
    _check_lake(home, lake_uri, lake, Access.READ)
    return lake
