"""CPU work in killable processes: a stuck or crashed parse costs one retry, not the run."""

from __future__ import annotations

import pytest
from support import cpu_tasks
from support.processes import gone_within

from extract.errors import TransientError, WorkerTimeout
from infra.local.cpu import ProcessPoolRunner


async def test_a_stuck_call_times_out_and_the_pool_recovers():
    runner = ProcessPoolRunner(1)
    try:
        with pytest.raises(WorkerTimeout, match="sleep_for ran past 0.5 s"):
            await runner.run(cpu_tasks.sleep_for, 30, timeout_s=0.5)
        assert await runner.run(cpu_tasks.square, 7, timeout_s=30) == 49
    finally:
        runner.close()


async def test_a_crashed_worker_is_a_transient_error_and_the_pool_recovers():
    runner = ProcessPoolRunner(1)
    try:
        with pytest.raises(TransientError) as caught:
            await runner.run(cpu_tasks.die, timeout_s=30)
        assert caught.value.error_type == "worker_crashed"
        assert await runner.run(cpu_tasks.square, 3, timeout_s=30) == 9
    finally:
        runner.close()


async def test_a_time_limit_counts_from_the_start_and_a_timeout_kills_only_its_own_call():
    """One call sleeps past its limit among many that queue for two processes: the queued
    calls wait longer than the limit in all, yet only the stuck one times out."""
    import asyncio

    runner = ProcessPoolRunner(2)
    try:
        runner.warm()
        stuck = asyncio.ensure_future(runner.run(cpu_tasks.sleep_for, 30, timeout_s=1.5))
        normal = [asyncio.ensure_future(runner.run(cpu_tasks.sleep_for, 0.25, timeout_s=1.5))
                  for _ in range(16)]  # 16 x 0.25 s on what is left: about 4 s of queueing
        results = await asyncio.gather(*normal, return_exceptions=True)
        assert results == ["woke"] * 16
        with pytest.raises(WorkerTimeout):
            await stuck
        assert await runner.run(cpu_tasks.square, 5, timeout_s=5) == 25
    finally:
        runner.close()


async def test_a_cancelled_caller_does_not_leave_its_call_running():
    import asyncio
    import time

    runner = ProcessPoolRunner(1)
    try:
        call = asyncio.ensure_future(runner.run(cpu_tasks.sleep_for, 30, timeout_s=60))
        await asyncio.sleep(1.0)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        started = time.monotonic()
        assert await runner.run(cpu_tasks.square, 4, timeout_s=20) == 16
        assert time.monotonic() - started < 15  # the sleeping process was killed, not waited on
    finally:
        runner.close()


async def test_an_error_raised_by_a_call_fails_that_call_only_and_the_pool_goes_on():
    """A call that raises RuntimeError (what pypdfium2's PdfiumError is) while another call is
    in flight in the same pool: the error is that call's, the other call finishes, and the pool
    keeps taking work. (Before: any RuntimeError was taken for a broken pool, the pool was
    stopped, and the call beside it never resolved.)"""
    import asyncio

    runner = ProcessPoolRunner(2)
    try:
        runner.warm()
        beside = asyncio.ensure_future(runner.run(cpu_tasks.sleep_for, 2, timeout_s=60))
        await asyncio.sleep(0.3)
        with pytest.raises(RuntimeError, match="page 7 is broken"):
            await runner.run(cpu_tasks.raise_runtime_error, "page 7 is broken", timeout_s=60)
        assert await asyncio.wait_for(beside, timeout=60) == "woke"
        assert await runner.run(cpu_tasks.square, 6, timeout_s=30) == 36
    finally:
        runner.close()


async def test_a_page_pdfium_cannot_load_is_a_corrupt_document_not_a_runtime_error(pdf_factory):
    """pdfium's page errors are converted to the project's error tree inside the worker."""
    from extract.errors import CorruptDocument

    pdf = pdf_factory("short.pdf", 2)
    runner = ProcessPoolRunner(1)
    try:
        with pytest.raises(CorruptDocument, match="page 999") as caught:
            await runner.run(cpu_tasks.fail_to_load_page, str(pdf), timeout_s=60)
        assert caught.value.error_type == "corrupt"
    finally:
        runner.close()


