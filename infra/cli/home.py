"""Settings and the state folder (``--home``), checked before any command touches them.

Only the commands that do work (``run``, ``worker``, ``serve``) create a home. Commands that only
read (``sql``, ``status``, ``search``, ``lake check|replay``, later ``evals`` and ``dashboard``)
refuse one that does not exist: a typo in ``--home`` must not answer "0 jobs" with confidence,
nor leave an empty ``.doclake`` in whatever folder the command ran.
"""

from __future__ import annotations

import os
import tempfile
from enum import Enum
from pathlib import Path
from typing import Any

from infra.cli.errors import UserError, settings_error
from infra.local.private_home import make_private

HOME_HINT = "pass --home DIR or set DOCLAKE_HOME to the folder `doclake run` used"


class Access(Enum):
    READ = "read"  # must exist; nothing written (sql over the lake)
    WRITE = "write"  # must exist and be writable (status and search open SQLite databases)
    CREATE = "create"  # created if missing, must be writable (run, worker, serve)


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
    """The home folder, usable as asked, or a ``UserError`` with the path and a hint."""
    if home.exists() and not home.is_dir():
        raise UserError(f"home {home} is a file, not a folder", HOME_HINT)
    if not home.exists():
        if access is not Access.CREATE:
            raise UserError(f"no doclake home at {home.resolve()} (nothing has run there)",
                            f"{HOME_HINT}; `doclake run PATH --home DIR` creates one")
        try:
            make_private(home)
        except OSError as error:
            raise UserError(f"cannot create home {home}: {error.strerror or error}",
                            "choose a folder you can write, with --home or DOCLAKE_HOME") from None
    if access is not Access.READ and not _writable(home):
        raise UserError(f"home {home} is not writable",
                        "doclake keeps its queues and job store there (even `status` opens them); "
                        "fix its permissions or choose another --home")
    if access is not Access.READ:
        make_private(home)  # what this command writes is the owner's alone (umask 077)
    return home


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
    settings = load_settings(home, options=options, **overrides)
    check_home(settings.home, access)
    _check_lake(settings.home, settings.lake_uri, settings.lake, access)
    return settings


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
