"""Every SQL and shell example in README.md and docs/ runs, so an example that breaks fails CI.

How to write an example that is checked (``support.docs_examples`` finds them):

- a fenced ``sql`` block runs with ``doclake sql`` against a home made by ``doclake run examples
  damaged.pdf`` (the bundled example NDAs, default options, and a PDF cut short so that the
  failure recipes have a failure to return): it must succeed, and
  - where a ``text`` block follows it (blank lines only between), that block is its result as
    ``--format table`` prints it (``COLUMNS=120``), compared line by line as below;
  - otherwise it must return rows (its last statement), unless
    ``<!-- docs-test: no-rows REASON -->`` on the line before its fence says why it returns
    none over that home (no labels, no model calls);
- in a ``sh`` block, each line starting with ``doclake `` runs in bash with ``DOCLAKE_HOME`` set to
  that home, in a scratch folder holding a copy of ``examples/``: it must exit 0;
- a ``text`` block starting with ``$ doclake ...`` runs that command and compares what it prints
  with the lines shown (``...`` at a line's end: any rest); any other ``text`` block must be
  skipped, its reason saying why its output cannot be compared here;
- ``<!-- docs-test: skip REASON -->`` on the line before a fence skips the block (AWS, a server
  that does not return, a user's own folder), and the reason is shown in the test report.

The docs also build as a site: ``mkdocs build --strict`` fails on a broken link or a page that
is not in the navigation.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.docs_examples import examples, output_matches
from support.terminal import doclake_command

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FOUND = examples(PAGES)
FAST = {"DOCLAKE_EVENT_FLUSH_S": "0.02", "DOCLAKE_POLL_INTERVAL_S": "0.2"}
DAMAGED_PDF = b"%PDF-1.7\n1 0 obj\n<< /Type /Catalog"  # a header, then nothing: cut short


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """A scratch folder with a copy of examples/ and a damaged PDF, and the environment of a
    home made from them."""
    folder = tmp_path_factory.mktemp("docs")
    shutil.copytree(ROOT / "examples", folder / "examples")
    (folder / "damaged.pdf").write_bytes(DAMAGED_PDF)
    home = folder / "home"
    env = {**os.environ, **FAST, "DOCLAKE_HOME": str(home), "COLUMNS": "120",
           "PATH": f"{Path(doclake_command()).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run([doclake_command(), "run", "examples", "damaged.pdf"], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return folder, env


def test_the_docs_have_examples():
    languages = {e.language for e in FOUND if e.skip is None}
    assert languages == {"sql", "sh", "shown"}, \
        "README.md and docs/ should show runnable SQL, commands and a command's output"
    assert sum(e.path.name == "README.md" for e in FOUND) >= 5
    results = [e.name for e in FOUND if e.language == "sql" and e.shown and e.skip is None]
    assert len(results) >= 3, f"SQL blocks whose result the docs show: {results}"


def _rows(stdout: str) -> list[list]:
    """Each statement's rows, from ``doclake sql --format json`` (one array a statement)."""
    import json

    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def _check_sql(example, folder: Path, env: dict[str, str]) -> None:
    """A sql block's shown result, compared; else the rows it must return."""
    printed = "table" if example.shown is not None else "json"
    done = subprocess.run([doclake_command(), "sql", example.code, "--format", printed],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, (f"{example.name} failed ({done.returncode}):\n{example.code}\n"
                                  f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    if example.shown is not None:
        lines = [line.rstrip() for line in done.stdout.splitlines()]
        assert output_matches(example.shown, lines), (
            f"{example.name}: the docs show\n" + "\n".join(example.shown)
            + "\nbut the query printed\n" + "\n".join(lines))
        return
    statements = _rows(done.stdout)
    if example.no_rows is None:
        assert statements and statements[-1], (
            f"{example.name} returned no rows over the examples; show its result in a text "
            "block after it, or say why it returns none: <!-- docs-test: no-rows REASON -->")


@pytest.mark.parametrize("example", FOUND, ids=[e.name for e in FOUND])
def test_the_example_runs(example, workspace):
    if example.skip is not None:
        assert not example.skip.startswith("UNCHECKED"), f"{example.name}: {example.skip}"
        pytest.skip(f"{example.name}: {example.skip}")
    folder, env = workspace
    if example.language == "shown":
        done = subprocess.run(["bash", "-c", example.code], cwd=folder, env=env,
                              capture_output=True, text=True, timeout=300,
                              stdin=subprocess.DEVNULL)
        printed = [line.rstrip() for line in (done.stdout + done.stderr).splitlines()]
        assert output_matches(example.shown, printed), (
            f"{example.name}: the docs show\n" + "\n".join(example.shown)
            + "\nbut the command printed\n" + "\n".join(printed))
        assert "Traceback" not in done.stderr
        return
    if example.language == "sql":
        _check_sql(example, folder, env)
        return
    argv = ["bash", "-o", "pipefail", "-c", example.code]
    done = subprocess.run(argv, cwd=folder, env=env, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, (f"{example.name} failed ({done.returncode}):\n{example.code}\n"
                                  f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    assert "Traceback" not in done.stderr, done.stderr[-3000:]


def test_the_docs_build_as_a_site_with_no_warning(tmp_path):
    mkdocs = Path(sys.executable).parent / "mkdocs"
    if not mkdocs.exists():
        pytest.fail("mkdocs is not installed: `make install` installs the dev extra")
    done = subprocess.run([str(mkdocs), "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert (tmp_path / "site" / "index.html").exists()


def test_no_page_tells_how_the_code_came_to_be():
    """The README and docs/ say what the product does today; history is for git log."""
    import re

    ordinal = (r"first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|"
               r"twelfth|\w+teenth")
    history = re.compile(rf"\b(issue #?\d+|wave \d+|stop \d+|session \d+|(?:{ordinal}) (?:session"
                         rf"|stop|wave)|(?:last|previous|earlier) (?:session|stop|wave))\b",
                         re.IGNORECASE)
    found = [f"{page.name}:{number}: {line.strip()[:100]}" for page in PAGES
             for number, line in enumerate(page.read_text().splitlines(), 1)
             if history.search(line)]
    assert not found, "\n".join(found)


def test_the_operators_page_lists_every_failure_hint_and_real_settings():
    """The reasons table of docs/operators.md is the summary's hints table; the limits it names
    are settings that exist, with the defaults they have."""
    from infra.cli.render.failure_hints import HINTS
    from infra.settings import Settings

    page = (ROOT / "docs" / "operators.md").read_text()
    missing = [reason for reason in HINTS if f"| `{reason}` | {HINTS[reason]} |" not in page]
    assert not missing, f"docs/operators.md lacks (or words differently) the hints of {missing}"
    import re

    named = re.findall(r"^\| `DOCLAKE_([A-Z0-9_]+)` \|", page, flags=re.MULTILINE)
    assert named and all(name.lower() in Settings.model_fields for name in named), named


def test_a_result_block_belongs_to_the_query_just_above_it(tmp_path):
    """How the docs mark a query's result and a query that returns no rows (read by hand here)."""
    page = tmp_path / "page.md"
    page.write_text("\n".join([
        "```sql", "SELECT 1 AS one", "```", "```text", "one", "1", "```", "",
        "<!-- docs-test: no-rows nothing yet -->", "```sql", "SELECT 1 WHERE false", "```",
        "", "A paragraph between.", "", "```text", "not a result", "```", ""]), encoding="utf-8")
    first, second, third = examples([page])
    assert (first.language, first.code, first.shown, first.no_rows) == (
        "sql", "SELECT 1 AS one", ("one", "1"), None)
    assert (second.language, second.shown, second.no_rows) == ("sql", None, "nothing yet")
    assert third.language == "shown" and third.skip.startswith("UNCHECKED")
