"""A batch of files is made durable by two syncs of its filesystem around the renames.

``infra.local.durable._published``: the contents synced before any final name exists (a crash
then leaves only temporaries, which no listing shows), the renames and new folders synced after;
no file or folder fsynced one by one. From two files (a unit's pages); a single file keeps its
fsync and its folder's.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from infra.local import durable
from infra.local.objectstore import FolderObjectStore


def _finals(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")
                  if p.is_file() and not p.name.startswith("."))


def _temporaries(root: Path) -> list[Path]:
    return [p for p in root.rglob(".*.tmp")]


@pytest.fixture
def recorded(monkeypatch, tmp_path):
    """Each filesystem sync, with the final names and temporaries that existed when it ran;
    each fsync of a folder or a file."""
    if not durable._syncfs_for([tmp_path]):
        pytest.skip("no syncfs here (not Linux 5.8 or later, or a filesystem not known to "
                    "honour it): batches are fsynced file by file")
    root = tmp_path / "objects"
    calls: list[tuple[list[str], int]] = []
    real_sync = durable.sync_filesystems

    def sync(folders):
        folders = list(folders)
        calls.append((_finals(root), len(_temporaries(root))))
        real_sync(folders)

    fsynced: list[object] = []
    real_fsync = os.fsync
    monkeypatch.setattr(durable, "sync_filesystems", sync)
    monkeypatch.setattr(durable, "fsync_dir", lambda folder: fsynced.append(folder))
    monkeypatch.setattr(durable.os, "fsync", lambda fd: (fsynced.append(fd), real_fsync(fd)))
    return root, calls, fsynced


def _pages(documents: int, pages: int = 6) -> list[tuple[str, bytes, dict[str, str]]]:
    return [(f"pages/d{d}/j/{n:05d}.md", f"page {n} of {d}".encode(), {"chars": "9"})
            for d in range(documents) for n in range(1, pages + 1)]


@pytest.mark.parametrize("documents, pages", [(16, 6), (1, 5), (1, 2)],
                         ids=["a drop's first pages", "a unit's pages", "two files"])
def test_a_batch_is_synced_before_and_after_its_renames(recorded, documents, pages):
    root, calls, fsynced = recorded
    store = FolderObjectStore(root)
    objects = _pages(documents, pages)
    store.put_many(objects)
    assert len(calls) == 2
    before, after = calls
    assert before == ([], len(objects))  # every content synced while no final name existed
    assert after == (sorted(k for k, _, _ in objects), 0)  # the renames synced after
    assert fsynced == []  # no file or folder fsynced one by one
    last = f"pages/d{documents - 1}/j/{pages:05d}.md"
    assert store.get(last) == f"page {pages} of {documents - 1}".encode()
    assert store.head(last) == {"chars": "9"}
    assert oct((root / "pages" / f"d{documents - 1}").stat().st_mode & 0o777) == oct(0o700)


def test_a_single_file_keeps_its_fsync(recorded):
    root, calls, fsynced = recorded
    FolderObjectStore(root).put_many(_pages(1, pages=1))
    assert calls == []
    assert len(fsynced) >= 1 + 1  # the file, and at least its folder


def test_a_failed_sync_leaves_no_final_name_and_no_temporary(recorded, monkeypatch):
    root, _, _ = recorded

    def failing(descriptor: int) -> int:
        return -1

    monkeypatch.setattr(durable, "_syncfs", lambda: failing)  # the recorder calls the real one
    store = FolderObjectStore(root)
    with pytest.raises(OSError, match="syncfs"):
        store.put_many(_pages(16))
    assert _finals(root) == []
    assert _temporaries(root) == []


def test_a_large_copy_batch_with_a_source_gone_stores_none(recorded, tmp_path):
    root, calls, _ = recorded
    sources = []
    for n in range(20):
        source = tmp_path / f"in{n}.pdf"
        source.write_bytes(b"%PDF-1.7 " + bytes([n]))
        sources.append((f"uploads/d{n}/j", source))
    sources[13][1].unlink()
    with pytest.raises(FileNotFoundError):
        FolderObjectStore(root).put_files(sources)
    assert _finals(root) == [] and _temporaries(root) == []
    sources[13][1].write_bytes(b"%PDF-1.7 back")
    FolderObjectStore(root).put_files(sources)
    assert FolderObjectStore(root).get("uploads/d13/j") == b"%PDF-1.7 back"
    assert calls[-1][0] == sorted(k for k, _ in sources)


def test_no_syncfs_before_linux_5_8(monkeypatch):
    probe = durable._syncfs.__wrapped__
    monkeypatch.setattr(durable.os, "uname", lambda: os.uname_result(
        ("Linux", "host", "5.4.0-150-generic", "#1", "x86_64")))
    assert probe() is None
    monkeypatch.setattr(durable.os, "uname", lambda: os.uname_result(
        ("Darwin", "host", "23.1.0", "#1", "arm64")))
    assert probe() is None


def test_a_filesystem_not_known_to_honour_syncfs_keeps_the_fsyncs(monkeypatch):
    """A FUSE mount (which may return from ``syncfs`` without asking its server) is judged by
    the longest mount point holding the folder; a folder not made yet by its nearest parent."""
    monkeypatch.setattr(durable, "_mounts", lambda: [("/mnt/remote", "fuse.sshfs"),
                                                     ("/", "ext4")])
    judge = durable._mount_honours_syncfs
    assert judge("/mnt/remote/home/objects") is False
    assert judge("/mnt/remote") is False
    assert judge("/mnt/remotely/objects") is True  # another folder, on the root's ext4
    assert judge("/srv/home") is True
    monkeypatch.setattr(durable, "_mounts", lambda: [])
    assert judge("/srv/home") is False  # no mount table: fsyncs


def test_a_large_batch_on_such_a_filesystem_is_fsynced_file_by_file(tmp_path, monkeypatch):
    monkeypatch.setattr(durable, "_mount_honours_syncfs", lambda folder: False)
    monkeypatch.setattr(durable, "_honoured", {})  # judged anew, not from this process's cache
    synced: list[object] = []
    monkeypatch.setattr(durable, "sync_filesystems", lambda folders: synced.append(folders))
    store = FolderObjectStore(tmp_path / "objects" / "not" / "made" / "yet")
    store.put_many(_pages(16))
    assert synced == []
    assert store.get("pages/d3/j/00002.md") == b"page 2 of 3"


def test_a_large_batch_written_while_much_else_waits_for_write_back_is_fsynced_file_by_file(
        tmp_path, monkeypatch):
    """``syncfs`` writes back the whole filesystem: a run's batch must not wait for a
    gigabyte of a user's fresh copy. Past ``SYNCFS_MAX_DIRTY_BYTES`` pending on the machine,
    the batch's own files are fsynced instead; below it, the two syncs are kept."""
    if not durable._syncfs_for([tmp_path]):
        pytest.skip("no syncfs here: every batch is fsynced file by file")
    synced: list[object] = []
    real_sync = durable.sync_filesystems
    monkeypatch.setattr(durable, "sync_filesystems",
                        lambda folders: (synced.append(folders), real_sync(folders)))
    pending = durable.SYNCFS_MAX_DIRTY_BYTES + 1
    monkeypatch.setattr(durable, "_dirty_bytes", lambda: pending)
    busy = FolderObjectStore(tmp_path / "busy")
    busy.put_many(_pages(16))
    assert synced == []
    assert busy.get("pages/d3/j/00002.md") == b"page 2 of 3"
    pending = durable.SYNCFS_MAX_DIRTY_BYTES
    FolderObjectStore(tmp_path / "quiet").put_many(_pages(16))
    assert len(synced) == 2


def test_the_write_back_pending_is_read_from_the_kernels_counters(tmp_path):
    """Dirty and Writeback of ``/proc/meminfo``, in bytes; None where it cannot be read."""
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       24000000 kB\nDirty:              1500 kB\n"
                       "Writeback:            12 kB\nWritebackTmp:        999 kB\n")
    assert durable._dirty_bytes(str(meminfo)) == (1500 + 12) * 1024
    assert durable._dirty_bytes(str(tmp_path / "absent")) is None
    if Path("/proc/meminfo").exists():
        assert durable._dirty_bytes() is not None
