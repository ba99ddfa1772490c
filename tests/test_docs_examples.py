"""Every SQL and shell example in README.md and docs/ runs, so an example that breaks fails CI.

How to write an example that is checked (``support.docs_examples`` finds them):

- a fenced ``sql`` block runs with ``doclake sql`` against a home made by ``doclake run examples``
  (the bundled example NDAs, default options): it must succeed;
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


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """A scratch folder with a copy of examples/, and the environment of a home made from it."""
    folder = tmp_path_factory.mktemp("docs")
    shutil.copytree(ROOT / "examples", folder / "examples")
    home = folder / "home"
    env = {**os.environ, **FAST, "DOCLAKE_HOME": str(home), "COLUMNS": "120",
           "PATH": f"{Path(doclake_command()).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run([doclake_command(), "run", "examples"], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return folder, env


def test_the_docs_have_examples():
    languages = {e.language for e in FOUND if e.skip is None}
    assert languages == {"sql", "sh", "shown"}, \
        "README.md and docs/ should show runnable SQL, commands and a command's output"
    assert sum(e.path.name == "README.md" for e in FOUND) >= 5


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
        argv = [doclake_command(), "sql", example.code, "--format", "csv"]
    else:
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
