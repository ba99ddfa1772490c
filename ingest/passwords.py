"""Passwords files: a table of file name (or path in the room) to the document's password,
matched to the files a walk found. Split out of ``ingest.planner``; never echoes a password."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["load_passwords", "passwords_for"]


def passwords_for(files: Sequence[Path], roots: Sequence[Path],
                  table: Mapping[str, str]) -> tuple[dict[Path, str], list[str]]:
    """Match a passwords table (a file's name, or its path relative to a folder given, to its
    password) to the files found; returns the passwords by file and the table's keys that
    matched no file. A relative path wins over a bare name."""
    folders = [root.resolve() for root in roots if root.is_dir()]
    found: dict[Path, str] = {}
    used: set[str] = set()
    for file in files:
        names = []
        for folder in folders:
            try:
                names.append(file.resolve().relative_to(folder).as_posix())
            except ValueError:
                continue
        names.append(file.name)
        for name in names:
            if name in table:
                found[file] = table[name]
                used.add(name)
                break
    return found, sorted(set(table) - used)


def load_passwords(path: Path) -> dict[str, str]:
    """A passwords file: JSON (an object of name -> password) or CSV (two columns, name and
    password; a first row ``name,password`` or ``path,password`` is a header). Raises
    ``ValueError`` saying what is wrong, never echoing a password."""
    import csv
    import json

    text = path.read_text(encoding="utf-8-sig")
    if path.suffix.lower() == ".json" or text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise ValueError(f"{path.name} is not valid JSON (line {error.lineno})") from None
        if not isinstance(data, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
            raise ValueError(f"{path.name} must be a JSON object of file name -> password")
        return {k.strip().strip("/"): v for k, v in data.items()}
    table: dict[str, str] = {}
    for number, row in enumerate(csv.reader(text.splitlines()), start=1):
        if not row or not any(cell.strip() for cell in row):
            continue
        if len(row) != 2:
            raise ValueError(f"{path.name} line {number}: expected two columns, name and password")
        name, secret = row[0].strip().strip("/"), row[1]
        if number == 1 and name.lower() in ("name", "path", "file") and \
                secret.strip().lower() == "password":
            continue
        table[name] = secret
    return table
