"""Sniff a document's real format from its bytes; the extension is never trusted.

ZIP containers are told apart by their content types and member names (``word/``, ``xl/``,
``ppt/``, an OpenDocument ``mimetype``), OLE2 containers by their stream names (``WordDocument``,
``Workbook``, ``PowerPoint Document``, ``EncryptedPackage``), text by its encoding and shape.
Reading stops at the directory and a few small members: nothing large is decompressed, so a zip
bomb costs nothing here. Whether the content is encrypted is part of the answer, because the
route depends on it (a password, or the reason ``encrypted``).

The caller runs ``sniff_file`` in a worker process with a time limit: olefile and zipfile parse
hostile directories.
"""

from __future__ import annotations

import re
import zipfile
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

__all__ = ["OLE2_MAGIC", "WORD2_MAGIC", "HEAD_BYTES", "SMALL_MEMBER", "Format", "OFFICE_FORMATS",
           "TEXT_DOCUMENT_FORMATS", "IMAGE_FORMATS", "SHEET_FORMATS", "MIME_TYPES", "Sniffed", "sniff",
           "read_head", "sniff_head", "sniff_file", "decode_head"]

OLE2_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
WORD2_MAGIC = b"\xdb\xa5\x2d\x00"  # Word 2.0 for Windows: no OLE2 container; LibreOffice reads it
HEAD_BYTES = 8192
SMALL_MEMBER = 256 * 1024  # content types and manifests are a few KB; more is not read


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
    RTF = "rtf"
    ENCRYPTED_OFFICE = "encrypted_office"
    ZIP = "zip"
    CSV = "csv"
    TEXT = "text"  # plain text and Markdown
    HTML = "html"
    EMAIL = "email"  # an RFC 5322 message (.eml)
    PNG = "png"
    JPEG = "jpeg"
    TIFF = "tiff"
    EMPTY = "empty"
    UNKNOWN = "unknown"


# Converted to PDF by LibreOffice, then split like a PDF.
OFFICE_FORMATS = frozenset({Format.DOC, Format.DOCX, Format.PPT, Format.PPTX, Format.ODT,
                            Format.ODP, Format.RTF})
# Read whole into one page of Markdown (extract.formats.document_text).
TEXT_DOCUMENT_FORMATS = frozenset({Format.TEXT, Format.HTML, Format.EMAIL})
# Scanned pages: one image-only PDF page a frame (extract.formats.image), then read like a PDF.
IMAGE_FORMATS = frozenset({Format.PNG, Format.JPEG, Format.TIFF})
# Read sheet by sheet with python-calamine (CSV by the text module, with the same output).
SHEET_FORMATS = frozenset({Format.XLSX, Format.XLSM, Format.XLSB, Format.XLS, Format.ODS})

MIME_TYPES = {
    Format.PDF: "application/pdf",
    Format.DOCX: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    Format.PPTX: "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    Format.XLSX: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    Format.XLSM: "application/vnd.ms-excel.sheet.macroEnabled.12",
    Format.XLSB: "application/vnd.ms-excel.sheet.binary.macroEnabled.12",
    Format.ODT: "application/vnd.oasis.opendocument.text",
    Format.ODS: "application/vnd.oasis.opendocument.spreadsheet",
    Format.ODP: "application/vnd.oasis.opendocument.presentation",
    Format.DOC: "application/msword",
    Format.XLS: "application/vnd.ms-excel",
    Format.PPT: "application/vnd.ms-powerpoint",
    Format.RTF: "application/rtf",
    Format.ZIP: "application/zip",
    Format.CSV: "text/csv",
    Format.TEXT: "text/plain",
    Format.HTML: "text/html",
    Format.EMAIL: "message/rfc822",
    Format.PNG: "image/png",
    Format.JPEG: "image/jpeg",
    Format.TIFF: "image/tiff",
}

# An image's signature: enough to route it; the decoder (in a worker) says whether it is whole.
_IMAGE_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", Format.PNG),
    (b"\xff\xd8\xff", Format.JPEG),
    (b"II*\x00", Format.TIFF),  # little-endian TIFF
    (b"MM\x00*", Format.TIFF),  # big-endian TIFF
    (b"II+\x00", Format.TIFF),  # BigTIFF
    (b"MM\x00+", Format.TIFF),
)

_ODF_MIMETYPES = {
    "application/vnd.oasis.opendocument.text": Format.ODT,
    "application/vnd.oasis.opendocument.spreadsheet": Format.ODS,
    "application/vnd.oasis.opendocument.presentation": Format.ODP,
}

# [Content_Types].xml names the main part's type: the surest sign of what an OOXML package is.
_OOXML_CONTENT_TYPES = (
    ("application/vnd.ms-excel.sheet.binary.macroenabled.main", Format.XLSB),
    ("application/vnd.ms-excel.sheet.macroenabled.main+xml", Format.XLSM),
    ("spreadsheetml.sheet.main+xml", Format.XLSX),
    ("spreadsheetml.template.main+xml", Format.XLSX),
    ("wordprocessingml.document.main+xml", Format.DOCX),
    ("wordprocessingml.template.main+xml", Format.DOCX),
    ("application/vnd.ms-word.document.macroenabled.main+xml", Format.DOCX),
    ("presentationml.presentation.main+xml", Format.PPTX),
    ("presentationml.slideshow.main+xml", Format.PPTX),
    ("application/vnd.ms-powerpoint.presentation.macroenabled.main+xml", Format.PPTX),
)


