"""Plain text, Markdown, HTML and e-mail files read as documents (issue 26, finding 9).

Driven through `doclake run` over a folder of such files; each must succeed with one page whose
Markdown holds the words a reader sees (not markup, scripts or transfer encodings), and be found
by `doclake search`.
"""

from __future__ import annotations

import json
from email.message import EmailMessage

from typer.testing import CliRunner

from extract.formats.sniff import Format, sniff_file
from infra.cli.main import app

runner = CliRunner()
FAST = {"DOCLAKE_EVENT_FLUSH_S": "0.02", "DOCLAKE_POLL_INTERVAL_S": "0.2", "DOCLAKE_CPU_WORKERS": "1"}


def invoke(*args: str):
    return runner.invoke(app, list(args), env=FAST, catch_exceptions=False)


HTML = """<!DOCTYPE html><html><head><title>Board minutes</title>
<style>p { color: red }</style><script>var secret = "walrus";</script></head>
<body><h2>Resolutions</h2><p>The board approved the <b>mutual nondisclosure</b> agreement.</p>
<ul><li>first item</li><li>second item</li></ul></body></html>"""


def _email() -> bytes:
    message = EmailMessage()
    message["From"] = "Ann Legal <ann@example.com>"
    message["To"] = "bob@example.com"
    message["Subject"] = "Signed NDA attached"
    message["Date"] = "Tue, 01 Dec 2026 09:00:00 +0000"
    message.set_content("Dear Bob,\nplease find the countersigned confidentiality agreement.\n"
                        "Grüße, Ann\n", cte="quoted-printable")
    message.add_alternative("<p>Dear Bob, please find the <i>countersigned</i> agreement.</p>",
                            subtype="html")
    message.add_attachment(b"%PDF-1.4 fake", maintype="application", subtype="pdf",
                           filename="nda-signed.pdf")
    return message.as_bytes()


def test_text_markdown_html_and_email_files_are_read(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "notes.txt").write_text("Call with counsel about the governing law clause.\n")
    (docs / "README.md").write_text("# Data room\n\n- NDA drafts\n- **term sheet** for review\n")
    (docs / "minutes.html").write_text(HTML)
    (docs / "message.eml").write_bytes(_email())
    assert [sniff_file(docs / n).format for n in ("notes.txt", "README.md", "minutes.html",
                                                   "message.eml")] == [
        Format.TEXT, Format.TEXT, Format.HTML, Format.EMAIL]
    home = str(tmp_path / "home")
    result = invoke("run", str(docs), "--home", home, "--fields", "none")
    assert result.exit_code == 0, result.output
    jobs = json.loads(invoke("sql", "SELECT d.source_name, j.status, j.pages, d.detected_format "
                             "FROM jobs j JOIN documents d USING (document_id) ORDER BY 1",
                             "--home", home, "--format", "json").output)
    assert [(j["source_name"], j["status"], j["pages"], j["detected_format"]) for j in jobs] == [
        ("README.md", "succeeded", 1, "text"), ("message.eml", "succeeded", 1, "email"),
        ("minutes.html", "succeeded", 1, "html"), ("notes.txt", "succeeded", 1, "text")]

    pages = {p.parent.parent.name: p.read_text() for p in (tmp_path / "home" / "objects" / "pages")
             .glob("*/*/*.md")}
    by_text = "\n".join(pages.values())
    assert "## Resolutions" in by_text and "**mutual nondisclosure**" in by_text
    assert "- first item" in by_text and "# Board minutes" in by_text
    assert "walrus" not in by_text and "color: red" not in by_text and "<b>" not in by_text
    assert "**Subject:** Signed NDA attached" in by_text and "Grüße, Ann" in by_text
    assert "=C3=BC" not in by_text and "nda-signed.pdf" in by_text and "%PDF" not in by_text
    assert "# Data room" in by_text and "governing law clause" in by_text

    hits = json.loads(invoke("search", "countersigned confidentiality", "--home", home,
                             "--format", "json").output)
    assert [h["document"] for h in hits] == ["message.eml"]


def test_text_under_a_binary_name_is_still_refused(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "budget.xls").write_text("Attachment budget.xls not found!\n")
    home = str(tmp_path / "home")
    assert invoke("run", str(docs), "--home", home).exit_code == 0
    rows = json.loads(invoke("sql", "SELECT status, failure_reason FROM jobs", "--home", home,
                             "--format", "json").output)
    assert rows == [{"status": "failed", "failure_reason": "unsupported_format"}]