async def test_a_sniff_does_not_wait_behind_long_calls(tmp_path, pdf_factory):
    """Issue 19, item 5: the sniff that gates a whole document used to queue in the same pool as
    minute-long OCR calls. With the lanes, the long lane is full (one process busy, another call
    queued) and the sniff still answers while both long calls are pending."""
    import asyncio

    from extract.formats.sniff import sniff_file
    from infra.local.cpu_lanes import LanedCpu

    pdf = pdf_factory("memo.pdf", 1)
    cpu = LanedCpu(1)
    try:
        busy = [asyncio.ensure_future(cpu.run(cpu_tasks.sleep_for, 20, timeout_s=60))
                for _ in range(2)]  # OCR stands-in: the long lane is busy, and has a queue
        await asyncio.sleep(0.5)
        sniffed = await cpu.run(sniff_file, pdf, timeout_s=60)
        assert sniffed.format.value == "pdf"
        assert not any(call.done() for call in busy)  # the sniff did not wait for them
        for call in busy:
            call.cancel()
        await asyncio.gather(*busy, return_exceptions=True)
    finally:
        cpu.close()


async def test_the_offline_fields_rules_do_not_wait_behind_long_calls():
    """Issue 19, item 5: a document's result is published after its fields; the rules take
    milliseconds and ran in the pool behind OCR calls (results published ~44 s after their jobs
    succeeded). They answer from the short lane while the long lane is full."""
    import asyncio

    from extract.fields.base import PageText
    from extract.fields.rules.offline import run_rules
    from infra.local.cpu_lanes import LanedCpu

    pages = (PageText(1, "MUTUAL NON-DISCLOSURE AGREEMENT between Acme, Inc. and Beta LLC, dated "
                "January 5, 2020, governed by the laws of the State of Delaware."),)
    cpu = LanedCpu(1)
    try:
        busy = [asyncio.ensure_future(cpu.run(cpu_tasks.sleep_for, 20, timeout_s=60))
                for _ in range(2)]
        await asyncio.sleep(0.5)
        result = await cpu.run(run_rules, pages, timeout_s=60)
        assert result is not None
        assert not any(call.done() for call in busy)
        for call in busy:
            call.cancel()
        await asyncio.gather(*busy, return_exceptions=True)
    finally:
        cpu.close()


async def test_a_long_documents_fields_calls_leave_the_short_lane_to_the_others():
    """A data room's 363-page book took 4 s of rules in the short lane, and four one-page
    Office files waited 2.95 s behind it for their document-kind score. A long text's rules
    go to the documents lane (``extract.fields.long_text``), and a score asked while the short
    lane is busy may run in an idle documents process (``SPILL_CALLS``): a letter's score,
    asked while the book's rules run, answers before they end (it failed with both taken out;
    the routing by name is the next test's)."""
    import asyncio

    from extract.fields.base import PageText
    from extract.fields.kinds import kind_score
    from extract.fields.long_text import LONG_TEXT_CHARS
    from extract.fields.rules.offline import OffloadedRules
    from extract.fields.schemas import NdaFields
    from infra.local.cpu_lanes import LanedCpu

    clause = ("Section {n}. The Recipient shall hold the Confidential Information of Acme "
              "Widgets, Inc. in confidence for a period of two (2) years from March 3, 2015, "
              "under the laws of the State of New York. ")
    # Long enough that its rules still run when the letter's score is asked and answered
    # (80 pages took 0.13 s of rules once the scans stopped re-checking the text's UTF-8).
    book = [PageText(i + 1, "".join(clause.format(n=i * 20 + j) for j in range(20)))
            for i in range(1200)]
    assert sum(len(page.text) for page in book) > 3 * LONG_TEXT_CHARS
    letter = (PageText(1, "MUTUAL NON-DISCLOSURE AGREEMENT between Acme, Inc. and Beta LLC."),)
    cpu = LanedCpu(1)
    try:
        cpu.warm().join()
        rules = asyncio.ensure_future(OffloadedRules(cpu, 120).extract(book, NdaFields))
        await asyncio.sleep(0.3)  # the book's rules have started
        score = await cpu.run(kind_score, "nda", letter, timeout_s=60)
        assert 0.0 <= score <= 1.0
        assert not rules.done()  # the letter did not wait for the book
        rules.cancel()
        await asyncio.gather(rules, return_exceptions=True)
    finally:
        cpu.close()


