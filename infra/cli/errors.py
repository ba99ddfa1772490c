"""The one boundary where a user's mistake becomes a short message and exit code 2.

A person who types a wrong value should read what was wrong and what is allowed, not a Python
traceback. Commands raise ``UserError`` (or let a settings ``ValidationError`` through);
``DoclakeGroup`` (the click group behind the ``doclake`` command) turns them into::

    error: <what was wrong, naming the value>
    hint: <what is allowed or what to do>

and exit code 2. ``doclake --debug ...`` (or ``DOCLAKE_DEBUG=1``) lets the exception through with
its traceback. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import functools
import os
import sqlite3
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import typer
from typer.core import TyperArgument, TyperGroup

__all__ = ["USAGE", "UserError", "set_debug", "settings_error", "at_least", "EXTRA_OF_MODULE",
           "stderr_console", "report", "COMMAND_ORDER", "WorkflowGroup", "DoclakeGroup"]

if TYPE_CHECKING:
    from rich.console import Console

USAGE = 2  # the exit code of a usage error, as for click's own


class UserError(Exception):
    """A mistake the user can fix: a bad value, a wrong home, an empty query."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint


_debug = False


def set_debug(value: bool) -> None:
    """Set by the top-level ``--debug`` option before any command runs."""
    global _debug
    _debug = value or os.environ.get("DOCLAKE_DEBUG", "") not in ("", "0")


def settings_error(error: Any, options: Mapping[str, str] | None = None) -> UserError:
    """A pydantic ``ValidationError`` from ``Settings`` as one line per bad value.

    A value given on the command line is named by its option (``--concurrency 0``); any other by
    its environment variable (``DOCLAKE_PAGES_PER_UNIT='abc'``), since that is where it came from.
    """
    options = options or {}
    lines = []
    for item in error.errors():
        field = str(item["loc"][0]) if item.get("loc") else "?"
        source = options.get(field) or f"DOCLAKE_{field.upper()}"
        value = item.get("input")
        shown = f"{source} {value}" if source.startswith("--") else f"{source}={value!r}"
        lines.append(f"{shown}: {item['msg'][0].lower()}{item['msg'][1:]}")
    return UserError("; ".join(lines), "see `doclake --help` for the options and infra/settings.py "
                     "for every DOCLAKE_* setting and its limits")


def at_least(minimum: int):
    """A typer option callback: refuse a number below ``minimum``, naming the option and value."""

    def check(param: typer.CallbackParam, value: int | None) -> int | None:
        if value is not None and value < minimum:
            name = max(param.opts, key=len) if param.opts else param.name
            raise UserError(f"{name} {value}: must be at least {minimum}",
                            f"give {name} a whole number of {minimum} or more")
        return value

    return check


# The packages of pyproject's optional extras, by the name they are imported as: the runtime
# install (`make demo`, `pip install -e .`) leaves them out, and a command that needs one says
# which extra brings it instead of printing a traceback.
EXTRA_OF_MODULE = {
    # datasketch: `fields cv|train` reach it here; export-finetune checks for it first itself.
    "sklearn": "train", "datasketch": "train", "jsonschema": "finetune",
    "great_expectations": "check", "boto3": "aws", "botocore": "aws", "awswrangler": "aws",
    "aws_lambda_powertools": "aws", "aws_cdk": "cdk", "constructs": "cdk", "cdk_nag": "cdk",
    "cfnlint": "cdk", "pyiceberg": "bench",
}


def _as_user_error(error: Exception) -> UserError | None:
    """The errors a user's input can cause, recognised wherever they were raised."""
    if isinstance(error, UserError):
        return error
    if isinstance(error, ModuleNotFoundError):
        package = (error.name or "").split(".")[0]
        if package in EXTRA_OF_MODULE:
            extra = EXTRA_OF_MODULE[package]
            return UserError(f"this command needs {package}, from the {extra!r} extra, which "
                             "is not installed here",
                             f"pip install -e '.[{extra}]' (`make install` installs every extra)")
    if any(cls.__name__ == "UsageError" for cls in type(error).__mro__):  # click's or typer's copy
        # A bad or missing argument of a subcommand (``--concurrency abc``, no search query).
        names, context = [], error.ctx
        while context is not None and context.parent is not None:  # the root's name varies
            names.append(context.info_name)  # (doclake, or `python -m infra.cli.main`)
            context = context.parent
        path = " ".join(["doclake", *reversed(names)])
        return UserError(error.format_message(), f"see `{path} --help`")
    if type(error).__name__ == "ValidationError" and getattr(error, "title", "") == "Settings":
        return settings_error(error)
    if isinstance(error, sqlite3.OperationalError) and "readonly" in str(error):
        return UserError(f"cannot write the state folder: {error}",
                         "check the permissions of --home, or choose another")
    if isinstance(error, PermissionError):
        return UserError(f"permission denied: {error.filename or error}",
                         "check the permissions of --home (and of the paths given), or choose another")
    return None


