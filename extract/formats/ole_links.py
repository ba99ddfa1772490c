"""The links check for OLE2 compound files: Word and PowerPoint 97-2003 documents, and the OLE
objects embedded in a zip package.

An OLE object flagged as a link (its ``\\x01Ole`` stream's link bit) is refused wherever it is;
in a Word document, a field that includes or links content is looked for in the text stream
(8-bit and UTF-16); in a PowerPoint document, a linked OLE object's record
(``ExOleLinkContainer``)."""

from __future__ import annotations

import io
import re

from extract.formats.refusals import refuse
from extract.formats.sniff import Format

__all__ = ["check_ole", "check_ole_bytes"]

_FIELD_8BIT = re.compile(rb"\x13\s*(INCLUDEPICTURE|INCLUDETEXT|INCLUDE|LINK|IMPORT|DDEAUTO|DDE)\b",
                         re.IGNORECASE)
_PPT_LINKED_OLE = b"\x0f\x00\xce\x0f"  # record header: version 0xF, type 0x0FCE ExOleLinkContainer
_MAX_STREAM = 256 * 1024**2


def check_ole(path, fmt: Format | None = None, where: str = "") -> None:
    """Raise ``LinksOutside`` for a linked object (or, by ``fmt``, a fetching field or record)
    in the OLE2 file at ``path`` (a path or a file object); a damaged file is left to the
    conversion."""
    import olefile

    try:
        ole = olefile.OleFileIO(path if isinstance(path, io.IOBase) else str(path))
    except Exception:  # olefile raises many kinds on a damaged file; the conversion reports it
        return
    with ole:
        for entry in ole.listdir(streams=True, storages=False):
            name = where + "/".join(entry)
            data = _stream(ole, entry)
            if entry[-1] == "\x01Ole" and len(data) >= 8 and int.from_bytes(data[4:8],
                                                                            "little") & 1:
                raise refuse(f"a linked OLE object ({name!r})")
            if fmt is Format.DOC and entry[-1] == "WordDocument":
                for text in (data, data.decode("utf-16-le", "ignore").encode("latin-1", "ignore"),
                             data[1:].decode("utf-16-le", "ignore").encode("latin-1", "ignore")):
                    if found := _FIELD_8BIT.search(text):
                        raise refuse(f"a field {found.group(1).decode()!r} in the text")
            if fmt is Format.PPT and entry[-1] == "PowerPoint Document" \
                    and _PPT_LINKED_OLE in data:
                raise refuse("a linked OLE object (ExOleLinkContainer)")


def check_ole_bytes(data: bytes, where: str) -> None:
    """``check_ole`` for an OLE object embedded in a package (the bytes of its part)."""
    check_ole(io.BytesIO(data), None, where + "!/")


def _stream(ole, entry: list[str]) -> bytes:
    try:
        with ole.openstream(entry) as stream:
            return stream.read(_MAX_STREAM)
    except Exception:  # a damaged stream: nothing to find in it
        return b""
