"""Check the converter's output: every picture in the PDF must be a picture of the document.

The second line of defence behind the links check (``extract.formats.links``) and the boundary
(``extract.formats.confine``), for the routes no check has thought of: a converted PDF holding
a picture that the document does not hold came from somewhere else, and is refused with
``links_outside`` before it is stored, read or OCR'd.

The document's pictures are found by their bytes wherever they sit: every part of a zip package
(and packages and gzip inside it), the ``data:`` pictures of its SVG and XML parts, the
pictures of an RTF (``\\pict`` groups, their hex decoded), the streams of an OLE2 file (Word
and PowerPoint 97-2003 keep PNG, JPEG and DIB pictures there, behind record headers), and the
device-independent bitmaps inside EMF and WMF pictures (LibreOffice writes those as images).
Each is measured with Pillow. Each image of the PDF (pypdfium2) must have the pixel size of one
of them, either way round (a picture turned a quarter); the PDF may hold fewer (a picture on
a hidden slide), never one of another size.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import io
import re
import struct
import zipfile
from pathlib import Path

from extract.formats.refusals import refuse
from extract.formats.sniff import Format

__all__ = ["check_output", "document_picture_sizes", "pdf_picture_sizes"]

_MAGIC = re.compile(rb"\x89PNG\r\n\x1a\n|\xff\xd8\xff|GIF8[79]a")
_DATA_URI = re.compile(rb"data:image/[a-z+.-]+;base64,([A-Za-z0-9+/=\s]+)")
_RTF_PICT = re.compile(rb"\\pict(?![a-z])")
_RTF_HEX = re.compile(rb"[0-9a-fA-F\s]{16,}")
_MAX_PICTURES = 100_000
_MAX_BYTES = 512 * 1024**2
_HEADER_WINDOW = 1024**2  # enough of a picture for Pillow to read its size (a JPEG's EXIF first)


def check_output(pdf: Path, source: Path, fmt: Format) -> None:
    """Raise ``LinksOutside`` when the PDF converted from ``source`` holds a picture the
    document does not."""
    allowed = document_picture_sizes(source, fmt)
    for size in pdf_picture_sizes(pdf):
        if size not in allowed and (size[1], size[0]) not in allowed:
            raise refuse(f"the converted PDF holds a {size[0]}x{size[1]} picture that is not "
                         "one of the document's own; it came from outside the document")


def pdf_picture_sizes(pdf: Path) -> set[tuple[int, int]]:
    """The pixel sizes of every image object of the PDF, in forms too."""
    import pypdfium2 as pdfium

    sizes: set[tuple[int, int]] = set()
    document = pdfium.PdfDocument(str(pdf))
    try:
        for page in document:
            for item in page.get_objects(filter=[pdfium.raw.FPDF_PAGEOBJ_IMAGE], max_depth=16):
                width, height = item.get_px_size()
                sizes.add((int(width), int(height)))
            page.close()
    finally:
        document.close()
    return sizes


def document_picture_sizes(source: Path, fmt: Format) -> set[tuple[int, int]]:
    """The pixel sizes of every picture the document holds, found by their bytes."""
    sizes: set[tuple[int, int]] = set()
    if fmt in (Format.DOCX, Format.PPTX, Format.ODT, Format.ODP):
        try:
            with zipfile.ZipFile(source) as archive:
                _from_archive(archive, sizes, depth=0)
        except (zipfile.BadZipFile, OSError, ValueError):
            pass
    elif fmt is Format.RTF:
        _from_rtf(source.read_bytes(), sizes)
    elif fmt in (Format.DOC, Format.PPT):
        _from_ole(source, sizes)
    return sizes


def _from_archive(archive: zipfile.ZipFile, sizes: set[tuple[int, int]], depth: int) -> None:
    for info in archive.infolist():
        if info.is_dir() or info.file_size > _MAX_BYTES:
            continue
        with archive.open(info) as member:
            _from_bytes(member.read(_MAX_BYTES), sizes, depth)


def _from_bytes(data: bytes, sizes: set[tuple[int, int]], depth: int) -> None:
    if len(sizes) > _MAX_PICTURES or depth > 3:
        return
    if data.startswith(b"PK\x03\x04"):
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as inner:
                _from_archive(inner, sizes, depth + 1)
        except (zipfile.BadZipFile, ValueError):
            pass
        return
    if data.startswith(b"\x1f\x8b"):
        with contextlib.suppress(OSError, EOFError):
            _from_bytes(gzip.decompress(data), sizes, depth + 1)
        return
    if _measure(data, sizes):
        _from_metafile(data, sizes)
        return
    for found in _DATA_URI.finditer(data):
        try:
            _from_bytes(base64.b64decode(re.sub(rb"\s", b"", found.group(1))), sizes, depth + 1)
        except ValueError:
            continue


def _measure(data: bytes, sizes: set[tuple[int, int]]) -> bool:
    """Add the size of the picture ``data`` is (Pillow's reading of its header)."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as image:
            sizes.add(image.size)
            return True
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError, struct.error):
        return False


