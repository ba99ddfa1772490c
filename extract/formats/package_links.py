"""The links check for zip packages (docx, pptx, odt, odp): an allow-list over every part.

Every part is read, whatever its name, and judged by its bytes (``extract.formats.markup``):
markup is parsed with defusedxml in its real encoding, a package inside the package is checked
the same way, a gzipped part is inflated first, an RTF part is tokenized
(``extract.formats.rtf_links``), an OLE object may not be a link (``extract.formats.ole_links``),
pictures by their magic number and other binary parts (fonts, printer settings) carry no
reference a converter follows. Text that is neither markup nor RTF (an HTML or MHT
``altChunk``) and markup that does not parse are refused: what cannot be read cannot be
allowed.

In markup, every reference is allowed only when it names a part inside the package:
attributes named ``href``, ``src``, ``base``, ``codebase``, ``background`` ... in any
namespace (``xlink:href``, ``o:href``, ``v:imagedata src``), a relationship's ``Target``, every
CSS ``url()`` in any attribute or style sheet, ``xml-stylesheet`` instructions and a DOCTYPE's system
identifier. Allowed besides: a fragment (``#id``), a ``data:`` raster picture, a hyperlink (an
anchor element's reference, an external relationship of the hyperlink type: LibreOffice writes
it into the PDF as a link and fetches nothing), and the external relationships LibreOffice
fetches nothing for (the template's name, a linked video or sound whose poster is inside). A
Word field that includes or links content (``INCLUDEPICTURE``, ``INCLUDETEXT``, ``LINK``,
``DDE`` ...) is refused too: its reference is text, not an attribute. Anything else is
``links_outside``.

A package is one format or it is refused (``ambiguous_format``): parts of two formats (an
OpenDocument ``mimetype`` beside ``word/``, ``word/`` beside ``ppt/``), an OpenDocument
package without a known ``mimetype``, or parts that disagree with the format it was sniffed
as. LibreOffice decides by its own detection, which need not be doclake's.
"""

from __future__ import annotations

import gzip
import io
import posixpath
import re
import zipfile
from pathlib import Path
from urllib.parse import unquote

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import XMLParser

from extract.errors import LimitExceeded, TerminalError
from extract.formats.markup import Kind, Probe, UnreadableMarkup, decoded_chunks, probe
from extract.formats.ole_links import check_ole_bytes
from extract.formats.refusals import LinksOutside, check_field, refuse
from extract.formats.rtf_links import check_rtf
from extract.formats.sniff import Format

__all__ = ["AMBIGUOUS_FORMAT", "AmbiguousFormat", "Budget", "check_package", "package_format"]

AMBIGUOUS_FORMAT = "ambiguous_format"
TOO_LARGE = "too_large"
CHUNK = 1 << 16
MAX_NESTING = 3  # a package in a package in a package; deeper is refused

_ODF_MIMETYPES = {"application/vnd.oasis.opendocument.text": Format.ODT,
                  "application/vnd.oasis.opendocument.presentation": Format.ODP,
                  "application/vnd.oasis.opendocument.spreadsheet": Format.ODS}
_OOXML_FOLDERS = {"word/": Format.DOCX, "ppt/": Format.PPTX, "xl/": Format.XLSX}
_ODF_SIGNS = ("mimetype", "META-INF/manifest.xml", "content.xml", "styles.xml")

# Attribute local names (any namespace, any case) whose value is a reference.
_REFERENCE_NAMES = frozenset({"href", "althref", "src", "lowsrc", "dynsrc", "base", "codebase",
                              "archive", "background", "poster"})
_ANCHORS = frozenset({"a", "hyperlink"})  # text:a, draw:a, svg a, w:hyperlink: never fetched
# External relationships LibreOffice fetches nothing for when it makes a PDF.
_EXTERNAL_ALLOWED = ("hyperlink", "attachedTemplate", "video", "audio", "media")
_ODF_DDE = frozenset({"dde-source", "dde-connection-decl", "dde-connection"})
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_CSS_URL = re.compile(r"url\s*\(\s*(['\"]?)([^)'\"]*)\1\s*\)|@import\s+(['\"])([^'\"]*)\3",
                      re.IGNORECASE)
