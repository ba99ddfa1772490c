"""The examples of README.md and docs/*.md, found so that the tests can run them.

The rules, which docs/contributing-docs are told in ``tests/test_docs_examples.py``'s docstring:

- every fenced ``sql`` block is a script run by ``doclake sql`` against a home made from
  ``examples/`` (and one damaged PDF, so that the failure recipes have a failure to return) and
  must succeed; a ``text`` block right after it (nothing but blank lines between) is its result
  as ``--format table`` prints it, compared line by line as below; a block without one must
  return rows, unless ``<!-- docs-test: no-rows REASON -->`` on the line before its fence says
  why it returns none over that home;
- every command line of a ``sh``/``bash``/``console`` block that starts with ``doclake `` (after an
  optional ``$ ``) is run by bash with ``DOCLAKE_HOME`` set to that home and must exit 0; lines
  ending in ``\\`` continue on the next; other lines (``make``, ``pip``, ``cdk``) are not run;
- a ``text`` block that starts with ``$ doclake ...`` shows a command and its output: the
  command runs and what it prints (stdout, then stderr) must be the lines shown, where a shown
  line ending in ``...`` stands for any line that starts with the text before it; every other
  ``text`` block must be skipped with its reason (why its output cannot be compared here);
- ``<!-- docs-test: skip REASON -->`` on the line just before a fence skips that block.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>```+|~~~+)\s*(?P<info>[^\n`]*)$")
SKIP = re.compile(r"<!--\s*docs-test:\s*skip\b(?P<reason>[^>]*)-->")
NO_ROWS = re.compile(r"<!--\s*docs-test:\s*no-rows\b(?P<reason>[^>]*)-->")
SHELL = {"sh", "bash", "shell", "console"}


@dataclass(frozen=True)
class Example:
    path: Path
    line: int  # 1-based line of the fence
    language: str  # "sql" or "sh"
    code: str  # the SQL script, or one command line
    skip: str | None  # the reason given, when skipped
    shown: tuple[str, ...] | None = None  # "shown", or a sql block's result: the lines shown
    no_rows: str | None = None  # sql: why it may return no rows over the docs' home

    @property
    def name(self) -> str:
        return f"{self.path.name}:{self.line}"


@dataclass(frozen=True)
class _Block:
    line: int  # 1-based line of the opening fence
    language: str
    body: list[str]
    skip: str | None
    no_rows: str | None
    follows: bool  # only blank lines between this block and the one before it


def _blocks(path: Path):
    lines = path.read_text(encoding="utf-8").splitlines()
    index, after_previous = 0, None  # the line after the previous block's closing fence
    while index < len(lines):
        match = FENCE.match(lines[index])
        if not match:
            index += 1
            continue
        info = match.group("info").strip()
        language = info.split()[0].lower() if info else ""
        previous = next((lines[i] for i in range(index - 1, -1, -1) if lines[i].strip()), "")
        skip, no_rows = SKIP.search(previous), NO_ROWS.search(previous)
        follows = after_previous is not None and not any(
            line.strip() for line in lines[after_previous:index])
        body: list[str] = []
        end = index + 1
        while end < len(lines) and not lines[end].strip().startswith(match.group("fence")):
            body.append(lines[end][len(match.group("indent")):])
            end += 1
        yield _Block(index + 1, language, body,
                     skip.group("reason").strip() or "no reason given" if skip else None,
                     no_rows.group("reason").strip() or "no reason given" if no_rows else None,
                     follows)
        index = after_previous = end + 1


def _commands(body: list[str]) -> list[str]:
    """The ``doclake`` command lines of a shell block, continuations joined."""
    commands, current = [], ""
    for raw in body:
        line = raw.rstrip()
        if not current:
            line = line.lstrip()
            if line.startswith("$ "):
                line = line[2:]
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        current += line
        if current.startswith("doclake "):
            commands.append(current.strip())
        current = ""
    return commands


def examples(paths: list[Path]) -> list[Example]:
    found: list[Example] = []
    for path in paths:
        previous = None
        for block in _blocks(path):
            line, language, body, skip = block.line, block.language, block.body, block.skip
            if (language == "text" and block.follows and skip is None and previous is not None
                    and previous.language == "sql" and not (body and body[0].startswith("$ "))):
                # the result of the sql block just above: compared when that block runs
                found[found.index(previous)] = previous = Example(
                    previous.path, previous.line, "sql", previous.code, previous.skip,
                    tuple(body), previous.no_rows)
                continue
            if language == "sql":
                previous = Example(path, line, "sql", "\n".join(body), skip, None,
                                   block.no_rows)
                found.append(previous)
                continue
            previous = None
            if language in SHELL:
                found += [Example(path, line, "sh", command, skip) for command in _commands(body)]
            elif language == "text":
                command = body[0][2:] if body and body[0].startswith("$ doclake ") else ""
                found.append(Example(path, line, "shown", command,
                                     skip if command or skip else "UNCHECKED: no $ doclake "
                                     "command and no skip reason", tuple(body[1:])))
    return found


def output_matches(shown: tuple[str, ...], printed: list[str]) -> bool:
    """``printed`` is ``shown`` line by line; a shown line ending in ``...`` matches any line
    starting with what comes before the dots."""
    if len(shown) != len(printed):
        return False
    return all(got.startswith(want[:-3]) if want.endswith("...") else got == want
               for want, got in zip(shown, printed, strict=True))
