"""A data room of documents that reach outside themselves, one file per way of doing it.

Each file names content in ``outside`` (a text file and a picture, both carrying a marker) by an
absolute ``file:`` URL or path: if any of it is fetched, the marker ends up in the PDF, the
stored text or the search index. ``make_room`` returns the marker strings to look for.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

from tests.support.officegen import make_docx

TEXT_MARKER = "OUTSIDE-SECRET-4417"
PICTURE_MARKER = "PRIVATE 5521"

_W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_PKG_RELS = "http://schemas.openxmlformats.org/package/2006/relationships"


def outside_files(folder: Path) -> tuple[Path, Path]:
    """``secret.txt`` and ``secret.png`` in ``folder``, each carrying its marker."""
    from PIL import Image, ImageDraw, ImageFont

    folder.mkdir(parents=True, exist_ok=True)
    text = folder / "secret.txt"
    text.write_text(f"{TEXT_MARKER}\n")
    image = Image.new("RGB", (900, 200), "white")
    try:
        font = ImageFont.load_default(size=64)
    except TypeError:  # Pillow before 10.1
        font = ImageFont.load_default()
    ImageDraw.Draw(image).text((20, 60), PICTURE_MARKER, fill="black", font=font)
    picture = folder / "secret.png"
    image.save(picture)
    return text, picture


# --- Word and PowerPoint packages ---------------------------------------------------------------


def _docx(path: Path, body: str, rels: str = "") -> Path:
    """A docx whose body XML is ``body`` and whose document relationships are ``rels``."""
    make_docx(path, ["placeholder"])
    document = (f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
                f'<w:document xmlns:w="{_W}" xmlns:r="{_R}" '
                'xmlns:v="urn:schemas-microsoft-com:vml" '
                'xmlns:o="urn:schemas-microsoft-com:office:office" '
                'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" '
                'xmlns:pic="http://schemas.openxmlformats.org/drawingml/2006/picture" '
                'xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing">'
                f'<w:body><w:p><w:r><w:t>A memo.</w:t></w:r></w:p>{body}</w:body></w:document>')
    with zipfile.ZipFile(path) as archive:
        members = {n: archive.read(n) for n in archive.namelist()}
    members["word/document.xml"] = document.encode()
    members["word/_rels/document.xml.rels"] = (
        f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        f'<Relationships xmlns="{_PKG_RELS}">{rels}</Relationships>').encode()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def _field(instruction_runs: list[str]) -> str:
    """A complex field whose instruction is split over several runs."""
    runs = "".join(f'<w:r><w:instrText xml:space="preserve">{part}</w:instrText></w:r>'
                   for part in instruction_runs)
    return (f'<w:p><w:r><w:fldChar w:fldCharType="begin"/></w:r>{runs}'
            '<w:r><w:fldChar w:fldCharType="separate"/></w:r><w:r><w:t>cached</w:t></w:r>'
            '<w:r><w:fldChar w:fldCharType="end"/></w:r></w:p>')


def _blip_drawing(attribute: str) -> str:
    return ('<w:p><w:r><w:drawing><wp:inline><wp:extent cx="3000000" cy="700000"/>'
            '<wp:docPr id="1" name="p"/><a:graphic><a:graphicData uri="http://schemas.'
            'openxmlformats.org/drawingml/2006/picture"><pic:pic><pic:nvPicPr><pic:cNvPr id="1" '
            f'name="p"/><pic:cNvPicPr/></pic:nvPicPr><pic:blipFill><a:blip {attribute}/>'
            '<a:stretch><a:fillRect/></a:stretch></pic:blipFill><pic:spPr><a:xfrm><a:off x="0" '
            'y="0"/><a:ext cx="3000000" cy="700000"/></a:xfrm><a:prstGeom prst="rect"/>'
            '</pic:spPr></pic:pic></a:graphicData></a:graphic></wp:inline></w:drawing></w:r></w:p>')


def _external(rel_id: str, kind: str, target: str) -> str:
    return (f'<Relationship Id="{rel_id}" Type="{_REL}/{kind}" Target="{target}" '
            'TargetMode="External"/>')


def _pptx(path: Path, rels: str, shape: str) -> Path:
    p = "http://schemas.openxmlformats.org/presentationml/2006/main"
    types = ('<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.'
             'org/package/2006/content-types"><Default Extension="rels" ContentType="application/'
             'vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" '
             'ContentType="application/xml"/><Override PartName="/ppt/presentation.xml" '
             'ContentType="application/vnd.openxmlformats-officedocument.presentationml.'
             'presentation.main+xml"/><Override PartName="/ppt/slides/slide1.xml" ContentType='
             '"application/vnd.openxmlformats-officedocument.presentationml.slide+xml"/></Types>')
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", types)
        archive.writestr("_rels/.rels", f'<Relationships xmlns="{_PKG_RELS}"><Relationship '
                         f'Id="rId1" Type="{_REL}/officeDocument" Target="ppt/presentation.xml"/>'
                         '</Relationships>')
        archive.writestr("ppt/presentation.xml", f'<p:presentation xmlns:p="{p}" '
                         f'xmlns:r="{_R}"><p:sldIdLst><p:sldId id="256" r:id="rId2"/>'
                         '</p:sldIdLst><p:sldSz cx="9144000" cy="6858000"/></p:presentation>')
        archive.writestr("ppt/_rels/presentation.xml.rels", f'<Relationships xmlns="{_PKG_RELS}">'
                         f'<Relationship Id="rId2" Type="{_REL}/slide" Target="slides/slide1.xml"/>'
                         '</Relationships>')
        archive.writestr("ppt/slides/slide1.xml", f'<p:sld xmlns:p="{p}" xmlns:r="{_R}" '
                         'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main">'
                         f'<p:cSld><p:spTree>{shape}</p:spTree></p:cSld></p:sld>')
        archive.writestr("ppt/slides/_rels/slide1.xml.rels",
                         f'<Relationships xmlns="{_PKG_RELS}">{rels}</Relationships>')
    return path


# --- OpenDocument -------------------------------------------------------------------------------

_ODF_NS = ('xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
           'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
           'xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" '
           'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
           'xmlns:presentation="urn:oasis:names:tc:opendocument:xmlns:presentation:1.0" '
           'xmlns:xlink="http://www.w3.org/1999/xlink" '
           'xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0"')


def _odf(path: Path, mimetype: str, body: str) -> Path:
    kind = mimetype.rsplit(".", 1)[-1]  # text, presentation, spreadsheet
    content = (f'<?xml version="1.0" encoding="UTF-8"?>\n<office:document-content {_ODF_NS} '
               f'office:version="1.2"><office:body><office:{kind}>{body}</office:{kind}>'
               '</office:body></office:document-content>')
    manifest = ('<?xml version="1.0" encoding="UTF-8"?>\n<manifest:manifest xmlns:manifest='
                '"urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.2">'
                f'<manifest:file-entry manifest:full-path="/" manifest:media-type="{mimetype}"/>'
                '<manifest:file-entry manifest:full-path="content.xml" '
                'manifest:media-type="text/xml"/></manifest:manifest>')
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(zipfile.ZipInfo("mimetype"), mimetype)
        archive.writestr("META-INF/manifest.xml", manifest, zipfile.ZIP_DEFLATED)
        archive.writestr("content.xml", content, zipfile.ZIP_DEFLATED)
    return path


def _frame(inner: str) -> str:
    return ('<draw:frame draw:name="f1" text:anchor-type="as-char" svg:width="4in" '
            f'svg:height="1in">{inner}</draw:frame>')


def _xlsx_with_external_link(path: Path, text_url: str, picture_url: str) -> Path:
    """A workbook with one value, a formula on an external workbook, an external-link part and
    a linked picture relationship."""
    import openpyxl

    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet["A1"] = "inside"
    sheet["A2"] = "='file:///outside/[secret.xlsx]Sheet1'!A1"
    workbook.save(path)
    with zipfile.ZipFile(path) as archive:
        members = {n: archive.read(n) for n in archive.namelist()}
    members["xl/externalLinks/externalLink1.xml"] = (
        '<externalLink xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" '
        f'xmlns:r="{_R}"><externalBook r:id="rId1"/></externalLink>').encode()
    members["xl/externalLinks/_rels/externalLink1.xml.rels"] = (
        f'<Relationships xmlns="{_PKG_RELS}">'
        + _external("rId1", "externalLinkPath", text_url)
        + _external("rId2", "image", picture_url) + "</Relationships>").encode()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


# --- the room ------------------------------------------------------------------------------------


def make_room(room: Path, outside: Path) -> dict[str, str]:
    """Write every linking document into ``room``; returns file name -> what it does."""
    text, picture = outside_files(outside)
    text_url, picture_url = text.as_uri(), picture.as_uri()
    room.mkdir(parents=True, exist_ok=True)
    made: dict[str, str] = {}

    def rtf(name: str, what: str, body: str) -> None:
        (room / name).write_text("{\\rtf1\\ansi " + body + "\\par}")
        made[name] = what

    rtf("include-picture.rtf", "RTF INCLUDEPICTURE field",
        f'{{\\field{{\\*\\fldinst INCLUDEPICTURE "{picture}" \\\\d}}{{\\fldrslt }}}}')
    rtf("include-text.rtf", "RTF INCLUDETEXT field",
        f'{{\\field{{\\*\\fldinst INCLUDETEXT "{text}"}}{{\\fldrslt }}}}')
    rtf("split-field.rtf", "RTF field keyword split by groups and escapes",
        f'{{\\field{{\\*\\fldinst {{\\rtlch IN\\\'43LUDE}}{{TEXT}} "{text}"}}{{\\fldrslt }}}}')
    rtf("dde.rtf", "RTF DDEAUTO field",
        '{\\field{\\*\\fldinst DDEAUTO cmd "/c calc" ""}{\\fldrslt }}')
    rtf("objlink.rtf", "RTF linked OLE object",
        f'{{\\object\\objlink\\objw100\\objh100{{\\*\\objclass Package}}'
        f'{{\\*\\objdata 0105}}{{\\result {text}}}}}')

    def docx(name: str, what: str, body: str, rels: str = "") -> None:
        _docx(room / name, body, rels)
        made[name] = what

    docx("linked-picture.docx", "DOCX picture by an external relationship",
         _blip_drawing('r:link="rIdX"'), _external("rIdX", "image", picture_url))
    docx("include-picture.docx", "DOCX INCLUDEPICTURE split over runs",
         _field(["INCLUDEPIC", f'TURE "{picture}" \\d']))
    docx("include-text.docx", "DOCX INCLUDETEXT simple field",
         f'<w:p><w:fldSimple w:instr=" INCLUDETEXT &quot;{text}&quot; "><w:r><w:t>x</w:t>'
         '</w:r></w:fldSimple></w:p>')
    docx("link-field.docx", "DOCX LINK field",
         _field([f'LINK Word.Document.12 "{text}" "" \\a \\t']))
    docx("ddeauto.docx", "DOCX DDEAUTO field", _field(['DDEAUTO c:\\\\windows\\\\cmd.exe "/c x"']))
    docx("vml-picture.docx", "DOCX VML picture by path",
         f'<w:p><w:r><w:pict><v:shape style="width:300pt;height:60pt"><v:imagedata '
         f'src="{picture_url}" o:href="{picture_url}"/></v:shape></w:pict></w:r></w:p>')
    docx("linked-ole.docx", "DOCX linked OLE object",
         '<w:p><w:r><w:object><o:OLEObject Type="Link" ProgID="Word.Document.12" '
         'r:id="rIdO" UpdateMode="Always"/></w:object></w:r></w:p>',
         _external("rIdO", "oleObject", text_url))
    docx("subdocument.docx", "DOCX subdocument",
         '<w:p><w:subDoc r:id="rIdS"/></w:p>', _external("rIdS", "subDocument", text_url))

    _pptx(room / "linked-picture.pptx", _external("rIdP", "image", picture_url),
          '<p:pic><p:nvPicPr><p:cNvPr id="2" name="p"/><p:cNvPicPr/><p:nvPr/></p:nvPicPr>'
          '<p:blipFill><a:blip r:link="rIdP"/></p:blipFill><p:spPr><a:xfrm><a:off x="0" y="0"/>'
          '<a:ext cx="6000000" cy="1300000"/></a:xfrm></p:spPr></p:pic>')
    made["linked-picture.pptx"] = "PPTX picture by an external relationship"

    odt = "application/vnd.oasis.opendocument.text"
    _odf(room / "linked-picture.odt", odt, "<text:p>A memo" + _frame(
        f'<draw:image xlink:href="{picture_url}" xlink:type="simple" xlink:show="embed" '
        'xlink:actuate="onLoad"/>') + "</text:p>")
    made["linked-picture.odt"] = "ODT linked image"
    _odf(room / "climbing-picture.odt", odt, "<text:p>A memo" + _frame(
        '<draw:image xlink:href="../../../../../../../../..' + str(picture) +
        '" xlink:type="simple" xlink:show="embed" xlink:actuate="onLoad"/>') + "</text:p>")
    made["climbing-picture.odt"] = "ODT image by a relative path climbing out"
    _odf(room / "section.odt", odt,
         '<text:section text:name="s1"><text:section-source '
         f'xlink:href="{text_url}" xlink:type="simple" text:filter-name="Text"/>'
         '<text:p>cached</text:p></text:section>')
    made["section.odt"] = "ODT linked section"
    _odf(room / "linked-ole.odt", odt, "<text:p>A memo" + _frame(
        f'<draw:object xlink:href="{text_url}" xlink:type="simple" xlink:show="embed" '
        'xlink:actuate="onLoad"/>') + "</text:p>")
    made["linked-ole.odt"] = "ODT linked object"
    _odf(room / "dde.odt", odt,
         '<text:dde-connection-decls><text:dde-connection-decl office:name="d" '
         'office:dde-application="soffice" office:dde-topic="' + str(text) +
         '" office:dde-item="x"/></text:dde-connection-decls>'
         '<text:p><text:dde-connection text:connection-name="d">cached</text:dde-connection>'
         '</text:p>')
    made["dde.odt"] = "ODT DDE connection"
    _odf(room / "linked-picture.odp", "application/vnd.oasis.opendocument.presentation",
         '<draw:page draw:name="p1">' + _frame(
             f'<draw:image xlink:href="{picture_url}" xlink:type="simple" xlink:show="embed" '
             'xlink:actuate="onLoad"/>').replace('text:anchor-type="as-char" ', '') +
         "</draw:page>")
    made["linked-picture.odp"] = "ODP linked image"

    _odf(room / "linked.ods", "application/vnd.oasis.opendocument.spreadsheet",
         '<table:table table:name="Sheet1"><table:table-source xlink:href="' + text_url +
         '" xlink:type="simple" table:table-name="Sheet1"/><table:table-row><table:table-cell '
         'office:value-type="string"><text:p>inside</text:p></table:table-cell>'
         '<table:table-cell>' + _frame(f'<draw:image xlink:href="{picture_url}" '
                                      'xlink:type="simple"/>').replace(
             'text:anchor-type="as-char" ', '') + '</table:table-cell></table:table-row>'
         '</table:table>')
    made["linked.ods"] = "ODS linked table and image (read by calamine, which follows nothing)"
    _xlsx_with_external_link(room / "external.xlsx", text_url, picture_url)
    made["external.xlsx"] = "XLSX external workbook link and linked picture (read by calamine)"

    (room / "page.html").write_text(
        f'<html><head><link rel="stylesheet" href="{text_url}"><style>@import "{text_url}";'
        f'</style></head><body><p>A page.</p><img src="{picture_url}" alt="logo">'
        f'<iframe src="{text_url}"></iframe><object data="{text_url}"></object></body></html>')
    made["page.html"] = "HTML external image, stylesheet, frame and object"
    (room / "message.eml").write_text(
        "From: a@example.com\nTo: b@example.com\nSubject: hello\nMIME-Version: 1.0\n"
        "Content-Type: text/html; charset=utf-8\n\n"
        f'<html><body><p>A message.</p><img src="{picture_url}">'
        f'<link rel="stylesheet" href="{text_url}"></body></html>\n')
    made["message.eml"] = "EML with an HTML body linking an image and a stylesheet"
    return made