_DIB_RECORDS = {76, 77, 79, 80, 81, 114, 116}  # EMR_BITBLT ... EMR_ALPHABLEND, TRANSPARENTBLT


def _from_metafile(data: bytes, sizes: set[tuple[int, int]]) -> None:
    """The bitmaps inside an EMF (and the EMF+ records' images, by magic): LibreOffice exports
    them as PDF images of their own size."""
    if data[40:44] != b" EMF":
        _scan_magic(data, sizes)
        return
    offset = 0
    while offset + 8 <= len(data):
        kind, size = struct.unpack_from("<II", data, offset)
        if size < 8:
            break
        if kind in _DIB_RECORDS:
            _dib_headers(data[offset:offset + size], sizes)
        offset += size
    _scan_magic(data, sizes)


# A BITMAPINFOHEADER: its own size (40, 52, 56, 108 or 124), width, height, one plane, a usual
# bit depth; found by a regular expression, in C, wherever it sits.
_DIB_HEADER = re.compile(rb"(?:\x28|\x34|\x38|\x6c|\x7c)\x00\x00\x00.{8}\x01\x00"
                         rb"(?:\x01|\x04|\x08|\x10|\x18|\x20)\x00", re.DOTALL)


def _dib_headers(data: bytes, sizes: set[tuple[int, int]]) -> None:
    """Every device-independent bitmap's size in ``data`` (an EMF record, an OLE stream)."""
    for found in _DIB_HEADER.finditer(data):
        width, height = struct.unpack_from("<ii", data, found.start() + 4)
        if 0 < width < 100_000 and height != 0 and abs(height) < 100_000:
            sizes.add((width, abs(height)))
        if len(sizes) > _MAX_PICTURES:
            return


def _scan_magic(data: bytes, sizes: set[tuple[int, int]]) -> None:
    for found in _MAGIC.finditer(data):
        if len(sizes) > _MAX_PICTURES:
            return
        _measure(data[found.start():found.start() + _HEADER_WINDOW], sizes)


def _from_rtf(data: bytes, sizes: set[tuple[int, int]]) -> None:
    for found in _RTF_PICT.finditer(data):
        body = _group_rest(data, found.end())
        body = re.sub(rb"{\\\*\\blipuid[^}]*}", b"", body)
        for run in _RTF_HEX.findall(body):
            try:
                picture = bytes.fromhex(re.sub(rb"\s", b"", run).decode("ascii"))
            except ValueError:
                continue
            if not _measure(picture, sizes):
                _from_metafile(picture, sizes)
                _dib_headers(picture, sizes)
        width, height = re.search(rb"\\picw(\d+)", body), re.search(rb"\\pich(\d+)", body)
        if width and height:
            sizes.add((int(width.group(1)), int(height.group(1))))


_RTF_BRACE_OR_ESCAPE = re.compile(rb"\\.|[{}]", re.DOTALL)


def _group_rest(data: bytes, start: int) -> bytes:
    """The rest of the RTF group that ``start`` is in (up to its closing brace); an escaped
    brace (``\\{``) does not count."""
    depth = 0
    for found in _RTF_BRACE_OR_ESCAPE.finditer(data, start):
        token = found.group()
        if token == b"{":
            depth += 1
        elif token == b"}":
            if depth == 0:
                return data[start:found.start()]
            depth -= 1
    return data[start:]


def _from_ole(source: Path, sizes: set[tuple[int, int]]) -> None:
    import olefile

    try:
        ole = olefile.OleFileIO(str(source))
    except Exception:  # a damaged file: the conversion reported it, or found no pictures
        return
    with ole:
        for entry in ole.listdir(streams=True, storages=False):
            try:
                with ole.openstream(entry) as stream:
                    data = stream.read(_MAX_BYTES)
            except Exception:  # a damaged stream holds no picture we can measure
                continue
            _scan_magic(data, sizes)
            _dib_headers(data, sizes)
