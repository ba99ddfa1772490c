"""The fork server preloads the modules of every call the CPU lanes run: a fresh worker process
(the first of a run, or one replaced after a time limit) unpickles its first call without
importing anything. Before, each fresh worker imported its call's module first (0.2 s), and a
burst's first renders for a model waited 0.43 to 0.51 s each for it."""

from __future__ import annotations

import subprocess
import sys

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

SENT_TO_WORKERS = [count_pages, sniff_file, decrypt_office, read_csv, read_text_document,
                   plan_workbook, read_sheet, index_listed_jobs, look_at_pages, _ocr_one,
                   count_and_read_first_pages_of_each, read_and_store_text_layer,
                   render_for_model, fingerprint_files, store_uploads,
                   FolderObjectStore, Fts5SearchIndex]
"""The lanes' calls and the objects sent with them (the stores a worker writes to). The
offline rules are left out on purpose: the short lane's own warm-up builds them."""


def test_the_fork_server_preload_holds_every_module_a_worker_call_needs():
    wanted = sorted({item.__module__ for item in SENT_TO_WORKERS})
    script = ("import sys\n"
              f"for name in {PRELOAD!r}: __import__(name)\n"
              f"print('\\n'.join(m for m in {wanted!r} if m not in sys.modules))\n")
    missing = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                             check=True).stdout.split()
    assert missing == [], f"not preloaded by the fork server: {missing}"
