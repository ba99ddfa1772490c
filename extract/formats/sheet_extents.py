"""How large a worksheet's grid is, read from the xlsx before calamine loads it.

calamine turns a sheet into a dense grid from A1 to its last cell: a sheet holding cells at A1
and XFD1048576 (a file of a few kB) asks for 17 billion cells at once, and the allocation kills
the worker before any count can be checked. Here the sheet's XML is streamed out of the zip and
the largest explicit row and column positions (``<row r="...">``, ``<c r="...">``) are found
with a bytes regex, so the grid's size is known, and refused, without building it. The
``<dimension>`` element is not trusted: the file writes it. Cells without positions follow each
other and are bounded by the file's own size, so they cannot make the grid sparse and huge.

Only OOXML workbooks (xlsx, xlsm) are checked this way; xlsb, xls and ods rely on the memory
limit of the worker (the README says so).
"""

from __future__ import annotations

import posixpath
import re
import zipfile
from pathlib import Path
from xml.etree import ElementTree

__all__ = ["column_number", "sheet_parts", "part_extent", "ooxml_extents"]

_CHUNK = 1024 * 1024
# An ``r`` attribute: ``<row r="12">`` (digits) or ``<c r="B12">`` (letters, digits). No other
# element of a worksheet has an attribute named ``r``, so one pattern finds both, fast.
_REF = re.compile(rb"\sr\s*=\s*[\"']([A-Za-z]{0,4})([0-9]{1,9})[\"']")
_OVERLAP = 512  # bytes kept between chunks, so a tag cut in two is still seen
_MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_RELS = "http://schemas.openxmlformats.org/package/2006/relationships"
_REL_ID = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"


def column_number(letters: bytes) -> int:
    """``b"A"`` is 1, ``b"XFD"`` 16384; no letters (a row's own ``r``) is 0."""
    number = 0
    for letter in letters.upper():
        number = number * 26 + (letter - 64)
    return number


def sheet_parts(archive: zipfile.ZipFile) -> dict[str, str]:
    """Sheet name -> its part's path in the zip, from the workbook and its relationships."""
    try:
        workbook = ElementTree.fromstring(archive.read("xl/workbook.xml"))
        relations = ElementTree.fromstring(archive.read("xl/_rels/workbook.xml.rels"))
    except (KeyError, ElementTree.ParseError):
        return {}
    targets = {r.get("Id"): r.get("Target", "") for r in relations.iter(f"{{{_RELS}}}Relationship")}
    parts = {}
    for sheet in workbook.iter(f"{{{_MAIN}}}sheet"):
        target = targets.get(sheet.get(_REL_ID))
        if target:
            path = target.lstrip("/") if target.startswith("/") else \
                posixpath.normpath(posixpath.join("xl", target))
            parts[sheet.get("name", "")] = path
    return parts


def part_extent(archive: zipfile.ZipFile, part: str) -> tuple[int, int]:
    """(rows, columns) of the grid from A1 to the last explicitly placed cell of one part."""
    rows = columns = 0
    tail = b""
    with archive.open(part) as stream:
        while chunk := stream.read(_CHUNK):
            data = tail + chunk
            found = _REF.findall(data)
            if found:
                letters, digits = zip(*found, strict=True)
                rows = max(rows, *map(int, set(digits)))
                columns = max(columns, *map(column_number, set(letters)))
            tail = data[-_OVERLAP:]
    return rows, columns


def ooxml_extents(path: Path, names: list[str]) -> dict[str, tuple[int, int]]:
    """The grid size of each named sheet that can be found (others are left out)."""
    try:
        with zipfile.ZipFile(path) as archive:
            parts = sheet_parts(archive)
            found = {}
            for name in names:
                part = parts.get(name)
                if part is None:
                    continue
                try:
                    found[name] = part_extent(archive, part)
                except (KeyError, zipfile.BadZipFile, OSError, EOFError):
                    continue  # calamine says what is wrong with it
            return found
    except (zipfile.BadZipFile, OSError):
        return {}
