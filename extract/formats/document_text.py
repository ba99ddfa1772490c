"""Plain text, Markdown, HTML and e-mail files as one page of Markdown each.

Data rooms hold notes, exported web pages and saved messages beside the PDFs. Each is read whole
into one page (a text file has no pages of its own to keep; the page limit on characters still
applies through ``SheetLimits.max_chars``):

- **plain text and Markdown**: the text as written (Markdown is already the page format), decoded
  like a CSV file (byte-order mark, strict UTF-8, else charset-normalizer);
- **HTML**: BeautifulSoup parses it (any HTML a browser would take), scripts, styles and other
  non-content elements are dropped, and markdownify writes the rest as Markdown (headings,
  lists, tables, links);
- **e-mail** (RFC 5322, ``.eml``): the standard library's ``email`` package with
  ``policy.default`` reads the headers and picks the body (plain text preferred, else the HTML
  part through the HTML route); the page starts with From, To, Cc, Date and Subject, and names
  the attachments, which are not read.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from extract.errors import CorruptDocument, EmptyDocument, LimitExceeded
from extract.formats.limits import memory_limit
from extract.formats.spreadsheet import SheetLimits, SheetText
from extract.formats.text import decode_text

__all__ = ["html_to_markdown", "email_to_markdown", "read_text_document"]

# Elements whose text is not part of what a reader sees.
_INVISIBLE = ("script", "style", "noscript", "template", "head", "svg", "iframe", "object")
_HEADERS = ("From", "To", "Cc", "Date", "Subject")


def html_to_markdown(markup: str) -> str:
    """The visible content of an HTML document as Markdown."""
    from bs4 import BeautifulSoup
    from markdownify import MarkdownConverter

    soup = BeautifulSoup(markup, "html.parser")
    title = soup.title.get_text(" ", strip=True) if soup.title else ""
    for element in soup(_INVISIBLE):
        element.decompose()
    body = MarkdownConverter(heading_style="ATX", bullets="-").convert_soup(soup)
    body = re.sub(r"\n{3,}", "\n\n", body).strip()
    if title and title not in body[:len(title) + 10]:
        body = f"# {title}\n\n{body}"
    return body


def email_to_markdown(data: bytes) -> str:
    """A message's headers, body and attachment names as Markdown."""
    from email import message_from_bytes, policy

    message = message_from_bytes(data, policy=policy.default)
    lines = [f"**{name}:** {message[name]}" for name in _HEADERS if message[name]]
    body_part = message.get_body(preferencelist=("plain", "html"))
    body = ""
    if body_part is not None:
        try:
            content = body_part.get_content()
        except (LookupError, ValueError) as error:  # an unknown charset, a broken encoding
            raise CorruptDocument(f"the e-mail body cannot be decoded: {error}") from None
        body = html_to_markdown(content) if body_part.get_content_subtype() == "html" \
            else content.strip()
    attachments = [part.get_filename() or part.get_content_type()
                   for part in message.iter_attachments()]
    text = "\n".join(lines)
    if body:
        text += f"\n\n{body}"
    if attachments:
        text += "\n\n**Attachments (not read):** " + ", ".join(attachments)
    return text.strip()


def read_text_document(path: Path, kind: str, limits: SheetLimits,
                       encoding_hint: str | None = None) -> SheetText:
    """One page of Markdown from a ``text``, ``html`` or ``email`` file (``kind`` as sniffed)."""
    started = time.perf_counter()
    with memory_limit(limits.max_memory_bytes, f"reading the {kind} file"):
        data = path.read_bytes()
        if kind == "email":
            text = email_to_markdown(data)
        else:
            decoded, _ = decode_text(data, encoding_hint)
            if "\x00" in decoded[:65536]:
                raise CorruptDocument(f"the {kind} file holds NUL characters (binary content)")
            text = html_to_markdown(decoded) if kind == "html" else decoded.strip()
    if not text.strip():
        raise EmptyDocument(f"the {kind} file holds no text", error_type="no_content")
    if len(text) > limits.max_chars:
        raise LimitExceeded(f"the {kind} file has {len(text)} characters of text, over the limit "
                            f"of {limits.max_chars}", error_type="text_too_long")
    lines = [line for line in text.splitlines() if line.strip()]
    return SheetText(1, text, len(lines), len(lines), (time.perf_counter() - started) * 1000)