@dataclass(frozen=True)
class Sniffed:
    """What the bytes are. ``encrypted``: a password is needed to read the content.
    ``damaged``: the container is recognisable but broken (a truncated zip). ``empty``: the
    container is valid but holds nothing to read (an empty zip, a deck without slides).
    ``encoding``: for text, the encoding it was decoded with."""

    format: Format
    encrypted: bool = False
    damaged: bool = False
    empty: bool = False
    encoding: str | None = None
    detail: str = ""

    @property
    def mime_type(self) -> str | None:
        return MIME_TYPES.get(self.format)


def sniff(path: Path) -> Format:
    """The format of the file at ``path``, judged by its content."""
    return sniff_file(path).format


def read_head(path: Path) -> bytes:
    """The first ``HEAD_BYTES`` of the file: all that ``sniff_head`` looks at."""
    with open(path, "rb") as handle:
        return handle.read(HEAD_BYTES)


def sniff_head(head: bytes) -> Sniffed | None:
    """The answer when the first bytes alone give it (an empty file, a PDF, an image's
    signature), else None: the
    file's containers must be parsed (``sniff_file``, in a worker). Nothing here parses, so the
    caller may run it anywhere: a PDF, most documents, needs no worker call to be routed."""
    if not head:
        return Sniffed(Format.EMPTY)
    for magic, found in _IMAGE_MAGIC:  # at offset 0: surer than a PDF header found later
        if head.startswith(magic):
            return Sniffed(found)
    if b"%PDF-" in head[:1024]:
        return Sniffed(Format.PDF)
    return None


def sniff_file(path: Path) -> Sniffed:
    """The format of the file at ``path`` and whether it is encrypted, damaged or empty."""
    head = read_head(path)
    if (decided := sniff_head(head)) is not None:
        return decided
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return _sniff_zip(path, head)
    if head.startswith(OLE2_MAGIC):
        return _sniff_ole(path)
    if head.startswith(WORD2_MAGIC):
        return Sniffed(Format.DOC, detail="Word 2.0 (no OLE2 container)")
    if head.lstrip(b"\xef\xbb\xbf").startswith(b"{\\rtf"):
        return Sniffed(Format.RTF)
    return _sniff_text(head, truncated=len(head) == HEAD_BYTES)


def _read_small(archive: zipfile.ZipFile, name: str) -> bytes:
    info = archive.getinfo(name)
    if info.file_size > SMALL_MEMBER:
        return b""
    with archive.open(info) as member:
        return member.read(SMALL_MEMBER)


def _sniff_zip(path: Path, head: bytes) -> Sniffed:
    try:
        with zipfile.ZipFile(path) as archive:
            names = set(archive.namelist())
            if not names:
                return Sniffed(Format.ZIP, empty=True, detail="a zip archive with no members")
            if "mimetype" in names:
                mimetype = _read_small(archive, "mimetype")[:100].decode("ascii", "replace").strip()
                if mimetype in _ODF_MIMETYPES:
                    manifest = (_read_small(archive, "META-INF/manifest.xml")
                                if "META-INF/manifest.xml" in names else b"")
                    encrypted = b"encryption-data" in manifest
                    return Sniffed(_ODF_MIMETYPES[mimetype], encrypted=encrypted)
            content_types = (_read_small(archive, "[Content_Types].xml").decode("utf-8", "replace")
                             .lower() if "[Content_Types].xml" in names else "")
    except (zipfile.BadZipFile, OSError, ValueError, KeyError, EOFError,
            NotImplementedError, RuntimeError) as error:
        # A local header names an Office part but the directory is gone: a truncated document.
        first = _first_member_name(head)
        return Sniffed(Format.ZIP, damaged=True,
                       detail=f"the zip container is damaged ({error}); first member {first!r}")
    for marker, found in _OOXML_CONTENT_TYPES:
        if marker in content_types:
            return _with_emptiness(found, names)
    # No (or an unusual) content-types part: fall back on the member names.
    if any(n.startswith("word/") for n in names):
        return Sniffed(Format.DOCX)
    if any(n.startswith("ppt/") for n in names):
        return _with_emptiness(Format.PPTX, names)
    if any(n.startswith("xl/") for n in names):
        if "xl/workbook.bin" in names:
            return Sniffed(Format.XLSB)
        if "xl/vbaProject.bin" in names:
            return Sniffed(Format.XLSM)
        return Sniffed(Format.XLSX)
    return Sniffed(Format.ZIP)


