"""The split reads the text layer of a PDF's first pages while it has the file open (issue 23).

A unit whose every page has text is finished by the split, with the same pages, events and
store records the read handler would have written, and gets no read message; the others (past
``text_pages_at_split``, or with a page without text) are read by their own messages. The
order is the read handler's, so a split that dies part way is finished by its redelivery
without reading a stored page again.
"""

from __future__ import annotations

import asyncio

from support.pdfgen import make_pdf

from extract.messages import READ_QUEUE
from extract.state import JobStatus
from infra.local.runtime import LocalRuntime
from lake.catalog import query


def _settle(runtime: LocalRuntime, paths) -> list:
    ingested = runtime.planner().ingest_many(paths)
    ids = [i.job_id for i in ingested]
    asyncio.run(runtime.process(lambda: all(j.settled for j in runtime.store.list_jobs(ids))))
    return runtime.store.list_jobs(ids)


def _run(settings, paths) -> tuple[LocalRuntime, list]:
    runtime = LocalRuntime(settings)
    return runtime, _settle(runtime, paths)


def _reads(runtime: LocalRuntime) -> int:
    """Read messages handled (the stage times count each delivery)."""
    return runtime.stats.stages.calls.get(f"handle:{READ_QUEUE}", 0)


def _pages(lake: str) -> list[tuple]:
    """(file, unit, page, reader, chars) of every page row."""
    return [tuple(r.values()) for r in query(lake, (
        "SELECT d.source_name, p.unit_id, p.page_number, p.reader, p.chars FROM pages p "
        "JOIN documents d USING (document_id) ORDER BY 1, 3")).to_pylist()]


def _units(lake: str) -> list[tuple]:
    """(file, unit, status, first page, last page) of every unit row."""
    return [tuple(r.values()) for r in query(lake, (
        "SELECT d.source_name, u.unit_id, u.status, u.first_page, u.last_page FROM units u "
        "JOIN documents d USING (document_id) ORDER BY 1, 2")).to_pylist()]


def _count_text_reads(runtime: LocalRuntime) -> list[list[int]]:
    """The pages of each text-layer read the handlers ask the workers for (not the split's)."""
    from extract.formats.pdf import read_text_layer
    from extract.readers.text import read_and_store_text_layer

    asked: list[list[int]] = []
    real_run = runtime.cpu.run

    async def run(fn, *args, timeout_s):
        if fn in (read_text_layer, read_and_store_text_layer):
            asked.append(list(args[1]))
        return await real_run(fn, *args, timeout_s=timeout_s)

    runtime.cpu.run = run
    return asked


def test_a_small_text_pdf_is_read_by_its_split_with_no_read_message(settings, pdf_factory):
    letter = pdf_factory("letter.pdf", 7, word="giraffe")
    runtime, jobs = _run(settings.model_copy(update={"text_pages_at_split": 20}), [letter])
    assert [j.status for j in jobs] == [JobStatus.SUCCEEDED]
    assert _reads(runtime) == 0
    job = jobs[0]
    assert [u.status.value for u in runtime.store.list_units(job.job_id)] == ["done", "done"]
    assert [(p[2], p[3]) for p in _pages(settings.lake)] == [(n, "text") for n in range(1, 8)]
    hits = runtime.index.search("giraffe", limit=10)
    assert {h.page_number for h in hits} == set(range(1, 8))


def test_what_the_split_writes_is_what_the_reads_would_have_written(settings, pdf_factory):
    """The same lake rows and store records with and without reading at the split."""
    files = [pdf_factory("a.pdf", 3), pdf_factory("b.pdf", 10), pdf_factory("c.pdf", 12)]
    at_split = settings.model_copy(update={"text_pages_at_split": 10,
                                           "home": settings.home.parent / "at-split"})
    by_reads = settings.model_copy(update={"text_pages_at_split": 0,
                                           "home": settings.home.parent / "by-reads"})
    runtime_split, jobs_split = _run(at_split, files)
    runtime_reads, jobs_reads = _run(by_reads, files)
    assert _reads(runtime_reads) == 1 + 2 + 3
    assert _reads(runtime_split) == 1  # c.pdf's third unit, past the first ten pages
    assert {j.status for j in jobs_split} == {JobStatus.SUCCEEDED}
    assert _pages(at_split.lake) == _pages(by_reads.lake)
    assert len(_pages(at_split.lake)) == 25
    assert _units(at_split.lake) == _units(by_reads.lake)
    for job in jobs_split:
        texts = [runtime_split.objects.get(key) for key in
                 sorted(runtime_split.objects.list(f"pages/{job.document_id}/"))]
        assert len(texts) == job.pages and all(texts)