@functools.cache
def stderr_console() -> Console:
    """The one rich ``Console`` on stderr that warnings and progress go to, made on first use.

    rich costs about 40 ms to import and a command that prints only data (``doclake sql``)
    never needs it, so it is built here on demand rather than at import. It is a real
    ``Console``, never a proxy: rich's ``Live`` and ``Progress`` use it as a context manager and
    look methods up on its type, which a forwarding wrapper does not satisfy."""
    from rich.console import Console

    return Console(stderr=True, highlight=False)


def report(error: UserError) -> None:
    from rich.console import Console

    console = Console(stderr=True, highlight=False)
    piped = not console.is_terminal  # piped: one line whole; a terminal: wrapped at words
    console.print(f"[red]error:[/red] {error.message}", markup=True, soft_wrap=piped)
    if error.hint:
        console.print(f"hint: {error.hint}", markup=False, soft_wrap=piped)


def _flags_without_type(command, help_names: list[str]) -> None:
    """Give every flag of ``command`` and its subcommands an empty metavar.

    Typer's rich help prints each option's type beside it, flags included (``--jobs <bool>``,
    ``--help -h <bool>``), which reads as if the flag took a value; a metavar, when set, is
    printed instead, and an empty one prints nothing. Options that take a value keep their
    type (``--home <path>``)."""
    help_option = command.get_help_option(typer.Context(command, help_option_names=help_names))
    for param in [*command.params, *([help_option] if help_option is not None else [])]:
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""
    for sub in getattr(command, "commands", {}).values():
        _flags_without_type(sub, help_names)


class _UsageArgument(TyperArgument):
    """An argument that reads ``PATHS...`` in a usage line, as click's own do, where Typer
    writes ``{paths}...`` (braces, in Typer's rich help, for a required argument); an optional
    one reads ``[QUERY]``. The arguments panel and error messages are Typer's, unchanged."""

    def make_metavar(self, ctx, *, usage: bool = False) -> str:  # type: ignore[no-untyped-def,override]
        if not usage:
            return super().make_metavar(ctx, usage=usage)
        name = (self.metavar or self.name or "").upper() + ("..." if self.nargs != 1 else "")
        return name if self.required else f"[{name}]"


def _arguments_in_capitals(command) -> None:
    """Every argument of ``command`` and its subcommands as ``_UsageArgument`` (Typer builds
    its own class and offers no way to name another)."""
    for param in command.params:
        if type(param) is TyperArgument:
            param.__class__ = _UsageArgument
    for sub in getattr(command, "commands", {}).values():
        _arguments_in_capitals(sub)


# The order ``doclake --help`` lists the commands in: a person's first hour first (run, look at
# what came out), then the teams' commands, then the tools. A command not named here follows.
COMMAND_ORDER = ("run", "status", "search", "show", "sql", "schema", "dashboard", "worker",
                 "serve", "evals", "fields", "lake", "aws", "bench")


class WorkflowGroup(TyperGroup):
    """A command group that lists its commands in ``order`` (the order a person uses them in),
    any command not named there after them."""

    order: tuple[str, ...] = ()

    def list_commands(self, ctx):  # type: ignore[no-untyped-def]
        names = super().list_commands(ctx)
        rank = {name: n for n, name in enumerate(self.order)}
        return sorted(names, key=lambda name: rank.get(name, len(rank)))


class DoclakeGroup(WorkflowGroup):
    """The top-level command group: every subcommand runs inside this ``invoke``."""

    order = COMMAND_ORDER

    def main(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        _flags_without_type(self, self.context_settings.get("help_option_names") or ["--help"])
        _arguments_in_capitals(self)
        return super().main(*args, **kwargs)

    def invoke(self, ctx):  # type: ignore[no-untyped-def]
        try:
            return super().invoke(ctx)
        except Exception as error:
            user_error = _as_user_error(error)
            if user_error is None or _debug:
                raise
            report(user_error)
            raise typer.Exit(USAGE) from None
        finally:
            from infra.local.home_lock import release_all

            release_all()  # the home's writer lock, when this command took one
