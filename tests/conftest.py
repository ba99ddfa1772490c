"""Shared fixtures: a home folder, settings with short timings, generated PDFs."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from pdfgen import make_pdf  # noqa: E402

from infra.settings import Settings  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared"
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

    def make(name: str, pages: int, word: str = "hello") -> Path:
        return make_pdf(folder / name, [f"{word} {name} page {i}" for i in range(1, pages + 1)])

    return make


class CountingRunner:
    """Runs CPU work inline and counts the calls: proves which pages were (not) read."""

    def __init__(self):
        self.calls: list[tuple[str, tuple]] = []

    async def run(self, fn, *args, timeout_s: float):
        self.calls.append((fn.__name__, args))
        return await asyncio.to_thread(fn, *args)


class MemorySink:
    """Keeps committed events in a list."""

    def __init__(self):
        self.events = []

    async def commit(self, events):
        self.events.extend(events)

    def of_type(self, event_type: str):
        return [e for e in self.events if e.event_type == event_type]
