"""Refuse, before LibreOffice opens it, a document that would pull in content from outside itself.

A document can name a file or an address whose content the converter then fetches and renders
into the PDF: a linked image (``file:///home/me/private.png``), an included text or section, a
linked OLE object, a DDE link. Under bubblewrap the converter sees only its work folder
(``extract.formats.sandbox``), but bwrap is missing on many machines and impossible on Lambda,
and LibreOffice's own ``BlockUntrustedRefererLinks`` does not cover every form (an RTF
``INCLUDEPICTURE`` field goes through). So every form is looked for here, in the document's own
bytes, and a document holding one fails with the reason ``links_outside``, naming what it links
to. What is looked for, by format:

- OOXML (docx, pptx): a relationship with ``TargetMode="External"`` other than a hyperlink,
  the template's name or a linked video or sound (linked pictures, linked OLE objects,
  subdocuments, frames, external data); fields
  ``INCLUDEPICTURE``, ``INCLUDETEXT``, ``INCLUDE``, ``LINK``, ``IMPORT``, ``DDE``, ``DDEAUTO``
  in ``w:instrText`` (joined across runs: a keyword split over runs is still found) and
  ``w:fldSimple``;
- OpenDocument (odt, odp): an ``xlink:href`` outside the package on anything but a hyperlink
  (images, objects, OLE objects, sections, tables, plugins, frames, fills), DDE sources;
- RTF: the same fields in ``\\fldinst`` (hex and unicode escapes decoded), ``\\objlink`` and
  ``\\objautlink`` objects;
- Word 97-2003 (doc): the same fields in the text stream, OLE objects flagged as links;
  PowerPoint 97-2003 (ppt): linked OLE objects (``ExOleLinkContainer`` records).

Hyperlinks are not refused: LibreOffice writes them into the PDF as links and fetches nothing.
Every XML part is read as a stream with a cap on the bytes it inflates to: a part past
``max_inflated_bytes`` fails with ``too_large`` (a zip bomb is a limit, not a corrupt file).
Runs in a worker process (``ctx.cpu``).
"""

from __future__ import annotations

import re
import zipfile
from pathlib import Path
from xml.parsers import expat

from extract.errors import LimitExceeded, TerminalError
from extract.formats.sniff import Format

LINKS_OUTSIDE = "links_outside"
TOO_LARGE = "too_large"
DEFAULT_MAX_INFLATED = 512 * 1024**2
CHUNK = 1 << 16

FIELDS = re.compile(r"^\s*(INCLUDEPICTURE|INCLUDETEXT|INCLUDE|LINK|IMPORT|DDEAUTO|DDE)\b",
                    re.IGNORECASE)
# External relationships LibreOffice fetches nothing for when it makes a PDF: a hyperlink, the
# template's name, a linked video or sound (the slide shows its poster picture, kept inside).
_FOLLOWED_TYPES = ("hyperlink", "attachedTemplate", "video", "audio", "media")
_VML_PICTURES = frozenset({"imagedata", "fill", "stroke", "image", "textpath"})
_OOXML_NAMES = ("Relationship", "fldChar", "instrText", "fldSimple", *_VML_PICTURES)
_OOXML_MARKERS = (b"TargetMode", b"instrText", b"fldSimple", b"imagedata", b"fill", b"stroke",
                  b"image", b"textpath")
_ODF_MARKERS = (b"href", b"dde-")
_ODF_ANCHORS = frozenset({"a"})  # text:a, draw:a: a hyperlink, never fetched
_ODF_DDE = (":dde-source", ":dde-connection-decl", ":dde-connection")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


class LinksOutside(TerminalError):
    """The document would make the converter fetch content from outside itself."""

    error_type = LINKS_OUTSIDE


def _refuse(what: str) -> LinksOutside:
    shown = what if len(what) <= 160 else what[:157] + "..."
    return LinksOutside(f"the document links to content outside itself ({shown}); doclake does "
                        "not convert documents that would fetch a file or an address")


def check_links(path: Path, fmt: Format, max_inflated_bytes: int = DEFAULT_MAX_INFLATED) -> None:
    """Raise ``LinksOutside`` when the document at ``path`` (sniffed as ``fmt``) links to
    content outside itself, ``LimitExceeded('too_large')`` when its parts inflate past
    ``max_inflated_bytes``; return None otherwise."""
    if fmt in (Format.DOCX, Format.PPTX):
        _check_ooxml(path, max_inflated_bytes)
    elif fmt in (Format.ODT, Format.ODP):
        _check_odf(path, max_inflated_bytes)
    elif fmt is Format.RTF:
        _check_rtf(path.read_bytes())
    elif fmt in (Format.DOC, Format.PPT):
        _check_ole(path, fmt)