def test_the_lanes_send_a_long_texts_fields_calls_with_its_other_work():
    from extract.fields.kinds import kind_score, kind_score_long_text
    from extract.fields.rules.offline import (
        run_rules,
        run_rules_long_text,
        run_rules_of_kind,
        run_rules_of_kind_long_text,
    )
    from infra.local.cpu_lanes import LanedCpu

    cpu = LanedCpu(1)
    assert cpu.lane(run_rules) is cpu.short and cpu.lane(kind_score) is cpu.short
    assert cpu.lane(run_rules_of_kind) is cpu.short
    assert cpu.lane(run_rules_long_text) is cpu.documents
    assert cpu.lane(kind_score_long_text) is cpu.documents
    assert cpu.lane(run_rules_of_kind_long_text) is cpu.documents


def test_closing_while_the_lanes_warm_leaves_no_lane_running():
    """A run stopped (SIGTERM) while its lanes are still being started: the warm-up is
    cancelled and waited for, so no pool it starts outlives the close (its workers are not
    daemons: the interpreter would wait for them at exit)."""
    from infra.local.cpu_lanes import LanedCpu

    cpu = LanedCpu(1)
    warming = cpu.warm()
    cpu.close()
    assert not warming.is_alive()
    assert all(lane._pool is None for lane in (cpu.short, cpu.scans, cpu.documents, cpu.uploads))


def test_a_blocking_call_whose_pool_is_stopped_meanwhile_returns_an_error():
    """The end of a run stops the pools while ingest's thread may be in a call: the call ends
    with a ``TransientError`` (ingest then does the work itself), never waits forever."""
    import threading
    import time

    import pytest

    from extract.errors import TransientError
    from infra.local.cpu import ProcessPoolRunner

    runner = ProcessPoolRunner(1)
    runner.warm()
    threading.Timer(0.5, runner.close).start()
    started = time.monotonic()
    with pytest.raises(TransientError):
        runner.call(time.sleep, 30)
    assert time.monotonic() - started < 15
    runner.close()


async def test_rules_waiting_for_the_short_lane_go_to_a_documents_process_left_idle():
    """The offline fields' calls (``SPILL_CALLS``) queued for the one short-lane process while
    the documents lane idled at the end of a run. One waiting for the short lane is handed to
    the documents lane the moment its process is left idle, and answers from there long before
    the short lane would have taken it."""
    import asyncio
    import time

    from infra.local.cpu_lanes import LanedCpu

    cpu = LanedCpu(1)
    try:
        documents_pid = await cpu.run(cpu_tasks.process_id, timeout_s=60)
        short_pid = await cpu.run(cpu_tasks.sniff_file, 0, timeout_s=60)
        # The short lane's gate full (a sniff running, one beside it), the documents lane busy.
        held = [asyncio.ensure_future(cpu.run(cpu_tasks.sniff_file, 3, timeout_s=60))
                for _ in range(2)]
        reading = asyncio.ensure_future(cpu.run(cpu_tasks.sleep_for, 0.5, timeout_s=60))
        await asyncio.sleep(0.2)
        started = time.monotonic()
        assert await cpu.run(cpu_tasks.kind_score, timeout_s=60) == documents_pid
        assert time.monotonic() - started < 2.5  # not after the short lane's 6 s of sniffs
        assert not any(call.done() for call in held)
        assert await reading == "woke"
        assert await asyncio.gather(*held) == [short_pid, short_pid]
    finally:
        cpu.close()