_DATA_RASTER = re.compile(r"^data:image/(png|jpeg|jpg|gif|bmp|webp|tiff)[;,]", re.IGNORECASE)
_PACKAGE_SCHEME = re.compile(r"^vnd\.sun\.star\.Package:", re.IGNORECASE)
_STYLESHEET_HREF = re.compile(r"""href\s*=\s*(["'])(.*?)\1""")


class AmbiguousFormat(TerminalError):
    """The package holds parts of more than one format: which one the converter would open it
    as is not doclake's to guess."""

    error_type = AMBIGUOUS_FORMAT


class Budget:
    """Bytes inflated so far across every part (and every nested package) of one document."""

    def __init__(self, limit: int):
        self.limit, self.used = limit, 0

    def take(self, size: int, part: str) -> None:
        self.used += size
        if self.used > self.limit:
            raise LimitExceeded(
                f"the document's parts inflate to more than {self.limit // 2**20} MiB (at "
                f"{part!r}), the limit DOCLAKE_MAX_INFLATED_BYTES; raise it to read this file",
                error_type=TOO_LARGE)


def package_format(names: set[str], mimetype: str | None) -> set[Format]:
    """The formats a package's parts speak for: its ``mimetype``'s (an OpenDocument sign without
    a known one counts as a format of its own, unknown), and each OOXML main folder's."""
    found: set[Format] = set()
    if mimetype is not None or any(sign in names for sign in _ODF_SIGNS):
        found.add(_ODF_MIMETYPES.get(mimetype or "", Format.UNKNOWN))
    for folder, fmt in _OOXML_FOLDERS.items():
        if any(name.startswith(folder) for name in names):
            found.add(fmt)
    return found


def check_package(path: Path, fmt: Format, max_inflated_bytes: int) -> None:
    """Raise ``LinksOutside`` when a part of the package at ``path`` refers to anything but
    another of its parts, ``AmbiguousFormat`` when it is not plainly ``fmt``,
    ``LimitExceeded('too_large')`` past the inflation limit; a zip Python cannot open is left
    to the conversion, which reports the damage."""
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError):
        return
    with archive:
        _check_archive(archive, Budget(max_inflated_bytes), fmt, "", depth=0)


def _check_archive(archive: zipfile.ZipFile, budget: Budget, fmt: Format | None, where: str,
                   depth: int) -> None:
    parts = [info for info in archive.infolist() if not info.is_dir()]
    Budget(budget.limit).take(sum(i.file_size for i in parts), "the zip directory's sizes")
    names = {info.filename for info in parts}
    if fmt is not None:
        _check_one_format(archive, names, fmt, budget)
    folders = {posixpath.dirname(n.rstrip("/")) + "/" for n in names} | {
        n for n in (i.filename for i in archive.infolist() if i.is_dir())}
    package = _Package(names, {f.rstrip("/") for f in folders if f != "/"})
    for info in parts:
        _check_part(archive, info, budget, package, where, depth)


def _check_one_format(archive: zipfile.ZipFile, names: set[str], fmt: Format,
                      budget: Budget) -> None:
    mimetype = None
    if "mimetype" in names:
        with archive.open("mimetype") as member:
            raw = member.read(256)
        budget.take(len(raw), "mimetype")
        mimetype = raw.decode("ascii", "replace").strip()
    found = package_format(names, mimetype)
    if found != {fmt}:
        shown = ", ".join(sorted(f.value for f in found)) or "none"
        raise AmbiguousFormat(
            f"the package is not plainly one format: its parts speak for {shown} (mimetype "
            f"{mimetype!r}) and it was sniffed as {fmt.value}; doclake does not guess which one "
            "the converter would open it as")


class _Package:
    """The names a reference may resolve to: every part and every folder of the package."""

    def __init__(self, names: set[str], folders: set[str]):
        self.names, self.folders = names, folders

    def holds(self, reference: str, part: str, *, package_absolute: bool) -> bool:
        """Whether ``reference`` (seen in ``part``) names a part or folder of this package,
        relative to the part's folder or to the package's root."""
        path = unquote(reference.split("#", 1)[0].split("?", 1)[0]).replace("\\", "/")
        if path.startswith("/"):
            if not package_absolute or path.startswith("//"):
                return False
            candidates = [path.lstrip("/")]
        else:
            base = posixpath.dirname(part)
            if base.endswith("_rels"):  # a relationship is relative to its source part's folder
                base = posixpath.dirname(base)
            candidates = [posixpath.join(base, path), path]
        for candidate in candidates:
            normal = posixpath.normpath(candidate)
            if normal.startswith("../") or normal == "..":
                continue
            if normal in self.names or normal.rstrip("/") in self.folders:
                return True
        return False


