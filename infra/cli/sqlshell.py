"""``doclake sql``: statements over the lake's views, from the command line or a prompt.

A script of several statements prints every result, in order; the last statement needs no
``;``. A statement DuckDB refuses is reported as one line with a hint naming the nearest analyst
table or column, and makes the command exit 2, as any usage error (the interactive prompt reports
it and goes on). The prompt has line editing and history through the
standard library's readline, and a few dot commands (``.tables``, ``.schema TABLE``, ``.help``).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path

from infra.cli.errors import UserError, stderr_console
from infra.cli.render.output import print_records

__all__ = ["HISTORY", "HELP", "QUIET", "statements", "StatementError", "run_script", "interactive",
           "QUIT_WORDS", "print_tables", "print_schema", "print_reference"]

HISTORY = Path("~/.doclake_history").expanduser()
PROMPT, MORE = "doclake> ", "    ...> "
HELP = """\
.tables          the analyst tables, one line each
.schema TABLE    the columns of one table, with types and descriptions
.help            this help
.quit            leave (also \\q, quit, exit, Ctrl-D)
Statements end with ';', or an empty line after a complete one. Ctrl-C clears
what is typed. Internal views (internal.raw_*, internal.ev_*) hold the events
before deduplication: query the tables above."""


# Statements whose answer is only a count of what changed: run, but print nothing (as psql).
QUIET = frozenset({"CREATE", "CREATE_FUNC", "DROP", "ALTER", "SET", "VARIABLE_SET", "TRANSACTION",
                   "ATTACH", "DETACH", "LOAD", "PREPARE", "EXTENSION", "VACUUM", "ANALYZE"})


def statements(con, text: str) -> list[tuple[str, bool]]:
    """``(statement, prints)`` for each statement in ``text``; comments and empty statements are
    not statements. Raises ``sql_guard.WriteRefused`` before anything runs when one of them is
    not a read."""
    from infra.cli import sql_guard

    parsed = con.extract_statements(text)
    sql_guard.check(con, parsed)
    return [(s.query, s.type.name not in QUIET) for s in parsed]


class StatementError(UserError):
    """A statement DuckDB refused: its first line, and a hint in the analyst schema's names."""


def run_script(con, text: str, output_format: str) -> bool:
    """Run every statement and print every result; raises ``StatementError`` at the first
    refused statement (those before it have printed their results)."""
    import duckdb

    try:
        found = statements(con, text)
    except duckdb.Error as error:
        raise _refused(con, error, text) from None
    if not found:
        raise UserError(f"no SQL statement in {text!r}",
                        'write a query, e.g. doclake sql "SELECT status, count(*) FROM jobs '
                        'GROUP BY 1", or run `doclake sql` alone for a prompt')
    printed = 0
    for statement, prints in found:
        result = _run_one(con, statement)
        if result is not None and prints:
            if printed and output_format != "json":
                sys.stdout.write("\n")  # results of a script are separated by one blank line
            print_records(result.columns, result.rows, output_format)
            printed += 1
    return True


def _run_one(con, statement: str):
    """The statement's ``Rows`` (``LakeSession.rows``: no pyarrow for plain column types),
    None when it has none; ``StatementError`` when refused."""
    import duckdb

    try:
        return con.rows(statement)
    except duckdb.Error as error:
        raise _refused(con, error, statement) from None


def _refused(con, error: Exception, query: str) -> StatementError:
    from infra.cli import sql_hints
    from infra.cli.render.schema_doc import TABLES

    def columns_of(table: str) -> list[str]:
        try:
            return [row[0] for row in con.execute(f"DESCRIBE {table}").fetchall()]
        except Exception:  # a table whose files vanished meanwhile: no suggestion from it
            return []

    return StatementError(sql_hints.first_line(error),
                          sql_hints.hint(error, query, TABLES, columns_of))


