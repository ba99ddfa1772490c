"""The ``doclake`` application, built for the one command a process runs.

Typer turns the whole application into click commands before it parses the first argument:
29 commands with every option's type, help and default, about 0.03 s on each start. A process
runs one command, so ``DoclakeApp`` builds only the command (or the group) that its first
argument names; anything else (no argument, an option first such as ``--debug``, ``--help``,
a misspelt name that deserves click's suggestion) gets the whole application as before. The
narrowed application shares the callback, the settings and the command objects of the whole
one, so what it parses, prints and runs is the same (``tests/test_cli_narrow.py``).
"""

from __future__ import annotations

import copy
import sys
from typing import Any

import typer
from typer.main import get_command_name
from typer.models import CommandInfo

__all__ = ["DoclakeApp"]


class DoclakeApp(typer.Typer):
    """A Typer application that builds only the command its process runs."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not args and "args" not in kwargs and len(sys.argv) > 1:
            narrowed = self.narrowed_to(sys.argv[1])
            if narrowed is not None:
                return typer.Typer.__call__(narrowed, *args, **kwargs)
        return super().__call__(*args, **kwargs)

    def command_names(self) -> list[str]:
        """The top-level commands and groups, as they are typed."""
        return ([_typed_name(info) for info in self.registered_commands
                 if info.callback is not None]
                + [info.name for info in self.registered_groups if info.name])

    def narrowed_to(self, name: str) -> typer.Typer | None:
        """This application with ``name`` as its only command or group; None when no command
        or group is called ``name`` (an option, or a misspelling)."""
        commands = [info for info in self.registered_commands
                    if info.callback is not None and _typed_name(info) == name]
        groups = [info for info in self.registered_groups if info.name == name]
        if not commands and not groups:
            return None
        narrowed = copy.copy(self)  # the same callback, settings and group class
        narrowed.registered_commands = commands
        narrowed.registered_groups = groups
        return narrowed


def _typed_name(info: CommandInfo) -> str:
    """A command's name as the user types it (Typer's own rule for a function's name)."""
    return info.name or get_command_name(info.callback.__name__)
