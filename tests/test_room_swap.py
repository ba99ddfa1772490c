"""A room that changes while it is read: a folder exchanged for a link to an outside folder.

The probe: with ``room/z`` exchanged in a loop (``renameat2(RENAME_EXCHANGE)``) with a link to
an outside folder, a plain walk listed the outside folder's files under ``z`` and opened them
through the link (``O_NOFOLLOW`` checks only the last component): the outside file was ingested
in 3 of 4 runs. The walk now goes by descriptors and every open refuses a link anywhere on the
path, so nothing from outside is ever read, however the race falls.
"""

from __future__ import annotations

import ctypes
import os
import threading
import time
from pathlib import Path

import pytest

from ingest.planner import walk_sources
from lake.files import open_regular

AT_FDCWD = -100
RENAME_EXCHANGE = 2
MARKER = b"SWAP-OUTSIDE-8812"

_libc = ctypes.CDLL(None, use_errno=True)


def exchange(a: Path, b: Path) -> None:
    """Swap two names atomically (Linux ``renameat2`` with ``RENAME_EXCHANGE``)."""
    if _libc.renameat2(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b),
                       RENAME_EXCHANGE) != 0:
        error = ctypes.get_errno()
        raise OSError(error, os.strerror(error))


def _can_exchange(folder: Path) -> bool:
    first, second = folder / "x1", folder / "x2"
    first.mkdir()
    second.symlink_to(folder)
    try:
        exchange(first, second)
        return True
    except (OSError, AttributeError):
        return False
    finally:
        for path in (first, second):
            if path.is_symlink():
                path.unlink()
            else:
                path.rmdir()


def all_bytes_under(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file() and
                    not p.is_symlink())


@pytest.fixture
def swapping_room(tmp_path):
    """``room/z`` (ten inside files) and ``room/zlink`` (a link to ``outside``, whose files have
    the same names and the marker), exchanged by a thread as fast as it can until the test
    ends."""
    if not _can_exchange(tmp_path):
        pytest.skip("renameat2(RENAME_EXCHANGE) is not available here")
    outside, room = tmp_path / "outside", tmp_path / "room"
    (room / "z").mkdir(parents=True)
    outside.mkdir()
    for i in range(10):
        (room / "z" / f"f{i}.txt").write_text(f"inside {i}\n")
        (outside / f"f{i}.txt").write_bytes(MARKER + f" {i}\n".encode())
        (outside / f"only-outside-{i}.txt").write_bytes(MARKER + b" only\n")
    (room / "zlink").symlink_to(outside, target_is_directory=True)
    stop = threading.Event()
    swaps = [0]

    def swap() -> None:
        while not stop.is_set():
            exchange(room / "z", room / "zlink")
            swaps[0] += 1

    thread = threading.Thread(target=swap, daemon=True)
    thread.start()
    yield room
    stop.set()
    thread.join()
    assert swaps[0] > 100  # the race really ran


INSIDE = {f"inside {i}\n".encode() for i in range(10)}


def test_links_in_a_room_are_listed_as_skipped_and_never_walked(tmp_path):
    """The still case, counted: the walk lists exactly the room's own files, and each link (to
    a file, to a folder) as skipped, whatever is behind it."""
    from ingest.planner import SKIP_LINK

    outside, room = tmp_path / "outside", tmp_path / "room"
    (room / "sub").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.txt").write_bytes(MARKER)
    (room / "a.txt").write_text("a\n")
    (room / "sub" / "b.txt").write_text("b\n")
    (room / "file-link.txt").symlink_to(outside / "secret.txt")
    (room / "folder-link").symlink_to(outside, target_is_directory=True)
    walk = walk_sources([room])
    assert sorted(name for _, name in walk.files) == ["a.txt", "sub/b.txt"]
    assert sorted((p.name, why) for p, why in walk.skipped) == [
        ("file-link.txt", SKIP_LINK), ("folder-link", SKIP_LINK)]


def test_a_walk_and_its_opens_never_read_outside_while_a_folder_is_swapped(swapping_room):
    """Every inside file is read at least once over the walks (a walk that reads nothing
    fails), and no read ever returns an outside file's bytes."""
    deadline = time.monotonic() + 3
    walks, read, refused = 0, set(), 0
    while time.monotonic() < deadline or walks < 20:
        for path, _ in walk_sources([swapping_room]).files:
            try:
                fd = open_regular(path)
            except OSError:
                refused += 1  # a link met on the way, or the name gone: skipped, never followed
                continue
            with os.fdopen(fd, "rb") as handle:
                read.add(handle.read())
        walks += 1
    assert read == INSIDE, (sorted(read), refused)


def test_a_run_over_a_swapping_room_ingests_nothing_from_outside(swapping_room, settings):
    """The ten inside files are stored (counted by their own bytes in the home), the outside
    ones never."""
    from infra.local.runtime import LocalRuntime

    runtime = LocalRuntime(settings)
    planner = runtime.planner()
    deadline = time.monotonic() + 3
    stored: set[bytes] = set()
    while time.monotonic() < deadline or stored != INSIDE:
        files = walk_sources([swapping_room]).files
        planner.ingest_many([p for p, _ in files], source_paths=dict(files))
        stored = {b for b in contents_under(settings.home) if b in INSIDE}
        assert time.monotonic() < deadline + 60, f"only {len(stored)} of 10 inside files stored"
    planner.close()
    assert MARKER not in all_bytes_under(settings.home)


def contents_under(folder: Path) -> set[bytes]:
    return {p.read_bytes() for p in folder.rglob("*") if p.is_file() and not p.is_symlink()}


def test_a_file_rewritten_between_its_hash_and_its_copy_is_not_stored(tmp_path, settings):
    """The bytes stored are the bytes hashed: the copy hashes as it goes and must match."""
    from infra.local.runtime import LocalRuntime
    from ingest.fingerprint import ThreadedUploads
    from ingest.planner import SKIP_CHANGED, Planner

    class RewriteBeforeCopy(ThreadedUploads):
        def store(self, objects, uploads, max_bytes, digests=None):
            for _, path in uploads:
                if path.name == "a.txt":
                    path.write_bytes(MARKER + b" rewritten in place")
            return super().store(objects, uploads, max_bytes, digests)

    room = tmp_path / "room"
    room.mkdir()
    (room / "a.txt").write_text("the bytes that were hashed\n")
    (room / "b.txt").write_text("a file left alone\n")
    runtime = LocalRuntime(settings)
    try:
        planner = Planner(runtime.store, runtime.objects, runtime.queue, runtime.writer.write,
                          uploads=RewriteBeforeCopy())
        files = walk_sources([room]).files
        results = planner.ingest_many([p for p, _ in files], source_paths=dict(files))
        assert [r.source_name for r in results] == ["b.txt"]
        assert [(p.name, reason) for p, reason in planner.skipped] == [("a.txt", SKIP_CHANGED)]
        assert [job.source_name for job in runtime.store.list_jobs()] == ["b.txt"]
    finally:
        runtime.close()
    assert MARKER not in all_bytes_under(settings.home)
