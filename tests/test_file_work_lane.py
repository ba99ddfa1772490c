"""The lake's compaction, after a run and in the background, is done by the file-work lane's
worker process, not by the process that coordinates the run; its outcome is the same."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from lake import compaction
from lake.events import PageRead
from lake.layout import COMPACTED_PREFIX


def _small_files(runtime, count: int) -> None:
    at = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
    for number in range(count):  # one flush each: one small file each in one partition
        runtime.writer.write([PageRead(job_id="j", unit_id="u", page_number=number + 1,
                                       reader="text", chars=10,
                                       occurred_at=at + timedelta(seconds=number))])


def _page_files(settings) -> list[str]:
    from pathlib import Path

    return sorted(p.name for p in Path(settings.lake).rglob("*.parquet")
                  if "event_type=page_read" in str(p))


def _merged_into_one(settings, report, files_before: int) -> None:
    """The compaction's report names ``files_before`` files merged into one, which is there."""
    assert report is not None and report.files_before == files_before
    assert report.files_after == 1
    (merged,) = _page_files(settings)
    assert merged.startswith(COMPACTED_PREFIX)


def _every_partition_due(settings):
    """The run's end merges a partition from ``compact_after_run_min_files`` files; these tests
    write two or three."""
    return settings.model_copy(update={"compact_after_run_min_files": 2})


def _refuse_here(monkeypatch) -> None:
    """Compaction raises if this process does it; the worker, forked from the fork server,
    does not see the patch."""
    def refuse(*args, **kwargs):
        raise AssertionError("the coordinating process compacted")

    monkeypatch.setattr(compaction, "compact", refuse)


def test_after_a_run_the_lake_is_compacted_by_a_worker(settings, monkeypatch):
    from infra.local import runtime as runtime_module
    from infra.local.runtime import LocalRuntime

    monkeypatch.setattr(runtime_module, "COMPACT_HERE_BELOW_FILES", 3)  # a run of many files
    settings = _every_partition_due(settings)
    runtime = LocalRuntime(settings)
    try:
        _small_files(runtime, 3)
        assert len(_page_files(settings)) == 3
        _refuse_here(monkeypatch)
        report = runtime.compact_lake()
    finally:
        runtime.close()
    _merged_into_one(settings, report, 3)


def test_background_compaction_runs_in_a_worker(settings, monkeypatch):
    from infra.local.runtime import LocalRuntime

    runtime = LocalRuntime(settings)
    runtime.writer.compact_after_files = 3
    try:
        _refuse_here(monkeypatch)
        _small_files(runtime, 3)  # the third file starts a background compaction
        runtime.writer.wait_for_compaction()
    finally:
        runtime.close()
    assert runtime.writer.stats.compactions == 1
    (merged,) = _page_files(settings)
    assert merged.startswith(COMPACTED_PREFIX)


def test_a_run_of_few_files_is_compacted_here_without_the_lane(settings):
    """Starting the lane's process again after the run costs more than a few files' merge."""
    from infra.local.runtime import LocalRuntime

    settings = _every_partition_due(settings)
    runtime = LocalRuntime(settings)
    try:
        _small_files(runtime, 2)
        report = runtime.compact_lake()
        assert not runtime.cpu.uploads_started
    finally:
        runtime.close()
    assert report is not None and report.files_after == 1


def test_a_compaction_the_worker_cannot_do_is_done_here(settings, monkeypatch):
    from infra.local import runtime as runtime_module
    from infra.local.runtime import LocalRuntime

    monkeypatch.setattr(runtime_module, "COMPACT_HERE_BELOW_FILES", 2)

    settings = _every_partition_due(settings)
    runtime = LocalRuntime(settings)

    def dead_lane(fn, *args):
        raise RuntimeError("the worker process died")

    runtime.cpu.file_work = dead_lane  # what both paths call
    runtime.writer.compact_in = dead_lane
    try:
        _small_files(runtime, 2)
        report = runtime.compact_lake()
    finally:
        runtime.close()
    assert report is not None and report.files_after == 1
    assert len(_page_files(settings)) == 1


