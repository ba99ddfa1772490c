"""No chart label is cut at the right edge of its SVG (issue 26, finding 8: the cost chart's
"output_tokens" legend was clipped in Chromium).

vl-convert sizes each SVG by its own measure of the text; the browser draws ``sans-serif`` with
the font it has. Here every text element of every chart is measured with DejaVu Sans (what
fontconfig gives Chromium for sans-serif on this Linux) and must end inside its SVG.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from typer.testing import CliRunner

from infra.cli.main import app

FONT = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
FAST = {"DOCLAKE_EVENT_FLUSH_S": "0.02", "DOCLAKE_POLL_INTERVAL_S": "0.2",
        "DOCLAKE_CPU_WORKERS": "1", "DOCLAKE_SIMULATED_LATENCY_SCALE": "0.05"}
_TRANSLATE = re.compile(r"translate\(([-\d.]+),\s*([-\d.]+)\)")


def _right_edges(svg: ET.Element, measure):
    """(text, rightmost x) of every text element, group translations summed."""
    def walk(node, dx):
        moved = _TRANSLATE.search(node.get("transform", ""))
        x = dx + (float(moved.group(1)) if moved else 0.0) + float(node.get("x", 0) or 0)
        if node.tag.endswith("text") and (node.text or "").strip():
            size = float(node.get("font-size", "10px").removesuffix("px"))
            width = measure(node.text, size)
            anchor = node.get("text-anchor", "start")
            yield node.text, x + (width if anchor == "start" else width / 2 if anchor == "middle"
                                  else 0)
        for child in node:
            yield from walk(child, x if node.tag.endswith(("g", "text")) else dx)
    yield from walk(svg, 0.0)


@pytest.mark.skipif(not FONT.exists(), reason="DejaVu Sans is not installed")
def test_no_chart_text_runs_past_its_svg(tmp_path, pdf_factory):
    from PIL import ImageFont

    pdf_factory("a.pdf", 2)
    pdf_factory("b.pdf", 1)
    home = str(tmp_path / "home")
    runner = CliRunner()
    assert runner.invoke(app, ["run", str(tmp_path / "docs"), "--home", home, "--reader",
                               "simulated"], env=FAST).exit_code == 0
    out = tmp_path / "d.html"
    assert runner.invoke(app, ["dashboard", "--home", home, "--out", str(out)]).exit_code == 0
    page = out.read_text()
    fonts = {}

    def measure(text: str, size: float) -> float:
        font = fonts.setdefault(size, ImageFont.truetype(str(FONT), round(size * 4)))
        return font.getlength(text) / 4

    svgs = re.findall(r'<div class="chart" data-query="(\w+)">(<svg.*?</svg>)', page, re.S)
    assert "cost_by_model" in {name for name, _ in svgs}
    checked = 0
    for name, text in svgs:
        svg = ET.fromstring(text)
        width = float(svg.get("width"))
        for label, right in _right_edges(svg, measure):
            assert right <= width, (name, label, right, width)
            checked += 1
    assert checked > 50
    assert "output_tokens" in page
