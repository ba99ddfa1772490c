"""The fork server preloads the modules of every call the CPU lanes run: a fresh worker process
(the first of a run, or one replaced after a time limit) unpickles its first call without
importing anything. Before, each fresh worker imported its call's module first (0.2 s), and a
burst's first renders for a model waited 0.43 to 0.51 s each for it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from extract.formats.document_text import read_text_document
from extract.formats.office import decrypt_office
from extract.formats.pdf import count_pages
from extract.formats.sniff import sniff_file
from extract.formats.spreadsheet import plan_workbook, read_sheet
from extract.formats.text import read_csv
from extract.handlers.index import index_listed_jobs
from extract.readers.ocr import _ocr_one, look_at_pages
from extract.readers.text import count_and_read_first_pages_of_each, read_and_store_text_layer
from extract.readers.vision import render_for_model
from infra.local.cpu import PRELOAD
from infra.local.objectstore import FolderObjectStore
from infra.local.search import Fts5SearchIndex
from ingest.fingerprint import fingerprint_files, store_uploads

ROOT = Path(__file__).resolve().parents[1]

SENT_TO_WORKERS = [count_pages, sniff_file, decrypt_office, read_csv, read_text_document,
                   plan_workbook, read_sheet, index_listed_jobs, look_at_pages, _ocr_one,
                   count_and_read_first_pages_of_each, read_and_store_text_layer,
                   render_for_model, fingerprint_files, store_uploads,
                   FolderObjectStore, Fts5SearchIndex]
"""The lanes' calls and the objects sent with them (the stores a worker writes to). The
offline rules are left out on purpose: the fork server builds them only for a run that uses
them (``RULES_PRELOAD``, tested below)."""


def test_the_fork_server_preload_holds_every_module_a_worker_call_needs():
    wanted = sorted({item.__module__ for item in SENT_TO_WORKERS})
    script = ("import sys\n"
              f"for name in {PRELOAD!r}: __import__(name)\n"
              f"print('\\n'.join(m for m in {wanted!r} if m not in sys.modules))\n")
    missing = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                             check=True).stdout.split()
    assert missing == [], f"not preloaded by the fork server: {missing}"


_PROBE = '''
import sys


def rules_in_this_worker():
    """Whether this worker was forked with the rules built (nothing imported to find out)."""
    built = "extract.fields.rules.offline" in sys.modules and (
        sys.modules["extract.fields.rules.offline"].shipped_rules.cache_info().currsize == 1)
    kind = "extract.fields.applicability.model" in sys.modules and (
        sys.modules["extract.fields.applicability.model"].nda_model.cache_info().currsize == 1)
    return built, kind
'''


@pytest.mark.parametrize("rules", [True, False])
def test_a_run_with_the_rules_forks_every_worker_with_them_built(tmp_path, rules):
    """``forkserver.start(rules=True)`` (a run that uses the offline rules) has the fork server
    build the rules and the kind model, so a worker of any lane starts with both, without a
    warm-up of its own; a run without them pays nothing for them."""
    (tmp_path / "probe_worker.py").write_text(_PROBE)
    script = ("from infra.local import forkserver\n"
              f"forkserver.start(rules={rules})\n"
              "from infra.local.cpu import ProcessPoolRunner\n"
              "from probe_worker import rules_in_this_worker\n"
              "runner = ProcessPoolRunner(1)\n"
              "print(runner.call(rules_in_this_worker, timeout_s=60))\n"
              "runner.close()\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, env=env, cwd=tmp_path).stdout.strip()
    assert out == str((rules, rules))


class _Started(Exception):
    """Stops ``doclake run`` right after it has started the fork server."""


@pytest.mark.parametrize(("args", "rules"), [([], True), (["--fields", "none"], False),
                                              (["--strategy", "single-pass"], False)])
def test_doclake_run_asks_for_the_rules_only_when_it_runs_them(monkeypatch, tmp_path, args,
                                                                rules):
    from typer.testing import CliRunner

    from infra.cli.main import app
    from infra.local import forkserver

    asked = []

    def start(**options):
        asked.append(options)
        raise _Started

    monkeypatch.setattr(forkserver, "start", start)
    result = CliRunner().invoke(app, ["run", str(tmp_path), "--home", str(tmp_path / "h"),
                                      *args])
    assert isinstance(result.exception, _Started)
    assert asked == [{"rules": rules}]


def test_a_broken_rules_model_never_stops_the_fork_server(monkeypatch):
    """The fork server imports ``prebuilt`` for a run that uses the rules; a model missing from
    the package (``model_missing``) must stay each document's fields failure, not an exception
    in the fork server's preload (multiprocessing lets only an ImportError pass there), which
    would leave the run without a worker."""
    import runpy

    from extract.errors import TerminalError
    from extract.fields.rules import offline

    def missing() -> None:
        raise TerminalError("the rules model nda_model.json is missing", error_type="model_missing")

    monkeypatch.setattr(offline, "shipped_rules", missing)
    runpy.run_module("extract.fields.rules.prebuilt")  # no exception: the import is safe