# --- zip packages -------------------------------------------------------------------------------


class _Budget:
    def __init__(self, limit: int):
        self.limit, self.used = limit, 0

    def take(self, size: int, part: str) -> None:
        self.used += size
        if self.used > self.limit:
            raise LimitExceeded(
                f"the document's parts inflate to more than {self.limit // 2**20} MiB (at "
                f"{part!r}), the limit DOCLAKE_MAX_INFLATED_BYTES; raise it to read this file",
                error_type=TOO_LARGE)


def _mentions(archive: zipfile.ZipFile, info: zipfile.ZipInfo, budget: _Budget,
              markers: tuple[bytes, ...]) -> bool:
    """Whether the part's bytes hold one of ``markers`` (the element or attribute names the
    handlers look at: names are never escaped in XML, so a part without them holds nothing to
    find). Inflating and searching run in C: a large part without a field, a link or a
    relationship is not parsed at all. Counts the part against the budget."""
    tail = b""
    with archive.open(info) as member:
        while chunk := member.read(CHUNK):
            budget.take(len(chunk), info.filename)
            window = tail + chunk
            if any(marker in window for marker in markers):
                return True
            tail = chunk[-32:]
    return False


def _parse(archive: zipfile.ZipFile, info: zipfile.ZipInfo, budget: _Budget,
           handlers: _Handlers) -> None:
    """Feed one XML part to expat as a stream (memory stays small however large the part),
    calling ``handlers`` as it goes. Names arrive as written (``w:instrText``: no namespace
    processing, the cheaper parse), so handlers match the local part whatever the prefix. A
    part expat refuses
    may still be read by LibreOffice's parser, which recovers from more: its bytes are then
    searched instead, more strictly (``_scan_unparsed``)."""
    parser = expat.ParserCreate()
    parser.buffer_text = True
    handlers.parser = parser
    parser.StartElementHandler = handlers.start
    try:
        with archive.open(info) as member:  # counted by _mentions already
            while chunk := member.read(CHUNK):
                parser.Parse(chunk, False)
        parser.Parse(b"", True)
    except expat.ExpatError:
        _scan_unparsed(archive, info, budget)


class _Handlers:
    """Expat callbacks for one part; ``parser`` is set by ``_parse``."""

    parser: expat.XMLParserType

    def __init__(self, part: str):
        self.part = part

    def start(self, name: str, attributes: dict[str, str]) -> None:
        raise NotImplementedError


def _local_name(name: str) -> str:
    return name.rpartition(":")[2]


_RAW_RELATIONSHIP = re.compile(rb"<(?:\w+:)?Relationship\b[^>]*>", re.IGNORECASE)
_RAW_EXTERNAL = re.compile(rb"TargetMode\s*=\s*[\"']External", re.IGNORECASE)
_RAW_FOLLOWED = re.compile(rb"/(?:hyperlink|attachedTemplate|video|audio|media)[\"']")
_RAW_REFERENCE = re.compile(rb"<(?:\w+:)?(\w+)\b[^>]*?\b(?:\w+:)?(?:href|src)\s*=\s*[\"']([^\"']*)")
_RAW_TAG = re.compile(rb"<[^>]*>")
_RAW_WINDOW = 8 * 1024 * 1024
_RAW_OVERLAP = 64 * 1024
_RAW_FIELD = re.compile(rb"(?:INCLUDEPICTURE|INCLUDETEXT|INCLUDE|LINK|IMPORT|DDEAUTO|DDE)\b",
                        re.IGNORECASE)


def _scan_unparsed(archive: zipfile.ZipFile, info: zipfile.ZipInfo, budget: _Budget) -> None:
    """Search a part the XML parser refused as bytes: any external relationship other than a
    hyperlink, any reference outside the package on anything but a hyperlink, and any field
    keyword in its text (tags taken out) are refused. Read in windows of ``_RAW_WINDOW`` that
    overlap by ``_RAW_OVERLAP``, so memory stays bounded and nothing is missed at a seam."""
    carried = b""
    with archive.open(info) as member:
        while chunk := member.read(_RAW_WINDOW):
            budget.take(len(chunk), info.filename)
            window = carried + chunk
            _scan_window(window, info.filename)
            carried = window[-_RAW_OVERLAP:]


