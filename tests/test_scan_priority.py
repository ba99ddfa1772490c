"""OCR runs at a lower priority than everything else a run does: the scans lane's processes (and
the tesseract each starts) take only the CPU that conversions, text layers, sheets, the rules
and the run's own process leave (``infra.local.cpu_lanes.SCANS_NICE``)."""

from __future__ import annotations

import os

from infra.local.cpu import ProcessPoolRunner
from infra.local.cpu_lanes import SCANS_NICE, LanedCpu


def _niceness() -> int:
    return os.nice(0)


def _niceness_of_a_child() -> int:
    """What a program the worker starts (tesseract) runs at."""
    import subprocess
    import sys

    return int(subprocess.run([sys.executable, "-c", "import os; print(os.nice(0))"],
                              capture_output=True, text=True, check=True).stdout)


def test_a_runner_with_nice_runs_its_calls_and_their_children_at_a_lower_priority():
    here = os.nice(0)
    lowered = ProcessPoolRunner(1, nice=5)
    plain = ProcessPoolRunner(1)
    try:
        assert lowered.call(_niceness) == min(here + 5, 19)
        assert lowered.call(_niceness_of_a_child) == min(here + 5, 19)
        assert plain.call(_niceness) == here
    finally:
        lowered.close()
        plain.close()


def test_only_the_scans_lane_is_lowered():
    cpu = LanedCpu(1)
    assert SCANS_NICE > 0
    assert cpu.scans.nice == SCANS_NICE
    assert cpu.documents.nice == cpu.short.nice == cpu.uploads.nice == 0
    cpu.close()



def test_only_the_ocr_of_a_page_runs_in_the_scans_lane():
    """The glance that finds a page with no picture, or a blank one, takes milliseconds: it
    does not wait behind OCR pages of seconds (a one-page file with no text layer did, 2.5 s)."""
    from extract.readers.ocr import _ocr_one, look_at_pages
    from extract.readers.text import count_pages

    cpu = LanedCpu(1)
    try:
        assert cpu.lane(_ocr_one) is cpu.scans
        assert cpu.lane(look_at_pages) is cpu.documents
        assert cpu.lane(count_pages) is cpu.short
    finally:
        cpu.close()


def _ocr_one(seconds: float) -> int:
    """Named as the OCR of a page (the lanes route by name): sleeps, returns its process."""
    import time

    time.sleep(seconds)
    return os.getpid()


def test_a_page_that_goes_first_does_not_wait_for_a_running_scan_page():
    """A one-page document's OCR page, while every scans process runs a larger scan's page, is
    taken at once by the express lane: it ends while the scan's page still runs (it waited for
    that page before: 3.5 s in a room)."""
    import asyncio

    from infra.local.cpu_priority import CALL_KEY

    async def scenario() -> tuple[int, int, bool]:
        cpu = LanedCpu(1)
        try:
            token = CALL_KEY.set(100.0)  # the scan: more pages left, a larger key
            scan_page = asyncio.create_task(cpu.run(_ocr_one, 60.0, timeout_s=120))
            CALL_KEY.reset(token)
            while cpu.scans.gate.admitted < 1:
                await asyncio.sleep(0.01)
            token = CALL_KEY.set(1.0)  # the letter
            letter = await cpu.run(_ocr_one, 0.0, timeout_s=120)
            CALL_KEY.reset(token)
            scan_still_running = not scan_page.done()
            scan_page.cancel()
            return letter, cpu.express.gate.admitted, scan_still_running
        finally:
            cpu.close()

    letter_process, express_busy_after, scan_still_running = asyncio.run(scenario())
    assert scan_still_running
    assert letter_process > 0 and express_busy_after == 0


def test_only_a_page_that_goes_before_every_scans_page_takes_the_express_lane():
    """The express lane adds preemption, not a second queue: a page with a larger key than a
    running one, or with one as small waiting, waits in the scans lane's order; so does any
    page while the express lane is busy."""
    import asyncio

    async def scenario() -> list[str]:
        cpu = LanedCpu(1)
        names = {id(cpu.scans): "scans", id(cpu.express): "express"}
        seen: list[str] = []
        try:
            seen.append(names[id(cpu.lane_now(_ocr_one, 1.0))])  # the scans lane has room
            await cpu.scans.gate.acquire(50.0)  # a page of key 50 runs there: the lane is full
            seen.append(names[id(cpu.lane_now(_ocr_one, 60.0))])  # goes after it
            seen.append(names[id(cpu.lane_now(_ocr_one, 50.0))])  # a tie: arrival order
            seen.append(names[id(cpu.lane_now(_ocr_one, 1.0))])  # goes before it
            waiter = asyncio.create_task(cpu.scans.gate.acquire(2.0))
            await asyncio.sleep(0)
            seen.append(names[id(cpu.lane_now(_ocr_one, 3.0))])  # a page of key 2 waits first
            seen.append(names[id(cpu.lane_now(_ocr_one, 1.0))])  # before that one too
            await cpu.express.gate.acquire(0.5)  # the express lane is busy
            seen.append(names[id(cpu.lane_now(_ocr_one, 1.0))])
            waiter.cancel()
            return seen
        finally:
            cpu.close()

    assert asyncio.run(scenario()) == ["scans", "scans", "scans", "express", "scans", "express",
                                       "scans"]
