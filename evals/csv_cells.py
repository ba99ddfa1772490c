"""CSV cells a spreadsheet will open: a formula is shown as text, never run.

A labelling sheet holds what came from documents (a file named ``=HYPERLINK("http://...")``, an
extracted value beginning with ``=``, ``+``, ``-`` or ``@``) and is opened in Excel or LibreOffice
Calc, which would evaluate it. Such a cell is written with a leading apostrophe (the OWASP
advice: the spreadsheet shows the text and runs nothing), and the importer takes the apostrophe
off again, so a sheet round-trips unchanged.
"""

from __future__ import annotations

from typing import Any

__all__ = ["FORMULA_STARTS", "neutralise", "restore"]

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def neutralise(cell: Any) -> Any:
    """``cell`` as written to a sheet: text that a spreadsheet would read as a formula gets a
    leading apostrophe; everything else is unchanged."""
    if isinstance(cell, str) and cell.startswith(FORMULA_STARTS):
        return "'" + cell
    return cell


def restore(cell: str) -> str:
    """The inverse of ``neutralise`` for a cell read back from a sheet."""
    if cell.startswith("'") and cell[1:].startswith(FORMULA_STARTS):
        return cell[1:]
    return cell
