"""The refusal every links check raises (``links_outside``), and the Word fields that fetch.

One place for the error class, its message and the field keywords, shared by the package, RTF
and OLE checks (``extract.formats.package_links``, ``rtf_links``, ``ole_links``)."""

from __future__ import annotations

import re

from extract.errors import TerminalError

__all__ = ["FIELDS", "LINKS_OUTSIDE", "LinksOutside", "check_field", "refuse"]

LINKS_OUTSIDE = "links_outside"

# Fields whose result is content fetched from a file or an address (Word's field reference).
FIELDS = re.compile(r"^\s*(INCLUDEPICTURE|INCLUDETEXT|INCLUDE|LINK|IMPORT|DDEAUTO|DDE)\b",
                    re.IGNORECASE)


class LinksOutside(TerminalError):
    """The document would make the converter fetch content from outside itself."""

    error_type = LINKS_OUTSIDE


def refuse(what: str) -> LinksOutside:
    """The refusal naming ``what`` (shortened to a line)."""
    shown = what if len(what) <= 200 else what[:197] + "..."
    return LinksOutside(f"the document links to content outside itself ({shown}); doclake does "
                        "not convert documents that would fetch a file or an address")


def check_field(instruction: str, where: str) -> None:
    """Refuse a field instruction that includes or links content."""
    if FIELDS.search(instruction):
        raise refuse(f"a field {instruction.strip()[:120]!r} in {where}")
