"""Sniff a document's real format from its bytes; the extension is never trusted.

ZIP containers are told apart by their member names (``word/``, ``xl/``, ``ppt/``, an
OpenDocument ``mimetype``), OLE2 containers by their stream names (``WordDocument``,
``Workbook``, ``PowerPoint Document``, ``EncryptedPackage``). Reading stops at the directory:
no member is decompressed, so a zip bomb costs nothing here.
"""

from __future__ import annotations

import zipfile
from enum import StrEnum
from pathlib import Path

OLE2_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
HEAD_BYTES = 8192


class Format(StrEnum):
    PDF = "pdf"
    DOCX = "docx"
    PPTX = "pptx"
    XLSX = "xlsx"
    XLSM = "xlsm"
    XLSB = "xlsb"
    ODT = "odt"
    ODS = "ods"
    ODP = "odp"
    DOC = "doc"
    XLS = "xls"
    PPT = "ppt"
    ENCRYPTED_OFFICE = "encrypted_office"
    ZIP = "zip"
    CSV = "csv"
    TEXT = "text"
    EMPTY = "empty"
    UNKNOWN = "unknown"


_ODF_MIMETYPES = {
    "application/vnd.oasis.opendocument.text": Format.ODT,
    "application/vnd.oasis.opendocument.spreadsheet": Format.ODS,
    "application/vnd.oasis.opendocument.presentation": Format.ODP,
}


def sniff(path: Path) -> Format:
    """The format of the file at ``path``, judged by its content."""
    with open(path, "rb") as handle:
        head = handle.read(HEAD_BYTES)
    if not head:
        return Format.EMPTY
    if b"%PDF-" in head[:1024]:
        return Format.PDF
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return _sniff_zip(path)
    if head.startswith(OLE2_MAGIC):
        return _sniff_ole(path)
    return _sniff_text(head, truncated=len(head) == HEAD_BYTES)


def _sniff_zip(path: Path) -> Format:
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
            if "mimetype" in names:
                mimetype = archive.read("mimetype")[:100].decode("ascii", "replace").strip()
                if mimetype in _ODF_MIMETYPES:
                    return _ODF_MIMETYPES[mimetype]
    except (zipfile.BadZipFile, OSError, ValueError):
        return Format.ZIP
    if any(n.startswith("word/") for n in names):
        return Format.DOCX
    if any(n.startswith("ppt/") for n in names):
        return Format.PPTX
    if any(n.startswith("xl/") for n in names):
        if "xl/workbook.bin" in names:
            return Format.XLSB
        if "xl/vbaProject.bin" in names:
            return Format.XLSM
        return Format.XLSX
    return Format.ZIP


def _sniff_ole(path: Path) -> Format:
    import olefile

    try:
        with olefile.OleFileIO(str(path)) as ole:
            streams = {"/".join(entry) for entry in ole.listdir(streams=True, storages=True)}
    except (OSError, ValueError, IndexError, TypeError):
        return Format.UNKNOWN
    if "EncryptedPackage" in streams:
        return Format.ENCRYPTED_OFFICE
    if "WordDocument" in streams:
        return Format.DOC
    if "Workbook" in streams or "Book" in streams:
        return Format.XLS
    if "PowerPoint Document" in streams:
        return Format.PPT
    return Format.UNKNOWN


def _sniff_text(head: bytes, *, truncated: bool) -> Format:
    if b"\x00" in head:
        return Format.UNKNOWN
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        try:
            text = head.decode("cp1252")
        except UnicodeDecodeError:
            return Format.UNKNOWN
    lines = [line for line in text.splitlines() if line.strip()]
    if truncated:
        lines = lines[:-1]  # the last line may be cut short
    lines = lines[:50]
    if len(lines) >= 2:
        for delimiter in (",", ";", "\t", "|"):
            # Every non-blank line has the delimiter (rows may be ragged); prose rarely does.
            if all(delimiter in line for line in lines):
                return Format.CSV
    return Format.TEXT