def test_a_unit_with_a_page_without_text_is_left_to_its_read(settings, tmp_path):
    """Page 8 has no text layer: unit 1 is finished by the split; unit 2 goes to its read, which
    finds pages 6, 7, 9 and 10 stored by the split and reads only page 8."""
    texts = [f"walrus page {n}" for n in range(1, 11)]
    texts[7] = ""
    pdf = make_pdf(tmp_path / "gap.pdf", texts)
    runtime = LocalRuntime(settings.model_copy(update={"text_pages_at_split": 20,
                                                       "reader": "text"}))
    asked = _count_text_reads(runtime)
    jobs = _settle(runtime, [pdf])
    assert [j.status for j in jobs] == [JobStatus.SUCCEEDED]
    assert _reads(runtime) == 1 and asked == [[8]]
    assert _units(settings.lake) == [("gap.pdf", "u00001", "done", 1, 5),
                                     ("gap.pdf", "u00002", "done", 6, 10)]
    pages = _pages(settings.lake)
    assert [(p[2], p[4] > 0) for p in pages] == [(n, n != 8) for n in range(1, 11)]


def test_a_split_that_dies_after_recording_its_units_is_finished_by_its_redelivery(
        settings, pdf_factory):
    """The split stored pages 1 to 20, made its events durable and recorded the plan (units 1
    to 4 done with it, in one write), then died before sending unit 5's read message (pages 21
    to 23, past ``text_pages_at_split``): the redelivery sends only that message, and its read
    reads only its own pages."""
    doc = pdf_factory("doc.pdf", 23, word="otter")
    runtime = LocalRuntime(settings.model_copy(update={"text_pages_at_split": 20}))
    real_send = runtime.queue.send_batch
    died = {"times": 0}

    def send_batch(queue, bodies, **kwargs):
        if queue == READ_QUEUE and died["times"] == 0:
            died["times"] += 1
            raise OSError("the process died here")
        return real_send(queue, bodies, **kwargs)

    runtime.queue.send_batch = send_batch
    asked = _count_text_reads(runtime)
    [job] = _settle(runtime, [doc])
    assert job.status is JobStatus.SUCCEEDED and died["times"] == 1
    assert _reads(runtime) == 1 and asked == [[21, 22, 23]]  # no page read again
    assert [u.status.value for u in runtime.store.list_units(job.job_id)] == ["done"] * 5
    assert [p[2] for p in _pages(settings.lake)] == list(range(1, 24))  # each page once
    assert len(runtime.objects.list(f"pages/{job.document_id}/")) == 23


def test_a_split_that_dies_before_recording_its_units_reads_no_stored_page_again(
        settings, pdf_factory):
    """The first delivery stored the pages and died before the units existed: the redelivery
    plans again and reads only the pages not stored (none), re-emitting the others' events."""
    from extract.readers.text import count_and_read_first_pages

    doc = pdf_factory("doc.pdf", 8, word="heron")
    runtime = LocalRuntime(settings.model_copy(update={"text_pages_at_split": 20}))
    real_add = runtime.store.add_units
    died = {"times": 0}

    def add_units(*args, **kwargs):
        if died["times"] == 0:
            died["times"] += 1
            raise OSError("the process died here")
        return real_add(*args, **kwargs)

    runtime.store.add_units = add_units
    skipped: list[list[int]] = []
    real_run = runtime.cpu.run

    async def run(fn, *args, timeout_s):
        if fn is count_and_read_first_pages:
            skipped.append(list(args[-1]))
        return await real_run(fn, *args, timeout_s=timeout_s)

    runtime.cpu.run = run
    [job] = _settle(runtime, [doc])
    assert job.status is JobStatus.SUCCEEDED and died["times"] == 1
    assert skipped == [[], list(range(1, 9))]  # the second delivery read nothing again
    assert _reads(runtime) == 0
    assert [(p[2], p[3], p[4] > 0) for p in _pages(settings.lake)] == [
        (n, "text", True) for n in range(1, 9)]