def _with_emptiness(found: Format, names: set[str]) -> Sniffed:
    if found is Format.PPTX and not any(re.match(r"ppt/slides/slide\d+\.xml$", n) for n in names):
        return Sniffed(found, empty=True, detail="a presentation with no slides")
    return Sniffed(found)


def _first_member_name(head: bytes) -> str:
    if not head.startswith(b"PK\x03\x04") or len(head) < 30:
        return ""
    length = int.from_bytes(head[26:28], "little")
    return head[30:30 + length].decode("utf-8", "replace")


def _sniff_ole(path: Path) -> Sniffed:
    import olefile

    try:
        with olefile.OleFileIO(str(path)) as ole:
            streams = {"/".join(entry) for entry in ole.listdir(streams=True, storages=True)}
    except Exception as error:  # olefile raises many kinds on a hostile directory
        return Sniffed(Format.UNKNOWN, damaged=True, detail=f"a damaged OLE2 file ({error})")
    if "EncryptedPackage" in streams:
        # An encrypted OOXML package (docx, xlsx or pptx inside); its kind is known only after
        # decryption.
        return Sniffed(Format.ENCRYPTED_OFFICE, encrypted=True)
    if "WordDocument" in streams:
        found = Format.DOC
    elif "Workbook" in streams or "Book" in streams:
        found = Format.XLS
    elif "PowerPoint Document" in streams:
        found = Format.PPT
    else:
        return Sniffed(Format.UNKNOWN, detail="an OLE2 file holding no Word, Excel or "
                       f"PowerPoint stream ({', '.join(sorted(streams)[:5])})")
    return Sniffed(found, encrypted=_legacy_encrypted(path))


def _legacy_encrypted(path: Path) -> bool:
    """Whether a Word, Excel or PowerPoint 97-2003 file is password-protected (RC4 or XOR)."""
    import msoffcrypto

    try:
        with open(path, "rb") as handle:
            return bool(msoffcrypto.OfficeFile(handle).is_encrypted())
    except Exception:  # unrecognised variants: let the reader say what is wrong
        return False


def _sniff_text(head: bytes, *, truncated: bool) -> Sniffed:
    text, encoding = decode_head(head)
    if text is None:
        return Sniffed(Format.UNKNOWN, detail="binary content of no known format")
    lines = [line for line in text.splitlines() if line.strip()]
    if truncated:
        lines = lines[:-1]  # the last line may be cut short
    lines = lines[:50]
    if _HTML_START.match(text) or re.search(r"(?i)<html[\s>]|<body[\s>]", text[:4096]):
        return Sniffed(Format.HTML, encoding=encoding)
    if _looks_like_email(text):
        return Sniffed(Format.EMAIL, encoding=encoding)
    if len(lines) >= 2:
        for delimiter in (",", ";", "\t", "|"):
            # Every non-blank line has the delimiter (rows may be ragged); prose rarely does.
            if all(delimiter in line for line in lines):
                return Sniffed(Format.CSV, encoding=encoding)
    return Sniffed(Format.TEXT, encoding=encoding)


_HTML_START = re.compile(r"(?is)\A\s*(<!--.*?-->\s*)*(<!doctype\s+html|<html[\s>]|<head[\s>])")
_HEADER_LINE = re.compile(r"^([A-Za-z][A-Za-z0-9-]*):[ \t]")
_MAIL_HEADERS = frozenset({"from", "to", "subject", "date", "message-id", "received",
                           "mime-version", "return-path", "cc", "reply-to", "content-type"})


def _looks_like_email(text: str) -> bool:
    """A header block first (``Name: value`` lines, folded lines allowed, up to a blank line),
    naming at least two of the usual message headers, ``From`` or ``Received`` among them."""
    names = set()
    for line in text.splitlines():
        if not line.strip():
            break
        if line[0] in " \t" and names:
            continue
        match = _HEADER_LINE.match(line)
        if not match:
            return False
        names.add(match.group(1).lower())
    found = names & _MAIL_HEADERS
    return len(found) >= 2 and bool(found & {"from", "received"})


def decode_head(head: bytes) -> tuple[str | None, str | None]:
    """Decode the first bytes of a text file: BOMs first, UTF-8, then charset-normalizer.

    NUL bytes without a UTF-16/32 BOM mean binary (``None``)."""
    for bom, encoding in ((b"\xef\xbb\xbf", "utf-8-sig"), (b"\xff\xfe\x00\x00", "utf-32"),
                          (b"\x00\x00\xfe\xff", "utf-32"), (b"\xff\xfe", "utf-16"),
                          (b"\xfe\xff", "utf-16")):
        if head.startswith(bom):
            return head.decode(encoding, errors="ignore"), encoding
    if b"\x00" in head:
        return None, None
    try:
        return head.decode("utf-8"), "utf-8"
    except UnicodeDecodeError as error:
        if error.start >= len(head) - 3:  # a character cut at the end of the window
            return head[:error.start].decode("utf-8"), "utf-8"
    from charset_normalizer import from_bytes

    best = from_bytes(head).best()
    if best is None:
        return None, None
    return str(best), best.encoding
