"""Refuse, before LibreOffice opens it, a document that would pull in content from outside itself.

A document can name a file or an address whose content the converter then fetches and renders
into the PDF: a linked image (``file:///home/me/private.png``), an SVG picture whose own
``<image>`` points out, an included text or section, a linked OLE object, a DDE link. The
converter runs behind a boundary where the platform has one (``extract.formats.confine``), and
its output is checked after (``extract.formats.output_check``); this is the first line: an
allow-list, by format, of what a document may refer to, and anything else fails with the reason
``links_outside``, naming what it links to.

- zip packages (docx, pptx, odt, odp): every part, every reference: ``package_links``; a
  package of two formats is ``ambiguous_format``;
- RTF: a tokenizer over the whole control-word stream: ``rtf_links``;
- Word and PowerPoint 97-2003 (doc, ppt): linked OLE objects, fields, link records:
  ``ole_links``.

Every part is read as a stream with a cap on the bytes it inflates to: past
``max_inflated_bytes`` the document fails with ``too_large`` (a zip bomb is a limit, not a
corrupt file). Runs in a worker process (``ctx.cpu``).
"""

from __future__ import annotations

from pathlib import Path

from extract.formats.ole_links import check_ole
from extract.formats.package_links import AMBIGUOUS_FORMAT, AmbiguousFormat, check_package
from extract.formats.refusals import FIELDS, LINKS_OUTSIDE, LinksOutside
from extract.formats.rtf_links import check_rtf
from extract.formats.sniff import Format

__all__ = ["AMBIGUOUS_FORMAT", "DEFAULT_MAX_INFLATED", "FIELDS", "LINKS_OUTSIDE",
           "AmbiguousFormat", "LinksOutside", "check_links"]

DEFAULT_MAX_INFLATED = 512 * 1024**2


def check_links(path: Path, fmt: Format, max_inflated_bytes: int = DEFAULT_MAX_INFLATED) -> None:
    """Raise ``LinksOutside`` when the document at ``path`` (sniffed as ``fmt``) links to
    content outside itself, ``AmbiguousFormat`` when a package is not plainly ``fmt``,
    ``LimitExceeded('too_large')`` when its parts inflate past ``max_inflated_bytes``; return
    None otherwise."""
    if fmt in (Format.DOCX, Format.PPTX, Format.ODT, Format.ODP):
        check_package(path, fmt, max_inflated_bytes)
    elif fmt is Format.RTF:
        check_rtf(path.read_bytes())
    elif fmt in (Format.DOC, Format.PPT):
        check_ole(path, fmt)
