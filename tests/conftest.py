"""Shared fixtures: a home folder, settings with short timings, generated PDFs."""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import logging
import os
from collections.abc import Iterable
from pathlib import Path

import pytest
from support.pdfgen import make_pdf

from infra.settings import Settings


def _find_shared() -> Path:
    """The team's shared test data: $DOCLAKE_SHARED_DIR, else a ``shared/`` beside the clone or
    beside any folder above it (the repository normally sits at ``<work>/main``)."""
    if os.environ.get("DOCLAKE_SHARED_DIR"):
        return Path(os.environ["DOCLAKE_SHARED_DIR"])
    for folder in Path(__file__).resolve().parents[1:]:
        if (folder / "shared" / "corpus").is_dir():
            return folder / "shared"
    return Path(__file__).resolve().parents[2] / "shared"


SHARED = _find_shared()
CORPUS = SHARED / "corpus"
KLEISTER = SHARED / "data" / "kleister-nda" / "train" / "documents"


def needs_corpus() -> pytest.MarkDecorator:
    return pytest.mark.skipif(not CORPUS.is_dir(),
                              reason=f"shared test corpus not found at {CORPUS} (a fresh clone)")


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path / "home", poll_interval_s=0.2, event_flush_s=0.02,
                    cpu_workers=1, concurrency=4, visibility_timeout_s=30)


@pytest.fixture
def pdf_factory(tmp_path: Path):
    folder = tmp_path / "docs"
    folder.mkdir()

    def make(name: str, pages: int, word: str = "hello", textless: Iterable[int] = ()) -> Path:
        """``textless``: pages with no text layer (as a scan's): the split leaves their units
        to the read stage, which the default ``text_pages_at_split`` would otherwise spare."""
        blank = set(textless)
        return make_pdf(folder / name, ["" if i in blank else f"{word} {name} page {i}"
                                        for i in range(1, pages + 1)])

    return make


@pytest.fixture(scope="module")
def moto_endpoint():
    """A moto server on 127.0.0.1: the closest stand-in for AWS's own HTTP protocol."""
    server_module = pytest.importorskip(
        "moto.server", reason="moto[server] is not installed (pip install -e '.[dev]')")
    pytest.importorskip("boto3", reason="boto3 is not installed (pip install -e '.[aws]')")
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one INFO line per request
    server = server_module.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture(scope="module")
def iam_moto():
    """A moto server with IAM enforced, in its own process, for the tests that deploy the
    synthesized template (``support.awsstack``): one per test module."""
    pytest.importorskip("moto.server", reason="moto[server] is not installed")
    from support.awsstack import IamMoto

    server = IamMoto()
    yield server
    server.close()


_CPU_THREAD = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="cpu")
"""``CountingRunner``'s one thread, shared by every test's runner (tests run one at a time)."""


class CountingRunner:
    """Runs CPU work on one thread of its own and counts the calls: proves which pages were
    (not) read. One thread, not the loop's default pool: PDFium is not thread-safe, and two
    handlers' reads at once on two threads crashed the test process now and then (a segfault
    in pypdfium2), where the real runner gives each call a process."""

    def __init__(self):
        self.calls: list[tuple[str, tuple]] = []

    async def run(self, fn, *args, timeout_s: float):
        self.calls.append((fn.__name__, args))
        return await asyncio.get_running_loop().run_in_executor(
            _CPU_THREAD, functools.partial(fn, *args))


class MemorySink:
    """Keeps committed events in a list."""

    def __init__(self):
        self.events = []

    async def commit(self, events):
        self.events.extend(events)

    def of_type(self, event_type: str):
        return [e for e in self.events if e.event_type == event_type]
