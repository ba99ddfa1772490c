"""Ingest's file work (hashing, storing uploads) runs in a worker process in the local runtime:
the main process decides and records only, and a file's facts are the same as before."""

from __future__ import annotations

import hashlib
import os

import pytest

from extract.errors import TransientError
from infra.local.pooled_uploads import PooledUploads
from lake.layout import upload_key


def _refuse_in_this_process(monkeypatch):
    """Make hashing and copying raise if this (the main) process does them: a worker process,
    forked from the fork server, does not see the patch."""
    import infra.local.durable
    import ingest.fingerprint

    def refuse(*args, **kwargs):
        raise AssertionError("the main process read an upload's bytes")

    monkeypatch.setattr(ingest.fingerprint, "fingerprint", refuse)
    monkeypatch.setattr(infra.local.durable, "copy_many", refuse)


def test_a_runtime_ingest_hashes_and_stores_in_a_worker_with_the_files_facts(
        tmp_path, settings, monkeypatch):
    from infra.local.runtime import LocalRuntime

    room = tmp_path / "room"
    room.mkdir()
    (room / "a.pdf").write_bytes(b"%PDF-1.4 first\n")
    (room / "b.pdf").write_bytes(b"%PDF-1.4 second, longer\n")
    (tmp_path / "link-to-room").symlink_to(room)
    monkeypatch.chdir(tmp_path)  # relative paths: the worker's working folder is not this one
    runtime = LocalRuntime(settings)
    try:
        runtime.cpu.warm().join()  # the lane has started: no batch is done here
        _refuse_in_this_process(monkeypatch)
        planner = runtime.planner()
        results = planner.ingest_many([os.path.join("link-to-room", "a.pdf"),
                                       os.path.join("room", "b.pdf")])
        documents = [runtime.store.get_document(r.document_id) for r in results]
    finally:
        runtime.close()
    assert [r.outcome.value for r in results] == ["new", "new"]
    for result, document, name in zip(results, documents, ("a.pdf", "b.pdf"), strict=True):
        data = (room / name).read_bytes()
        assert document.sha256 == hashlib.sha256(data).hexdigest()
        assert document.bytes == len(data)
        assert document.source_key == str(room.resolve() / name)  # the real path, absolute
        assert runtime.objects.get(upload_key(result.document_id, result.job_id)) == data


def test_a_file_gone_before_its_turn_stops_ingest_with_its_error(tmp_path, settings):
    from infra.local.runtime import LocalRuntime

    runtime = LocalRuntime(settings)
    try:
        with pytest.raises(FileNotFoundError):
            runtime.planner().ingest_many([tmp_path / "never-there.pdf"])
    finally:
        runtime.close()


class _DeadLane:
    """A CPU runner whose process dies on every call (what ``ProcessPoolRunner.call`` raises)."""

    uploads_started = True  # its process exists, so every batch is sent to it

    def __init__(self) -> None:
        self.calls = 0

    def call(self, fn, *args, timeout_s=None):
        self.calls += 1
        raise TransientError("the worker process died (exit code -9)", error_type="worker_crashed")


def test_work_the_lane_cannot_finish_is_done_on_ingest_thread(tmp_path):
    from infra.local.objectstore import FolderObjectStore

    source = tmp_path / "a.pdf"
    source.write_bytes(b"%PDF-1.4 body\n")
    objects = FolderObjectStore(tmp_path / "objects")
    lane = _DeadLane()
    uploads = PooledUploads(lane)
    (found,) = uploads.fingerprints([source], None)
    uploads.store(objects, [("uploads/x/a.pdf", source)], 1024)
    uploads.close()
    assert lane.calls == 2
    assert found.sha256 == hashlib.sha256(b"%PDF-1.4 body\n").hexdigest() and found.bytes == 14
    assert objects.get("uploads/x/a.pdf") == b"%PDF-1.4 body\n"