def _scan_window(data: bytes, part: str) -> None:
    for tag in _RAW_RELATIONSHIP.findall(data):
        if _RAW_EXTERNAL.search(tag) and not _RAW_FOLLOWED.search(tag):
            raise _refuse(f"an external relationship in {part}")
    for name, href in _RAW_REFERENCE.findall(data):
        if name not in (b"a", b"hyperlink") and _outside(href.decode("utf-8", "replace")):
            raise _refuse(f"{name.decode(errors='replace')} {href[:120]!r} in {part}")
    if part.lower().endswith(".xml") and _RAW_FIELD.search(_RAW_TAG.sub(b"", data)):
        raise _refuse(f"a field keyword in the unreadable part {part}")


def _open(path: Path, max_inflated: int) -> tuple[zipfile.ZipFile, list[zipfile.ZipInfo]] | None:
    """The archive and its XML parts; a declared total past the limit fails at once."""
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError):
        return None  # the conversion reports the damage
    parts = [i for i in archive.infolist() if not i.is_dir()
             and i.filename.lower().endswith((".xml", ".rels"))]
    _Budget(max_inflated).take(sum(i.file_size for i in parts), "the zip directory's sizes")
    return archive, parts


def _check_ooxml(path: Path, max_inflated: int) -> None:
    opened = _open(path, max_inflated)
    if opened is None:
        return
    archive, parts = opened
    budget = _Budget(max_inflated)
    with archive:
        for info in parts:
            if not _mentions(archive, info, budget, _OOXML_MARKERS):
                continue
            handlers = _OoxmlHandlers(info.filename)
            _parse(archive, info, budget, handlers)
            for field in handlers.fields:
                _check_field("".join(field), info.filename)


class _OoxmlHandlers(_Handlers):
    """External relationships, field instructions (one per field begun, nested ones apart; the
    text of every ``instrText`` of a field joined, so a keyword split over runs is whole) and
    VML pictures given by a path."""

    def __init__(self, part: str):
        super().__init__(part)
        self.fields: list[list[str]] = [[]]

    def start(self, name: str, attributes: dict[str, str]) -> None:
        if not name.endswith(_OOXML_NAMES):  # most elements: one C call, nothing else
            return
        local = _local_name(name)
        if local == "Relationship":
            mode = (attributes.get("TargetMode") or "").lower()
            kind = (attributes.get("Type") or "").rsplit("/", 1)[-1]
            if mode == "external" and kind not in _FOLLOWED_TYPES:
                raise _refuse(f"an external {kind or 'relationship'} "
                              f"{attributes.get('Target', '')!r} in {self.part}")
        elif local == "fldChar":
            if _attribute(attributes, "fldCharType") == "begin":
                self.fields.append([])
        elif local == "instrText":
            self.parser.CharacterDataHandler = self.fields[-1].append
            self.parser.EndElementHandler = self.end
        elif local == "fldSimple":
            _check_field(_attribute(attributes, "instr"), self.part)
        elif local in _VML_PICTURES:
            for key, value in attributes.items():
                if _local_name(key) in ("href", "src") and _outside(value):
                    raise _refuse(f"{local} {value!r} in {self.part}")

    def end(self, name: str) -> None:
        if name.endswith("instrText"):
            self.parser.CharacterDataHandler = None
            self.parser.EndElementHandler = None


def _attribute(attributes: dict[str, str], local_name: str) -> str:
    return next((v for k, v in attributes.items() if _local_name(k) == local_name), "")


def _check_field(instruction: str, where: str) -> None:
    if FIELDS.search(instruction):
        raise _refuse(f"a field {instruction.strip()[:120]!r} in {where}")


def _outside(href: str) -> bool:
    """A reference to something not in the package: a scheme (``file:``, ``http:``, a drive
    letter), an absolute path, or a path climbing out of the package (``../``)."""
    reference = href.strip().replace("\\", "/")
    if not reference or reference.startswith("#"):
        return False
    if _SCHEME.match(reference) or reference.startswith("/"):
        return True
    return ".." in reference.split("/")


