"""Headless Chromium for the dashboard's browser checks: Debian's ``chromium`` (``.ci/run``
installs it), run once per page with ``--dump-dom`` and a small script injected into the page,
whose findings come back as JSON inside the dumped DOM."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (apt-get install chromium; .ci/run does)")

CSP = re.compile(r"<meta http-equiv=\"Content-Security-Policy\"[^>]*>")


def chromium(page: Path, profile: Path, *extra: str, width: int = 1400) -> str:
    """The DOM of ``page`` after its scripts ran, in a window ``width`` CSS pixels wide."""
    done = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
         "--disable-background-networking", "--disable-component-update", "--no-first-run",
         "--hide-scrollbars", f"--window-size={width},1000", f"--user-data-dir={profile}",
         *extra, "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=120, check=True)
    return done.stdout


def run_script(page: str, script: str, folder: Path, name: str, width: int = 1400) -> object:
    """Run ``script`` (JavaScript whose last act is ``report(value)``) at the end of ``page``
    (its Content-Security-Policy removed so the script may run) and return ``value``."""
    checked = folder / f"{name}.html"
    reporter = ("<script>function report(v) { document.body.insertAdjacentHTML('beforeend', "
                "'<pre id=\"check\">' + JSON.stringify(v).replace(/&/g, '&amp;')"
                ".replace(/</g, '&lt;') + '</pre>'); }\n" + script + "</script>")
    checked.write_text(CSP.sub("", page).replace("</body>", reporter + "</body>"))
    found = re.findall(r'<pre id="check">(.*?)</pre>',
                       chromium(checked, folder / f"{name}-profile", width=width), re.S)
    assert found, "the injected script reported nothing"
    return json.loads(html.unescape(found[-1]))


CUT_TEXT = """
const slack = 0.5;  // CSS pixels: sub-pixel rounding of the text's box, not a cut glyph
const out = {viewport: window.innerWidth, texts: 0, cut: []};
for (const chart of document.querySelectorAll('.chart')) {
  const svg = chart.querySelector('svg'); if (!svg) continue;
  const box = svg.getBoundingClientRect();
  for (const text of svg.querySelectorAll('text')) {
    if (!text.textContent.trim()) continue;
    out.texts += 1;
    const t = text.getBoundingClientRect();
    if (t.left < box.left - slack || t.right > box.right + slack
        || t.top < box.top - slack || t.bottom > box.bottom + slack) {
      out.cut.push({query: chart.dataset.query, text: text.textContent,
                    text_box: [t.left, t.top, t.right, t.bottom].map(Math.round),
                    svg_box: [box.left, box.top, box.right, box.bottom].map(Math.round)});
    }
  }
}
report(out);
"""
"""Every non-empty ``<text>`` of every chart's SVG, measured as Chromium drew it, must lie inside
the SVG's own box: the inline SVG clips what runs past it, so a label outside is a cut label."""


def cut_texts(page: str, folder: Path, width: int = 1400) -> dict:
    """``{"viewport", "texts", "cut": [...]}`` for ``page`` drawn ``width`` pixels wide."""
    return run_script(page, CUT_TEXT, folder, "cut-text", width=width)
