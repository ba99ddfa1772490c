"""What a package part is by its bytes (never its name), and a streaming XML parse of it in its
real encoding.

The links check reads every part of a zip package. A part's name says nothing (an SVG picture
may be called ``word/media/x.bin``), and its encoding is whatever the bytes say: a byte-order
mark, the shape of its first character (XML 1.0, appendix F: ``<`` in UTF-32, UTF-16, an
ASCII-compatible encoding or EBCDIC), then its XML declaration. Leading whitespace of any length
is skipped in each of those shapes, so padding cannot push the first ``<`` out of view. The
part is then decoded with Python's codec for that encoding and fed, as text, to defusedxml's
parser (expat, with entity declarations refused), so UTF-32 and EBCDIC parts, which expat
cannot read itself, are parsed like UTF-8 ones. A declared encoding that contradicts the bytes'
shape, or one Python does not know, is not guessed: the part is reported unreadable.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import StrEnum

__all__ = ["Kind", "Probe", "UnreadableMarkup", "decoded_chunks", "probe"]

PROBE_BYTES = 4096


class Kind(StrEnum):
    MARKUP = "markup"  # XML (or something that means to be): parsed
    RTF = "rtf"  # an RTF document inside the package (an altChunk): tokenized
    ZIP = "zip"  # a package inside the package: checked the same way
    GZIP = "gzip"  # compressed (an .svgz): inflated, then checked
    OLE = "ole"  # an OLE2 compound file (an embedded object)
    IMAGE = "image"  # a raster or metafile picture by its magic number
    TEXT = "text"  # text that is neither markup nor RTF (HTML fragments, MHT, scripts)
    BINARY = "binary"  # anything else (fonts, printer settings, layout caches)


class UnreadableMarkup(Exception):
    """A part that looks like markup but cannot be decoded or parsed as declared."""


@dataclass(frozen=True)
class Probe:
    kind: Kind
    encoding: str | None = None  # for MARKUP and TEXT: the codec to decode with
    bom: int = 0  # bytes of byte-order mark to skip


_IMAGE_MAGIC = (b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"GIF87a", b"GIF89a", b"BM",
                b"II*\x00", b"MM\x00*", b"II\xbc", b"\xd7\xcd\xc6\x9a", b"\x01\x00\x09\x00",
                b"\x02\x00\x09\x00", b"VCLMTF", b"\x00\x00\x01\x00")
_BOMS = ((codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be"),
         (codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"),
         (codecs.BOM_UTF16_BE, "utf-16-be"))
# The shapes a document's first character can take, widest first (a UTF-32LE '<' also reads as
# a UTF-16LE '<' followed by a NUL). EBCDIC: '<' is 0x4C, whitespace 0x40, 0x05, 0x25, 0x15.
_SHAPES = ("utf-32-le", "utf-32-be", "utf-16-le", "utf-16-be", "utf-8", "cp500")
_WHITESPACE = " \t\r\n\x85\u2028\ufeff"
_DECLARATION = re.compile(r"""^<\?xml[^>]*?\bencoding\s*=\s*["']([A-Za-z0-9._:-]+)["']""")
# Encodings whose byte shape agrees with each probed shape (a declaration naming another is a
# contradiction, refused).
_EBCDIC = frozenset({"cp500", "cp037", "cp1140", "cp273", "cp1026", "cp875", "cp1047"})
_UNIT = {"utf-32-le": 4, "utf-32-be": 4, "utf-16-le": 2, "utf-16-be": 2, "utf-8": 1,
         "cp500": 1}


def probe(chunks: Iterator[bytes]) -> Probe:
    """What the part whose bytes ``chunks`` yields is. Reads no further than it must: the
    first bytes decide, except for leading whitespace, which is read through whatever its
    length (a part of whitespace only is text)."""
    head = next(chunks, b"")
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return Probe(Kind.ZIP)
    if head.startswith(b"\x1f\x8b"):
        return Probe(Kind.GZIP)
    if head.startswith(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"):
        return Probe(Kind.OLE)
    if head.startswith(_IMAGE_MAGIC) or head[40:44] == b" EMF" or (
            head.startswith(b"RIFF") and head[8:12] == b"WEBP"):
        return Probe(Kind.IMAGE)
    shapes: tuple[str, ...] = _SHAPES
    bom = 0
    for mark, encoding in _BOMS:
        if head.startswith(mark):
            shapes, bom = (encoding,), len(mark)
            break
    first = _first_characters(head, bom, chunks, shapes)
    for encoding in shapes:
        text = first.get(encoding, "")
        if text.startswith("<"):
            return _declared(head[bom:], encoding, bom)
        if text.startswith("{\\rtf"):
            return Probe(Kind.RTF)
    if bom:
        return Probe(Kind.TEXT, shapes[0], bom)
    if _is_text(head):
        return Probe(Kind.TEXT, "utf-8")
    return Probe(Kind.BINARY)


def _first_characters(head: bytes, bom: int, more: Iterator[bytes], shapes: tuple[str, ...]
                      ) -> dict[str, str]:
    """For each shape, the part's first characters after its whitespace ('' for a part that is
    all whitespace), decoding every shape in step over the same chunks."""
    decoders = {s: codecs.getincrementaldecoder(s)(errors="replace") for s in shapes}
    found: dict[str, str] = {}
    data = head[bom:]
    while decoders:
        for shape in list(decoders):
            text = decoders[shape].decode(data, final=not data).lstrip(_WHITESPACE)
            if text or not data:
                found[shape] = text[:8]
                del decoders[shape]
        if decoders:
            data = next(more, b"")
    return found


def _declared(body: bytes, shape: str, bom: int) -> Probe:
    """The encoding to decode with: the declaration's, when it agrees with the bytes' shape."""
    text = _decode_prefix(body[:PROBE_BYTES], shape).lstrip(_WHITESPACE)
    found = _DECLARATION.match(text)
    if found is None:
        return Probe(Kind.MARKUP, shape, bom)
    declared = found.group(1)
    try:
        name = codecs.lookup(declared).name
    except LookupError:
        raise UnreadableMarkup(f"it declares the encoding {declared!r}, which doclake cannot "
                               "decode") from None
    if _UNIT.get(shape) != _width(name):
        raise UnreadableMarkup(f"it declares the encoding {declared!r} but its bytes are "
                               f"{shape}")
    if _UNIT[shape] > 1:  # utf-16 declared on utf-16-le bytes: keep the byte order seen
        return Probe(Kind.MARKUP, shape, bom)
    if (shape == "cp500") != (name in _EBCDIC):
        raise UnreadableMarkup(f"it declares the encoding {declared!r} but its bytes are "
                               f"{'EBCDIC' if shape == 'cp500' else 'ASCII-compatible'}")
    return Probe(Kind.MARKUP, name, bom)


def _width(codec_name: str) -> int:
    if codec_name.startswith("utf-32"):
        return 4
    if codec_name.startswith("utf-16"):
        return 2
    return 1


def _decode_prefix(data: bytes, encoding: str) -> str:
    decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
    return decoder.decode(data[:PROBE_BYTES], final=False)


def _is_text(head: bytes) -> bool:
    """No C0 control bytes but whitespace and form feed: text some reader might take."""
    return bool(head) and not any(b < 9 or 13 < b < 32 and b != 27 for b in head[:PROBE_BYTES])


def decoded_chunks(read: Callable[[int], bytes], found: Probe, chunk: int
                   ) -> Iterator[str]:
    """The part as text in the probed encoding, chunk by chunk (a character split between two
    chunks is carried); bytes that are not that encoding raise ``UnreadableMarkup``."""
    assert found.encoding is not None
    decoder = codecs.getincrementaldecoder(found.encoding)(errors="strict")
    skip = found.bom
    try:
        while data := read(chunk):
            if skip:
                data, skip = data[skip:], max(0, skip - len(data))
            if text := decoder.decode(data):
                yield text
        if tail := decoder.decode(b"", final=True):
            yield tail
    except UnicodeDecodeError as error:
        raise UnreadableMarkup(f"its bytes are not {found.encoding} ({error.reason})") from None