def _check_part(archive: zipfile.ZipFile, info: zipfile.ZipInfo, budget: Budget,
                package: _Package, where: str, depth: int) -> None:
    name = where + info.filename
    with archive.open(info) as member:
        found = _probe(member, budget, name)
    if found.kind in (Kind.IMAGE, Kind.BINARY):
        return
    if info.filename == "mimetype" and found.kind is Kind.TEXT:
        return
    with archive.open(info) as member:
        _check_stream(member, found, budget, package, info.filename, name, depth)


def _check_stream(stream, found: Probe, budget: Budget, package: _Package, part: str,
                  name: str, depth: int) -> None:
    if found.kind is Kind.MARKUP:
        _check_markup(stream, found, budget, package, part, name)
    elif found.kind is Kind.RTF:
        check_rtf(_read_all(stream, budget, name), name)
    elif found.kind is Kind.OLE:
        check_ole_bytes(_read_all(stream, budget, name), name)
    elif found.kind is Kind.ZIP:
        _check_nested(_read_all(stream, budget, name), budget, name, depth)
    elif found.kind is Kind.GZIP:
        _check_gzip(stream, budget, package, part, name, depth)
    elif found.kind is Kind.TEXT:
        raise refuse(f"the part {name!r} is text that is neither XML nor RTF (HTML or MHT is "
                     "read by the converter with its links)")


def _probe(stream, budget: Budget, name: str) -> Probe:
    def chunks():
        while data := stream.read(CHUNK):
            budget.take(len(data), name)
            yield data

    try:
        return probe(chunks())
    except UnreadableMarkup as error:
        raise refuse(f"the part {name!r}, which doclake cannot read: {error}") from None


def _read_all(stream, budget: Budget, name: str) -> bytes:
    out = io.BytesIO()
    while data := stream.read(CHUNK):
        budget.take(len(data), name)
        out.write(data)
    return out.getvalue()


def _check_nested(data: bytes, budget: Budget, name: str, depth: int) -> None:
    if depth + 1 > MAX_NESTING:
        raise refuse(f"a package nested more than {MAX_NESTING} deep at {name!r}")
    try:
        inner = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError):
        return  # not a package anything reads as one
    with inner:
        _check_archive(inner, budget, None, name + "!/", depth + 1)


def _check_gzip(stream, budget: Budget, package: _Package, part: str, name: str,
                depth: int) -> None:
    try:
        with gzip.GzipFile(fileobj=stream) as inflated:
            found = _probe(inflated, budget, name)
        stream.seek(0)
        with gzip.GzipFile(fileobj=stream) as inflated:
            if found.kind not in (Kind.IMAGE, Kind.BINARY):
                _check_stream(inflated, found, budget, package, part, name, depth + 1)
    except (OSError, EOFError):
        return  # not gzip after all: nothing reads it as a picture


# What a part must hold (in its decoded text, any case) for any reader to find a reference in it:
# a reference's attribute name, a relationship, a field, CSS, a DTD, a processing instruction or
# a character reference (``u&#114;l(``). Names are never escaped in XML, so a part holding none
# refers to nothing, however a parser reads it; it is decoded (in C) and searched, not parsed.
_MARKERS = ("href", "src", "base", "archive", "background", "poster", "url", "import",
            "relationship", "instrtext", "fldsimple", "dde-", "<!", "stylesheet", "target", "&#")


def _check_markup(stream, found: Probe, budget: Budget, package: _Package, part: str,
                  name: str) -> None:
    """Search the decoded part for a marker; from the first one, parse it from the start with
    every reference checked (a part that is then not well-formed XML is refused)."""
    tail = ""
    for text in decoded_chunks(_counted(stream, budget, name), found, CHUNK):
        window = tail + text.lower()
        if any(marker in window for marker in _MARKERS):
            break
        tail = window[-16:]
    else:
        return
    stream.seek(0)
    target = _References(package, part, name)
    parser = XMLParser(target=target)
    try:
        for text in decoded_chunks(stream.read, found, CHUNK):
            parser.feed(text)
        parser.close()
    except (LinksOutside, LimitExceeded):
        raise
    except UnreadableMarkup as error:
        raise refuse(f"the part {name!r}, which doclake cannot read: {error}") from None
    except DefusedXmlException as error:
        raise refuse(f"a declaration in {name!r} ({type(error).__name__}: {error})") from None
    except Exception as error:  # expat's ParseError and kin: markup no parser should guess at
        raise refuse(f"the part {name!r}, which is not well-formed XML ({error})") from None
    for field in target.fields:
        check_field("".join(field), name)


