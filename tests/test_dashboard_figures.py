"""The dashboard's figures are the analyst's: each card equals what ``doclake sql`` answers to the
query an analyst would write (end-to-end latency over succeeded jobs, the documents table's
counts, the docs' coverage recipe); its SQL is on the page; at 900 px no text is under 11 px."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import KLEISTER
from tests.support.chromium import needs_chromium, run_script
from tests.support.terminal import doclake_command

pytestmark = pytest.mark.skipif(not KLEISTER.is_dir(),
                                reason=f"Kleister NDA documents not found at {KLEISTER}")


def doclake(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "DOCLAKE_HOME"}
    done = subprocess.run([doclake_command(), *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)
    return done


def sql(home: Path, query: str) -> list[dict]:
    done = doclake("sql", query, "--home", str(home), "--format", "json", cwd=home.parent)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def dashboard(tmp_path_factory) -> tuple[Path, str]:
    """A home of four NDAs, a note no schema applies to and a corrupt PDF; its dashboard."""
    root = tmp_path_factory.mktemp("figures")
    room = root / "room"
    room.mkdir()
    for source in sorted(KLEISTER.glob("*.pdf"))[:4]:
        shutil.copy(source, room / source.name)
    (room / "shopping.txt").write_text("Eggs, flour, butter and a pint of milk.\n")
    (room / "broken.pdf").write_bytes(b"%PDF-1.7\n1 0 obj <<>> endobj\ntruncated")
    home = root / "home"
    done = doclake("run", str(room), "--fields", "nda", "--home", str(home), cwd=root)
    assert done.returncode == 0, done.stderr
    out = root / "page.html"
    done = doclake("dashboard", "--home", str(home), "--out", str(out), cwd=root)
    assert done.returncode == 0, done.stderr
    return home, out.read_text()


def cards(page: str) -> dict[str, str]:
    """The all-time row of cards: label -> figure as shown."""
    all_time = page[page.index(">All time</h2>"):]
    return {html.unescape(label): html.unescape(figure) for figure, label in re.findall(
        r'<div class="figure">([^<]*)</div><div class="label">([^<]*)</div>', all_time)}


def shown_seconds(text: str) -> float:
    match = re.fullmatch(r"(\d+\.\d) s", text)
    assert match, text
    return float(match.group(1))


def test_the_latency_card_is_end_to_end_over_succeeded_jobs(dashboard):
    home, page = dashboard
    expected = sql(home, "SELECT quantile_cont(end_to_end_seconds, 0.5) AS p50, "
                         "quantile_cont(end_to_end_seconds, 0.95) AS p95 "
                         "FROM job_latency WHERE status = 'succeeded'")[0]
    p50, p95 = cards(page)["end-to-end latency p50 / p95"].split(" / ")
    assert shown_seconds(p50) == pytest.approx(expected["p50"], abs=0.05)
    assert shown_seconds(p95) == pytest.approx(expected["p95"], abs=0.05)
    final = sql(home, "SELECT quantile_cont(seconds, 0.5) AS p50 FROM job_latency "
                      "WHERE status = 'succeeded'")[0]
    shown_final = cards(page)["until final status p50 / p95"].split(" / ")[0]
    assert shown_seconds(shown_final) == pytest.approx(final["p50"], abs=0.05)


def test_documents_and_failed_cards_are_the_documents_tables_counts(dashboard):
    home, page = dashboard
    counts = sql(home, "SELECT count(*) AS documents, "
                       "count(*) FILTER (WHERE j.status = 'failed') AS failed "
                       "FROM documents d JOIN jobs j ON j.job_id = d.latest_job_id")[0]
    assert counts == {"documents": 6, "failed": 1}  # six files, the corrupt one failed
    shown = cards(page)
    assert (int(shown["documents"]), int(shown["failed"])) == (6, 1)
    no_schema = sql(home, "SELECT count(DISTINCT document_id) AS n FROM results "
                          "WHERE status = 'not_applicable'")[0]["n"]
    assert int(shown["documents no schema applied to"]) == no_schema


def test_coverage_is_the_docs_recipe(dashboard):
    home, page = dashboard
    recipe = sql(home, """
SELECT f.field,
       count(DISTINCT f.document_id) AS documents_with_it,
       (SELECT count(*) FROM results WHERE status = 'succeeded') AS documents_scored
FROM results AS r
JOIN result_fields AS f ON f.dt = r.dt AND f.job_id = r.job_id AND f.strategy = r.strategy
WHERE r.status = 'succeeded'
GROUP BY f.field
ORDER BY documents_with_it DESC""")
    assert recipe and all(r["documents_scored"] == 4 for r in recipe)  # the four NDAs only
    from dashboards.queries import run

    rows = {r["field"]: r for r in run(str(home / "lake"), "field_coverage").to_pylist()}
    for r in recipe:
        assert rows[r["field"]]["coverage"] == pytest.approx(
            r["documents_with_it"] / r["documents_scored"])
        assert f">{round(100 * r['documents_with_it'] / 4)}%<" in page  # the bar's number


def test_every_panel_shows_its_query_and_names_what_it_counts(dashboard):
    _, page = dashboard
    from dashboards.report import CHARTS

    for chart in [*(c.query for c in CHARTS), "headline"]:
        assert f"query: dashboards/queries/{chart}.sql</summary><pre>" in page, chart
    assert "units in flight" in page and "busy_workers" not in page
    assert "<th>source_path</th>" not in page


@needs_chromium
def test_no_text_under_11_px_at_900_px(dashboard, tmp_path):
    _, page = dashboard
    script = """
const small = [];
const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
while (walker.nextNode()) {
  const node = walker.currentNode;
  const element = node.parentElement;
  if (!node.textContent.trim() || !element || element.closest('details:not([open])')) continue;
  const range = document.createRange();
  range.selectNodeContents(node);
  const box = range.getBoundingClientRect();
  if (!box.width) continue;
  let px = parseFloat(getComputedStyle(element).fontSize);
  const svg = element.closest('svg');
  if (svg) {  // an SVG's text is drawn at its font size times the SVG's scale
    const viewWidth = svg.viewBox.baseVal.width || svg.width.baseVal.value;
    px = px * svg.getBoundingClientRect().width / viewWidth;
  }
  if (px < 11) small.push([node.textContent.trim().slice(0, 40), Math.round(px * 10) / 10]);
}
report({width: document.documentElement.clientWidth, small: small});
"""
    found = run_script(page, script, tmp_path, "font-size", width=900)
    assert found["width"] <= 900
    assert found["small"] == [], found["small"][:10]


def test_two_documents_that_share_a_path_are_told_apart(tmp_path):
    home = tmp_path / "home"
    for folder, words in (("one", "Mutual agreement of Acme."), ("two", "Lease of a warehouse.")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "notes.txt").write_text(words + "\n")
        done = doclake("run", str(tmp_path / folder), "--fields", "none", "--home", str(home),
                       cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    ids = sorted(r["document_id"][:8] for r in sql(home, "SELECT document_id FROM documents"))
    assert len(ids) == 2
    from dashboards.queries import run

    shown = sorted(r["source_path"] for r in run(str(home / "lake"), "slowest_documents")
                   .to_pylist())
    assert shown == [f"notes.txt [{ids[0]}]", f"notes.txt [{ids[1]}]"]
