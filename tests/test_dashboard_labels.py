"""No chart text is cut: in headless Chromium, 1400 px wide, every ``<text>`` of every chart's
SVG lies inside that SVG's box (an inline SVG clips what runs past its edge).

The lake has the long labels a real one has: a simulated model's full name as a reader and a
cost row, ``split: unsupported_format``, ``effective_date``, UTC times on rotated axes. Skipped
with a reason where chromium is absent (``.ci/run`` installs it)."""

from __future__ import annotations

import re

from support.chromium import cut_texts, needs_chromium
from support.dashboard_lake import write_busy_lake

from dashboards.report import render

LONG_LABELS = ("simulated:gemini-2.5-flash-lite", "effective_date", "split: unsupported_format",
               "split: encrypted")


@needs_chromium
def test_no_chart_text_runs_past_its_svg_at_1400_px(tmp_path):
    lake = str(tmp_path / "lake")
    write_busy_lake(lake)
    page = render(lake)
    drawn = re.findall(r'<div class="chart" data-query="(\w+)"><svg', page)
    assert {"reader_share", "field_coverage", "failures_by_stage", "cost_by_model",
            "throughput", "queue_depth", "latency_by_size", "weekly_f1"} <= set(drawn), drawn
    texts = set(re.findall(r"<text[^>]*>([^<]+)</text>", page))
    assert set(LONG_LABELS) <= texts, set(LONG_LABELS) - texts  # whole labels, as drawn

    found = cut_texts(page, tmp_path)
    assert found["viewport"] == 1400
    assert found["texts"] > 150  # the check did measure the charts' text
    assert found["cut"] == [], found["cut"]


@needs_chromium
def test_the_check_sees_a_label_cut_at_the_svg_edge(tmp_path):
    """The same check over a chart whose label is pushed past its SVG's left edge."""
    svg = ('<svg xmlns="http://www.w3.org/2000/svg" width="200" height="50">'
           '<g transform="translate(-30,20)"><text x="0" y="0">effective_date</text></g>'
           '<text x="60" y="40">whole</text></svg>')
    page = (f'<!DOCTYPE html><html><body><div class="chart" data-query="demo">{svg}</div>'
            "</body></html>")
    found = cut_texts(page, tmp_path)
    assert [c["text"] for c in found["cut"]] == ["effective_date"] and found["texts"] == 2


WIDTH = 900  # narrower than the charts need: where the table squeezed its columns
ONE_LINE_CELLS = """
const out = {cells: 0, broken: []};
for (const td of document.querySelectorAll('td.word')) {
  if (!td.textContent.trim()) continue;
  out.cells += 1;
  const range = document.createRange(); range.selectNodeContents(td);
  const lines = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
  if (lines.size > 1) out.broken.push(td.textContent);
}
report(out);
"""


@needs_chromium
def test_a_tables_reasons_and_times_stay_on_one_line_in_a_narrow_window(tmp_path):
    """The failed-files table squeezed its reason column until ``unsupported_format`` broke in
    two: a word column's cell is drawn on one line, and a path breaks after ``/`` or ``_``."""
    from support.chromium import run_script

    lake = str(tmp_path / "lake")
    write_busy_lake(lake)
    page = render(lake)
    assert '<td class="word">unsupported_format</td>' in page
    assert "contracts/<wbr>received/<wbr>unsupported_<wbr>format.pdf" in page
    found = run_script(page, ONE_LINE_CELLS, tmp_path, "one-line", width=WIDTH)
    assert found["cells"] >= 6  # reasons and finished_at of the failed files, at least
    assert found["broken"] == [], found["broken"]