def interactive(con, output_format: str) -> None:
    """Read statements until end of input; a terminal gets a prompt, editing and history.

    As at psql and duckdb: ``\\q``, ``.quit``, ``exit`` and ``quit`` alone on a line leave
    (whatever was typed before is dropped), as does Ctrl-D; Ctrl-C clears what is being typed
    and never runs it; a statement runs at its ``;``, or on the empty line after it when it is
    complete without one (a block pasted from the docs; piped input runs at ``;`` and at its
    end, so a script's blank lines never split a statement)."""
    tty = sys.stdin.isatty()
    if tty:
        _enable_readline()
        stderr_console().print("doclake sql: DuckDB over the lake's views. End statements with "
                               "';' (or an empty line); .tables, .schema TABLE, .help; \\q or "
                               "Ctrl-D to quit.", markup=False)
    buffer: list[str] = []
    for line in _lines(tty, lambda: MORE if buffer else PROMPT):
        if line is None:  # Ctrl-C: the statement being typed is dropped, never run
            buffer.clear()
            continue
        stripped = line.strip()
        if _leaves(stripped):
            buffer.clear()
            break
        if not buffer and stripped.rstrip(";").strip().lower() == "help":
            stripped = ".help"
        if not buffer and stripped.startswith("."):
            if not _dot_command(stripped, output_format):
                break
            continue
        if tty and not stripped and buffer and _complete(con, "\n".join(buffer)):
            _run_interactive(con, "\n".join(buffer), output_format)
            buffer.clear()
            continue
        if not stripped and not buffer:
            continue
        buffer.append(line)
        text = "\n".join(buffer)
        if text.rstrip().endswith(";"):
            _run_interactive(con, text, output_format)
            buffer.clear()
    if not tty and "".join(buffer).strip():
        _run_interactive(con, "\n".join(buffer), output_format)  # a last statement without ';'


QUIT_WORDS = frozenset({"\\q", "\\quit", ".quit", ".exit", ".q", "exit", "quit"})


def _leaves(line: str) -> bool:
    """A line that leaves the prompt: one of ``QUIT_WORDS``, alone, with or without ``;``."""
    return line.rstrip(";").strip().lower() in QUIT_WORDS


def _complete(con, text: str) -> bool:
    """True when ``text`` parses as statements as it stands: an empty line then runs it; one
    that does not parse yet (a statement still being written) waits for more, or for ``;``."""
    import duckdb

    try:
        return bool(con.extract_statements(text))
    except duckdb.Error:
        return False


def _run_interactive(con, text: str, output_format: str) -> None:
    from infra.cli.sql_guard import WriteRefused

    try:
        run_script(con, text, output_format)
    except (WriteRefused, StatementError) as refused:  # said, and the prompt goes on
        stderr_console().print(f"error: {refused.message}\nhint: {refused.hint}", markup=False)
    except UserError:  # only comments or ';': nothing to run, as at any prompt
        pass


def _lines(tty: bool, prompt) -> Iterator[str | None]:
    """The lines typed; None for a Ctrl-C (the caller drops what is buffered)."""
    if not tty:
        for line in sys.stdin:
            yield line.rstrip("\n")
        return
    while True:
        try:
            yield input(prompt())
        except EOFError:
            sys.stderr.write("\n")
            return
        except KeyboardInterrupt:  # Ctrl-C drops the statement being typed, as psql does
            sys.stderr.write("^C\n")
            yield None


def _enable_readline() -> None:
    try:
        import atexit
        import readline
    except ImportError:  # pragma: no cover - Windows without pyreadline
        return
    with contextlib.suppress(OSError):
        readline.read_history_file(HISTORY)
    readline.set_history_length(1000)

    def save() -> None:
        with contextlib.suppress(OSError):
            readline.write_history_file(HISTORY)

    atexit.register(save)


def _dot_command(line: str, output_format: str) -> bool:
    """Run a dot command; False for ``.quit``."""
    from infra.cli.render import schema_doc

    command, _, argument = line.partition(" ")
    argument = argument.strip().rstrip(";")
    if command in (".quit", ".exit", ".q"):
        return False
    if command == ".tables":
        print_tables(output_format)
    elif command == ".schema" and argument:
        if not print_schema(argument, output_format):
            stderr_console().print(f"no table {argument!r}; .tables lists them", markup=False)
    elif command == ".schema":
        for doc in schema_doc.tables():
            print_schema(doc.name, output_format)
    else:
        stderr_console().print(HELP, markup=False)
    return True


def print_tables(output_format: str) -> None:
    from infra.cli.render import schema_doc

    print_records(("table", "description"),
                  ((t.name, t.description) for t in schema_doc.tables()), output_format)


def print_schema(name: str, output_format: str) -> bool:
    from infra.cli.render import schema_doc

    doc = schema_doc.table(name)
    if doc is None:
        return False
    print_records(("column", "type", "description"),
                  ((c.name, c.type, c.description) for c in doc.columns), output_format,
                  title=f"{doc.name}: {doc.description}")
    return True


def print_reference(output_format: str) -> None:
    """Every table and column (``doclake schema``): on a terminal one titled table per analyst
    table (one flat listing of some 200 columns turned into record blocks at 80 columns); as CSV
    or JSON one flat listing, for a program."""
    from infra.cli.render import schema_doc

    if output_format == "table":
        for n, doc in enumerate(schema_doc.tables()):
            if n:
                print()
            print_schema(doc.name, output_format)
        return
    print_records(("table", "column", "type", "description"),
                  ((t.name, c.name, c.type, c.description)
                   for t in schema_doc.tables() for c in t.columns), output_format)