def test_a_split_whose_text_read_hangs_is_killed_at_its_limit_and_only_it_retried(
        settings, pdf_factory):
    """A hostile first page hangs the split's read among other documents' splits: the worker is
    killed at the split's limit, only that split's message is retried, and every job ends."""
    from support import cpu_tasks

    from extract.readers.text import count_and_read_first_pages

    slow = pdf_factory("slow.pdf", 3, word="slow")
    others = [pdf_factory(f"doc{i}.pdf", 7) for i in range(6)]
    runtime = LocalRuntime(settings.model_copy(update={
        "cpu_workers": 2, "concurrency": 8, "split_timeout_s": 1.0, "read_timeout_s": 1.0}))
    real_run = runtime.cpu.run
    hung = {"times": 0}

    async def run(fn, *args, timeout_s):
        if fn is count_and_read_first_pages and args[0].stat().st_size == slow.stat().st_size \
                and hung["times"] == 0:
            hung["times"] += 1
            return await real_run(cpu_tasks.sleep_for, 60, timeout_s=timeout_s)
        return await real_run(fn, *args, timeout_s=timeout_s)

    runtime.cpu.run = run
    jobs = _settle(runtime, [slow, *others])
    assert {j.status for j in jobs} == {JobStatus.SUCCEEDED} and len(jobs) == 7
    assert hung["times"] == 1 and runtime.stats.retries == 1
    assert _reads(runtime) == 0


def test_a_page_the_split_cannot_read_leaves_every_page_to_its_units_reads(
        pdf_factory, monkeypatch, tmp_path):
    """A hostile page among the first ones: the split's read gives up without a failure of its
    own, so each unit's read meets the page and fails that unit with its reason, as before."""
    from extract.errors import CorruptDocument
    from extract.readers import text
    from infra.local.objectstore import FolderObjectStore

    doc = pdf_factory("doc.pdf", 7)

    def hostile(path, numbers, password):
        raise CorruptDocument("PDFium cannot read page 3: bad content stream")

    monkeypatch.setattr(text, "read_text_layer", hostile)
    store = FolderObjectStore(tmp_path / "objects")
    assert text.count_and_read_first_pages(doc, None, 20, 100, store, "d", "j") == (7, [])
    assert text.count_and_read_first_pages(doc, None, 20, 100, None, "d", "j") == (7, [])
    assert store.list("pages/") == []


def test_a_pdf_is_routed_by_its_first_bytes_without_a_sniffing_call(settings, pdf_factory,
                                                                    tmp_path):
    """The head decides a PDF (``sniff_head``): its split makes one worker call, the count and
    the read together; a file whose containers must be parsed is still sniffed in a worker."""
    letter = pdf_factory("letter.pdf", 3, word="giraffe")
    table = tmp_path / "prices.csv"
    table.write_text("item,price\napple,3\n")
    runtime = LocalRuntime(settings.model_copy(update={"text_pages_at_split": 20}))
    calls: list[str] = []
    real_run = runtime.cpu.run

    async def run(fn, *args, timeout_s):
        calls.append(fn.__name__)
        return await real_run(fn, *args, timeout_s=timeout_s)

    runtime.cpu.run = run
    jobs = _settle(runtime, [letter])
    assert [j.status for j in jobs] == [JobStatus.SUCCEEDED]
    assert "sniff_file" not in calls and calls.count("count_and_read_first_pages") == 1
    calls.clear()
    assert [j.status for j in _settle(runtime, [table])] == [JobStatus.SUCCEEDED]
    assert calls.count("sniff_file") == 1