def test_a_run_that_ends_on_its_own_compacts_before_its_workers_stop(settings, monkeypatch):
    """``process(compact_lake=True)``: the lane that compacts is the run's own, still running;
    a run without it (or stopped by a signal) leaves the files to the next compaction."""
    import asyncio

    from infra.local import runtime as runtime_module
    from infra.local.runtime import LocalRuntime

    monkeypatch.setattr(runtime_module, "COMPACT_HERE_BELOW_FILES", 3)
    settings = _every_partition_due(settings)
    runtime = LocalRuntime(settings)
    try:
        _small_files(runtime, 3)
        asyncio.run(runtime.process(lambda: True))
        assert len(_page_files(settings)) == 3  # not asked: nothing merged
        asyncio.run(runtime.process(lambda: True, compact_lake=True))
    finally:
        runtime.close()
    (merged,) = _page_files(settings)
    assert merged.startswith(COMPACTED_PREFIX)


def test_the_other_lanes_wind_down_while_the_runs_last_compaction_goes_on(settings, monkeypatch):
    """Their pools' threads take up to a tenth of a second to notice a stop: stopped before
    the compaction, they end meanwhile, not after it. The file-work lane stays for a run of
    many files, whose compaction it does."""
    import asyncio

    from infra.local import runtime as runtime_module
    from infra.local.runtime import LocalRuntime

    monkeypatch.setattr(runtime_module, "COMPACT_HERE_BELOW_FILES", 3)
    settings = _every_partition_due(settings)
    runtime = LocalRuntime(settings)
    seen = {}
    compact = runtime.compact_lake

    def watched():
        lanes = runtime.cpu
        seen.update(documents=lanes.documents.started, short=lanes.short.started,
                    uploads=lanes.uploads.started)
        return compact()

    runtime.compact_lake = watched
    try:
        runtime.cpu.warm().join()
        assert runtime.cpu.documents.started and runtime.cpu.uploads.started
        _small_files(runtime, 3)
        asyncio.run(runtime.process(lambda: True, compact_lake=True))
    finally:
        runtime.close()
    assert seen == {"documents": False, "short": False, "uploads": True}
    (merged,) = _page_files(settings)
    assert merged.startswith(COMPACTED_PREFIX)


def test_a_background_compaction_still_running_at_the_runs_end_is_finished_not_killed(
        settings, monkeypatch, caplog):
    """The run's end stops the file-work lane before its last compaction when that one is
    done here (a run of few files): a background compaction in that lane ends first. Killed by
    the stop, it was redone here beside the last one, on the same partitions."""
    import asyncio
    import logging

    from infra.local.runtime import LocalRuntime

    runtime = LocalRuntime(settings)
    runtime.writer.compact_after_files = 3
    try:
        runtime.cpu.warm().join()
        with caplog.at_level(logging.WARNING, logger="lake.writer"):
            _small_files(runtime, 3)  # the third file starts a compaction in the lane
            asyncio.run(runtime.process(lambda: True, compact_lake=True))
    finally:
        runtime.close()
    assert not [r for r in caplog.records if "compacting here" in r.getMessage()]
    assert runtime.writer.stats.compactions == 1
    (merged,) = _page_files(settings)
    assert merged.startswith(COMPACTED_PREFIX)


def test_a_runs_end_leaves_partitions_of_fewer_files_than_its_threshold(settings, monkeypatch):
    """Merging a partition of a few small files costs the run's end more than it saves a
    query: below ``compact_after_run_min_files`` it is left, and compaction's own code is not
    even imported; from it, the partition is merged."""
    import sys

    from infra.local.runtime import LocalRuntime

    settings = settings.model_copy(update={"compact_after_run_min_files": 4})
    runtime = LocalRuntime(settings)
    try:
        _small_files(runtime, 3)
        monkeypatch.delitem(sys.modules, "lake.compaction")
        assert runtime.compact_lake() is None
        assert "lake.compaction" not in sys.modules
        assert len(_page_files(settings)) == 3
        _small_files(runtime, 1)
        report = runtime.compact_lake()
    finally:
        runtime.close()
    _merged_into_one(settings, report, 4)