async def test_only_the_rules_spill_and_only_to_an_idle_documents_process():
    """A rules call made while the short lane's process is busy and a documents process idles
    runs there at once; a sniff (not a ``SPILL_CALLS`` call) waits for the short lane; with the
    short lane free, the rules stay in it."""
    import asyncio

    from infra.local.cpu_lanes import LanedCpu

    cpu = LanedCpu(1)
    try:
        documents_pid = await cpu.run(cpu_tasks.process_id, timeout_s=60)
        short_pid = await cpu.run(cpu_tasks.sniff_file, 0, timeout_s=60)
        assert documents_pid != short_pid
        assert await cpu.run(cpu_tasks.kind_score, timeout_s=60) == short_pid  # short lane free
        held = asyncio.ensure_future(cpu.run(cpu_tasks.sniff_file, 1.5, timeout_s=60))
        await asyncio.sleep(0.2)
        assert await cpu.run(cpu_tasks.kind_score, timeout_s=60) == documents_pid
        assert not held.done()
        assert await cpu.run(cpu_tasks.sniff_file, 0, timeout_s=60) == short_pid
        assert held.done()  # the sniff waited for the short lane's process
    finally:
        cpu.close()


async def test_rules_never_share_the_documents_lane_with_a_documents_work():
    """A documents process idles beside a read: the rules still wait for the short lane, as
    reads (a room's Office files, the NDAs' pages) must not wait behind them."""
    import asyncio

    from infra.local.cpu_lanes import LanedCpu

    cpu = LanedCpu(2)
    try:
        short_pid = await cpu.run(cpu_tasks.sniff_file, 0, timeout_s=60)
        reading = asyncio.ensure_future(cpu.run(cpu_tasks.sleep_for, 3, timeout_s=60))
        held = asyncio.ensure_future(cpu.run(cpu_tasks.sniff_file, 1, timeout_s=60))
        await asyncio.sleep(0.3)
        assert await cpu.run(cpu_tasks.kind_score, timeout_s=60) == short_pid
        assert held.done() and not reading.done()
        reading.cancel()
        await asyncio.gather(reading, return_exceptions=True)
    finally:
        cpu.close()


async def test_a_rules_call_ending_in_the_documents_lane_hands_the_process_to_the_next():
    """Rules calls waiting for the short lane follow one another through the documents lane's
    idle process, not only after a document's work there ends."""
    import asyncio
    import time

    from infra.local.cpu_lanes import LanedCpu

    cpu = LanedCpu(1)
    try:
        documents_pid = await cpu.run(cpu_tasks.process_id, timeout_s=60)
        await cpu.run(cpu_tasks.sniff_file, 0, timeout_s=60)
        held = [asyncio.ensure_future(cpu.run(cpu_tasks.sniff_file, 4, timeout_s=60))
                for _ in range(2)]
        await asyncio.sleep(0.2)
        started = time.monotonic()
        ran = await asyncio.gather(*(cpu.run(cpu_tasks.kind_score, 0.4, timeout_s=60)
                                     for _ in range(3)))
        assert ran == [documents_pid] * 3
        assert time.monotonic() - started < 3.0  # one after another there, not after 8 s
        assert not any(call.done() for call in held)
        for call in held:
            call.cancel()
        await asyncio.gather(*held, return_exceptions=True)
    finally:
        cpu.close()


@pytest.mark.parametrize("keep_file_work", [True, False])
async def test_the_lanes_stopped_before_a_runs_last_compaction_leave_the_file_work_lane_to_it(
        keep_file_work):
    """The end of a run stops the lanes before the lake's last compaction, which may be the
    file-work lane's: that lane alone still takes a call (when kept), and ``close`` ends
    every process, the stopped lanes' too."""
    import os

    from infra.local.cpu_lanes import LanedCpu

    cpu = LanedCpu(1)
    try:
        documents_pid = await cpu.run(cpu_tasks.process_id, timeout_s=30)
        short_pid = await cpu.run(cpu_tasks.sniff_file, 0.0, timeout_s=30)
        uploads_pid = cpu.file_work(os.getpid)
        cpu.stop_lanes(keep_file_work=keep_file_work)
        assert not cpu.documents.started and not cpu.short.started
        if keep_file_work:
            assert cpu.file_work(os.getpid) == uploads_pid  # the same process, still there
        else:
            assert not cpu.uploads.started
    finally:
        cpu.close()
    assert all(gone_within(pid, 10) for pid in (documents_pid, short_pid, uploads_pid))
    assert not any(lane.started for lane in (cpu.short, cpu.scans, cpu.express, cpu.documents,
                                             cpu.uploads))