def _counted(stream, budget: Budget, name: str):
    def read(size: int) -> bytes:
        data = stream.read(size)
        budget.take(len(data), name)
        return data

    return read


class _References:
    """The parser's target: checks every reference as the elements arrive; builds no tree."""

    def __init__(self, package: _Package, part: str, name: str):
        self.package, self.part, self.name = package, part, name
        self.relationships = part.endswith(".rels")
        self.fields: list[list[str]] = [[]]
        self.text: list[str] | None = None  # collecting: an instrText, or a style sheet
        self.collecting = ""

    def start(self, tag: str, attributes: dict[str, str]) -> None:
        local = tag.rpartition("}")[2]
        if local in _ODF_DDE:
            raise refuse(f"a DDE link ({local}) in {self.name}")
        if local == "Relationship" and self.relationships:
            self._relationship(attributes)
        elif local == "fldChar" and _attribute(attributes, "fldCharType") == "begin":
            self.fields.append([])
        elif local == "instrText":
            self.text, self.collecting = self.fields[-1], local
        elif local == "style":
            self.text, self.collecting = [], local
        elif local == "fldSimple":
            check_field(_attribute(attributes, "instr"), self.name)
        anchor = local in _ANCHORS
        for key, value in attributes.items():
            attribute = key.rpartition("}")[2].lower()
            if attribute in _REFERENCE_NAMES and not anchor and not (
                    self.relationships and attribute == "target"):
                self._reference(value, f"{local} {attribute}")
            if "url" in value.lower() or "@import" in value.lower():
                self._css(value, f"{local} {attribute}")

    def _relationship(self, attributes: dict[str, str]) -> None:
        target = attributes.get("Target", "")
        kind = (attributes.get("Type") or "").rsplit("/", 1)[-1]
        if (attributes.get("TargetMode") or "").lower() == "external":
            if kind not in _EXTERNAL_ALLOWED:
                raise refuse(f"an external {kind or 'relationship'} {target!r} in {self.name}")
            return
        self._reference(target, f"a {kind or 'relationship'} target", package_absolute=True)

    def _reference(self, value: str, what: str, *, package_absolute: bool = False) -> None:
        reference = value.strip()
        if not reference or reference.startswith("#") or _DATA_RASTER.match(reference):
            return
        if _PACKAGE_SCHEME.match(reference):
            reference = _PACKAGE_SCHEME.sub("", reference)
        elif _SCHEME.match(reference):
            raise refuse(f"{what} {reference!r} in {self.name}")
        if not self.package.holds(reference, self.part, package_absolute=package_absolute):
            raise refuse(f"{what} {reference!r} in {self.name}, which names no part of the "
                         "package")

    def _css(self, value: str, what: str) -> None:
        for found in _CSS_URL.finditer(value):
            self._reference(found.group(2) or found.group(4) or "", f"{what} url()")

    def data(self, text: str) -> None:
        if self.text is not None:
            self.text.append(text)

    def end(self, tag: str) -> None:
        local = tag.rpartition("}")[2]
        if local == self.collecting and self.text is not None:
            if local == "style":
                self._css("".join(self.text), "a style sheet")
            self.text, self.collecting = None, ""

    def pi(self, target: str, data: str) -> None:
        if target.lower() == "xml-stylesheet":
            for found in _STYLESHEET_HREF.finditer(data or ""):
                self._reference(found.group(2), "an xml-stylesheet")

    def doctype(self, name: str, public_id: str | None, system_id: str | None) -> None:
        if system_id:
            raise refuse(f"a DOCTYPE naming {system_id!r} in {self.name} (a definition from "
                         "outside the document)")

    def close(self) -> None:
        return None


def _attribute(attributes: dict[str, str], local_name: str) -> str:
    return next((v for k, v in attributes.items() if k.rpartition("}")[2] == local_name), "")