def test_ingest_after_a_run_closed_its_pools_still_stores_and_close_stops_the_lane(
        tmp_path, settings):
    """A run's end closes its process pools while ingest may still finish the batch in hand:
    that batch is stored all the same, and closing the runtime stops the lane it started."""
    from infra.local.pooled_uploads import HERE_UNTIL_STARTED
    from infra.local.runtime import LocalRuntime

    sources = []
    for number in range(HERE_UNTIL_STARTED + 1):  # more than is done here before a start
        sources.append(tmp_path / f"late-{number}.pdf")
        sources[-1].write_bytes(b"%%PDF-1.4 late %d\n" % number)
    runtime = LocalRuntime(settings)
    planner = runtime.planner()
    runtime.cpu.close()  # what the end of ``process`` does
    results = planner.ingest_many(sources)
    for source, result in zip(sources, results, strict=True):
        key = upload_key(result.document_id, result.job_id)
        assert runtime.objects.get(key) == source.read_bytes()
    assert runtime.cpu.uploads._pool is not None  # started again for that batch
    runtime.close()
    assert runtime.cpu.uploads._pool is None


def test_a_file_named_twice_in_one_batch_is_one_job(tmp_path, settings):
    from infra.local.runtime import LocalRuntime

    source = tmp_path / "twice.pdf"
    source.write_bytes(b"%PDF-1.4 twice\n")
    runtime = LocalRuntime(settings)
    try:
        first, second = runtime.planner().ingest_many([source, source])
        jobs = runtime.store.list_jobs()
    finally:
        runtime.close()
    assert (first.outcome.value, second.outcome.value) == ("new", "duplicate")
    assert first.job_id == second.job_id and [j.job_id for j in jobs] == [first.job_id]


def test_a_size_limit_above_what_a_worker_may_write_stores_on_ingest_thread(tmp_path):
    """Worker processes may write no file over ``MAX_WORKER_FILE_BYTES``: with a larger limit
    (or none) the uploads are copied on ingest's own thread, never refused by the worker."""
    from infra.local.cpu import MAX_WORKER_FILE_BYTES
    from infra.local.objectstore import FolderObjectStore

    source = tmp_path / "a.pdf"
    source.write_bytes(b"%PDF-1.4 big limit\n")
    objects = FolderObjectStore(tmp_path / "objects")
    lane = _DeadLane()
    uploads = PooledUploads(lane)
    uploads.store(objects, [("uploads/x/a.pdf", source)], MAX_WORKER_FILE_BYTES + 1)
    uploads.store(objects, [("uploads/y/a.pdf", source)], None)
    assert lane.calls == 0
    assert objects.get("uploads/x/a.pdf") == objects.get("uploads/y/a.pdf") == source.read_bytes()


class _UnstartedLane:
    """A runtime's CPU whose uploads lane has no process yet: any call to it is counted."""

    uploads_started = False

    def __init__(self) -> None:
        self.calls = 0

    def call(self, fn, *args, timeout_s=None):
        self.calls += 1
        raise AssertionError("a small batch waited for the lane's start")


def test_a_small_batch_before_the_lane_has_started_is_done_on_ingest_thread(tmp_path):
    """A run's first batches (one file, then two, ...) do not wait for the uploads lane's
    process to be forked: their few files are hashed and stored here; a larger one goes to it."""
    from infra.local.objectstore import FolderObjectStore
    from infra.local.pooled_uploads import HERE_UNTIL_STARTED

    source = tmp_path / "a.pdf"
    source.write_bytes(b"%PDF-1.4 early\n")
    objects = FolderObjectStore(tmp_path / "objects")
    lane = _UnstartedLane()
    uploads = PooledUploads(lane)
    (found,) = uploads.fingerprints([source], 1024)
    uploads.store(objects, [("uploads/x/a.pdf", source)], 1024)
    assert lane.calls == 0
    assert found.sha256 == hashlib.sha256(b"%PDF-1.4 early\n").hexdigest()
    assert objects.get("uploads/x/a.pdf") == source.read_bytes()
    with pytest.raises(AssertionError, match="waited for the lane"):
        uploads.fingerprints([source] * (HERE_UNTIL_STARTED + 1), 1024)
    uploads.close()
