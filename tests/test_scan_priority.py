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
