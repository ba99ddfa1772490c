"""`doclake sql` answers a small query without defining the whole catalog (issue 26, finding 6).

No timing is asserted (figures are in the issue's note): what is checked is what made a small
query slow, on the real code path. A session defines only the views a statement reaches, and
answers as a session that defines them all; and the command never imports pyarrow's dataset
layer (and with it pandas) for a local lake of few files.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from infra.cli.main import app
from lake.catalog import connect, layers
from lake.events import EVENT_TYPES

ROOT = Path(__file__).resolve().parents[1]
FAST = {"DOCLAKE_EVENT_FLUSH_S": "0.02", "DOCLAKE_POLL_INTERVAL_S": "0.2", "DOCLAKE_CPU_WORKERS": "1"}
QUESTIONS = ("SELECT count(*) FROM jobs", "SELECT status, count(*) FROM jobs GROUP BY 1 ORDER BY 1",
             "SELECT count(*) FROM pages", "SELECT event_type, count(*) FROM events GROUP BY 1 ORDER BY 1",
             "SELECT count(*) FROM internal.raw_page_read", "SELECT 1")


def _home(tmp_path: Path, pdf_factory) -> str:
    pdf_factory("a.pdf", 3)
    pdf_factory("b.pdf", 1)
    home = str(tmp_path / "home")
    assert CliRunner().invoke(app, ["run", str(tmp_path / "docs"), "--home", home],
                              env=FAST).exit_code == 0
    return home


def test_a_session_defines_only_what_a_statement_reaches(tmp_path, pdf_factory):
    lake = f"{_home(tmp_path, pdf_factory)}/lake"
    everything = len(layers().order) + len(EVENT_TYPES)  # the layers and the raw views
    for question in QUESTIONS:
        with connect(lake) as lazy, connect(lake) as full:
            answer = lazy.table(question).to_pylist()
            if question != "SELECT 1" and "events" not in question:
                assert 0 < len(lazy.views_defined) < everything / 2, question
            full.refresh(define_all=True)
            assert len(full.views_defined) == everything
            assert answer == full.table(question).to_pylist()
    with connect(lake) as session:
        tables = {row["name"] for row in session.table("SHOW TABLES").to_pylist()}
        assert {"jobs", "pages", "daily_costs", "events"} <= tables


def test_doclake_sql_does_not_load_the_dataset_layer(tmp_path, pdf_factory):
    home = _home(tmp_path, pdf_factory)
    probe = ("import sys\n"
             "from infra.cli.main import app\n"
             f"sys.argv = ['doclake', 'sql', '--home', {home!r}, '--format', 'json', "
             "'SELECT count(*) AS n FROM jobs']\n"
             "try:\n    app()\nexcept SystemExit:\n    pass\n"
             "print(sorted(m for m in ('pandas', 'pyarrow.dataset') if m in sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
                          timeout=120)
    assert done.returncode == 0, done.stderr
    answer, loaded = done.stdout.strip().splitlines()
    assert json.loads(answer) == [{"n": 2}]
    assert loaded == "[]"
