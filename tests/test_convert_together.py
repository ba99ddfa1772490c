"""Convert messages received together: one LibreOffice process converts their Office files,
each stored and split as alone; a file the batch cannot take is converted alone.

The probe (2026-12-05, the mixed room of ``doclake bench mixed-room``): eight one-page Office
files waited 4 to 9 s for one of two converters, each paying LibreOffice's 1.3 s start; eight in
one process take 1.7 s.
"""

from __future__ import annotations

import contextlib

import pytest
from support.helpers import Harness, handle_together

import extract.formats.office as office
import extract.handlers.convert_together as together_module
from extract.formats.office import find_soffice
from extract.handling import Outcome
from extract.messages import CONVERT_QUEUE, SPLIT_QUEUE
from lake.layout import converted_key
from tests.support.officegen import make_docx

pytestmark = pytest.mark.skipif(find_soffice() is None, reason="needs LibreOffice")


def _count_conversions(monkeypatch) -> list[int]:
    """The number of documents of each LibreOffice conversion process started, in order."""
    started: list[int] = []
    real = office._run

    async def counted(argv, *args, **kwargs):
        if "--convert-to" in argv:
            started.append(sum(1 for a in argv if "/in/document-" in a))
        return await real(argv, *args, **kwargs)

    monkeypatch.setattr(office, "_run", counted)
    return started


async def _convert_messages(harness: Harness, tmp_path, names: list[str]):
    room = tmp_path / "room"
    room.mkdir()
    ingested = {}
    for name in names:  # a "big" one has more to say
        lines = [f"Memo {name} says hello."] * (40 if name.startswith("big") else 1)
        ingested[name] = harness.planner.ingest(make_docx(room / name, lines))
    await harness.drain(SPLIT_QUEUE)
    return ingested, harness.receive(CONVERT_QUEUE)


async def test_office_files_received_together_share_one_libreoffice(tmp_path, monkeypatch):
    harness = Harness(tmp_path)
    ingested, received = await _convert_messages(harness, tmp_path,
                                                 ["a.docx", "b.docx", "c.docx"])
    assert len(received) == 3
    processes = _count_conversions(monkeypatch)

    assert await handle_together(harness.ctx, received) == [Outcome.ACK] * 3

    assert processes == [3]
    jobs = harness.store.list_jobs([i.job_id for i in ingested.values()])
    assert [(j.pages, j.units, j.error) for j in jobs] == [(1, 1, None)] * 3
    timings = {harness.objects.head(converted_key(j.document_id, j.job_id))["conversion_ms"]
               for j in jobs}
    assert len(timings) == 1  # each waited for the one process
    # Each document's own PDF, not a neighbour's: its text is its own.
    await harness.drain("read")
    for job in jobs:
        (page,) = harness.objects.list(f"pages/{job.document_id}/{job.job_id}/")
        assert f"Memo {job.source_name} says hello." in harness.objects.get(page).decode()


async def test_a_file_over_the_batch_size_is_converted_alone(tmp_path, monkeypatch):
    harness = Harness(tmp_path)
    ingested, received = await _convert_messages(harness, tmp_path,
                                                 ["a.docx", "b.docx", "big.docx"])
    sizes = {name: (tmp_path / "room" / name).stat().st_size for name in ingested}
    monkeypatch.setattr(together_module, "TOGETHER_MAX_BYTES", max(sizes.values()) - 1)
    assert sizes["big.docx"] > max(sizes["a.docx"], sizes["b.docx"])
    processes = _count_conversions(monkeypatch)

    assert await handle_together(harness.ctx, received) == [Outcome.ACK] * 3

    assert sorted(processes) == [1, 2]
    jobs = harness.store.list_jobs([i.job_id for i in ingested.values()])
    assert [(j.pages, j.units, j.error) for j in jobs] == [(1, 1, None)] * 3