def _check_odf(path: Path, max_inflated: int) -> None:
    opened = _open(path, max_inflated)
    if opened is None:
        return
    archive, parts = opened
    budget = _Budget(max_inflated)
    with archive:
        for info in parts:
            if not info.filename.startswith("META-INF/") and \
                    _mentions(archive, info, budget, _ODF_MARKERS):
                _parse(archive, info, budget, _OdfHandlers(info.filename))


class _OdfHandlers(_Handlers):
    """An ``xlink:href`` outside the package on anything but a hyperlink; DDE sources."""

    def start(self, name: str, attributes: dict[str, str]) -> None:
        if name.endswith(_ODF_DDE):
            raise _refuse(f"a DDE link ({name}) in {self.part}")
        if not attributes or _local_name(name) in _ODF_ANCHORS:
            return
        for key, value in attributes.items():  # xlink:href, whatever the prefix
            if key.endswith("href") and _local_name(key) == "href" and _outside(value):
                raise _refuse(f"{name} {value!r} in {self.part}")


# --- RTF ----------------------------------------------------------------------------------------

_RTF_LINKED_OBJECT = re.compile(rb"\\obj(?:link|autlink)(?![a-z])")
_RTF_LINKED_PICTURE = re.compile(rb"\\sn\s+pibName(?![a-zA-Z])")
_RTF_FLDINST = re.compile(rb"\\fldinst(?![a-z])")
_RTF_HEX = re.compile(rb"\\'([0-9a-fA-F]{2})")
_RTF_UNICODE = re.compile(rb"\\u(-?\d+)\??")
_RTF_CONTROL = re.compile(rb"\\[a-zA-Z]+-?\d* ?|\\[^a-zA-Z]|[{}\r\n]")


def _rtf_text(raw: bytes) -> str:
    """RTF source as the text it spells: escapes decoded, control words and braces dropped."""
    text = _RTF_HEX.sub(lambda m: bytes([int(m.group(1), 16)]), raw)
    text = _RTF_UNICODE.sub(lambda m: chr(int(m.group(1)) % 65536).encode("utf-8"), text)
    return _RTF_CONTROL.sub(b"", text).decode("latin-1")


def _check_rtf(data: bytes) -> None:
    if _RTF_LINKED_OBJECT.search(data):
        raise _refuse("a linked OLE object (\\objlink)")
    if _RTF_LINKED_PICTURE.search(data):
        raise _refuse("a linked picture (pibName)")
    for found in _RTF_FLDINST.finditer(data):
        instruction = _rtf_text(data[found.end():found.end() + 4096])
        _check_field(instruction, "an RTF field")


# --- Word and PowerPoint 97-2003 ----------------------------------------------------------------

_FIELD_8BIT = re.compile(rb"\x13\s*(INCLUDEPICTURE|INCLUDETEXT|INCLUDE|LINK|IMPORT|DDEAUTO|DDE)\b",
                         re.IGNORECASE)
_PPT_LINKED_OLE = b"\x0f\x00\xce\x0f"  # record header: version 0xF, type 0x0FCE ExOleLinkContainer


def _check_ole(path: Path, fmt: Format) -> None:
    import olefile

    try:
        ole = olefile.OleFileIO(str(path))
    except Exception:  # olefile raises many kinds on a damaged file; the conversion reports it
        return
    with ole:
        for entry in ole.listdir(streams=True, storages=False):
            name = "/".join(entry)
            data = _stream(ole, entry)
            if entry[-1] == "\x01Ole" and len(data) >= 8 and int.from_bytes(data[4:8],
                                                                            "little") & 1:
                raise _refuse(f"a linked OLE object ({name!r})")
            if fmt is Format.DOC and entry[-1] == "WordDocument":
                for text in (data, data.decode("utf-16-le", "ignore").encode("latin-1", "ignore"),
                             data[1:].decode("utf-16-le", "ignore").encode("latin-1", "ignore")):
                    if found := _FIELD_8BIT.search(text):
                        raise _refuse(f"a field {found.group(1).decode()!r} in the text")
            if fmt is Format.PPT and entry[-1] == "PowerPoint Document" \
                    and _PPT_LINKED_OLE in data:
                raise _refuse("a linked OLE object (ExOleLinkContainer)")


def _stream(ole, entry: list[str]) -> bytes:
    try:
        with ole.openstream(entry) as stream:
            return stream.read(256 * 1024**2)
    except Exception:  # a damaged stream: nothing to find in it
        return b""