async def test_a_file_the_shared_process_made_no_pdf_of_is_converted_alone(tmp_path, monkeypatch):
    """LibreOffice refused one file of the batch, or the time limit ended the process before
    it: that file gets a process and a time limit of its own, the others are kept."""
    harness = Harness(tmp_path)
    ingested, received = await _convert_messages(harness, tmp_path,
                                                 ["a.docx", "b.docx", "c.docx"])
    processes = _count_conversions(monkeypatch)
    real = together_module.convert_many_to_pdf

    @contextlib.asynccontextmanager
    async def losing_the_second(sources, limits):
        async with real(sources, limits) as conversions:
            yield [conversions[0], None, *conversions[2:]]

    monkeypatch.setattr(together_module, "convert_many_to_pdf", losing_the_second)

    assert await handle_together(harness.ctx, received) == [Outcome.ACK] * 3

    assert processes == [3, 1]
    jobs = harness.store.list_jobs([i.job_id for i in ingested.values()])
    assert [(j.pages, j.units, j.error) for j in jobs] == [(1, 1, None)] * 3


def test_a_drop_of_office_files_waits_for_its_splits_and_shares_one_libreoffice(
        settings, tmp_path, monkeypatch):
    """Four one-page files dropped together: the first convert message waits while the others'
    splits are under way (``CONVERT_GATHER_S``, long here so that a loaded machine decides
    nothing), then the four go to one LibreOffice process (``CONVERT_SHARED_FROM``), the other
    converter left free for files that come next."""
    import asyncio

    import infra.local.runtime as runtime_module
    from extract.state import JobStatus
    from infra.local.runtime import LocalRuntime

    monkeypatch.setattr(runtime_module, "CONVERT_GATHER_S", 30.0)
    room = tmp_path / "room"
    room.mkdir()
    paths = [make_docx(room / f"memo{n}.docx", [f"Memo {n} says hello."]) for n in range(4)]
    runtime = LocalRuntime(settings)
    ids = [i.job_id for i in runtime.planner().ingest_many(paths)]
    processes = _count_conversions(monkeypatch)

    def finished():
        return all(j.status.terminal for j in runtime.store.list_jobs(ids))

    asyncio.run(asyncio.wait_for(runtime.process(finished), timeout=240))

    assert [j.status for j in runtime.store.list_jobs(ids)] == [JobStatus.SUCCEEDED] * 4
    assert processes == [4]


async def test_a_shared_process_ended_by_the_time_limit_gives_no_pdf_at_all(tmp_path):
    """A process the time limit ends may leave the PDF it was writing cut short, and the exit
    says nothing of which: none of its PDFs is taken (each file is converted again alone). The
    short memo first, converted long before the limit; the long one after it, not (LibreOffice
    needs 20 s and more for it alone)."""
    from extract.formats.office import ConvertLimits, convert_many_to_pdf
    from extract.formats.sniff import Format

    memo = make_docx(tmp_path / "memo.docx", ["A short memo."])
    long = make_docx(tmp_path / "long.docx", [f"Paragraph {i} of a long memo." for i in
                                              range(120_000)])
    async with convert_many_to_pdf([(memo, Format.DOCX), (long, Format.DOCX)],
                                   ConvertLimits(timeout_s=8)) as conversions:
        assert conversions == [None, None]


@pytest.mark.parametrize(("waiting", "taken"), [(1, 1), (3, 3), (4, 4), (6, 4), (8, 4), (12, 6),
                                                 (20, 8)])
def test_a_converter_takes_a_few_files_before_they_are_shared_and_at_most_a_batch(
        settings, waiting, taken):
    """Two converters free and no split under way: a converter takes every file while they are
    few (up to ``CONVERT_SHARED_FROM``), half of them when more wait, and never more than
    ``CONVERT_TOGETHER``: with two of two, a second drop of four waited 3.3 s for a converter."""
    from infra.local.runtime import LocalRuntime

    runtime = LocalRuntime(settings.model_copy(update={"convert_concurrency": 2}))
    try:
        for n in range(waiting):
            runtime.queue.send(CONVERT_QUEUE, f"file {n}")
        assert runtime._together(CONVERT_QUEUE, free=2) == taken
    finally:
        runtime.close()
