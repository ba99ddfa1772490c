"""The lake's partition folders as a listing sees them, and which of them are due a compaction.

Apart from compaction's file work (``lake.compaction_files``, which reads and writes Parquet)
because a run's end asks only the listing's question, "is any partition worth merging?", and
most short runs answer no: asked here, the answer costs a listing of the partition folders and
no import of compaction's own code (pyarrow's compute functions among it, 0.03 s).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lake.layout import EVENTS_PREFIX

if TYPE_CHECKING:  # imported where a listing is made: the settings read AFTER_RUN_MIN_FILES
    import pyarrow.fs as pafs

__all__ = ["TMP_PREFIX", "AFTER_RUN_MIN_FILES", "basename", "is_data_file", "is_tmp_file",
           "event_types", "partitions", "partition_due", "partitions_due"]

TMP_PREFIX = ".tmp-"

AFTER_RUN_MIN_FILES = 16
"""Data files a partition holds from which a run's end compacts it (``Settings``'s
``compact_after_run_min_files``). A query pays an open and a footer read a file: over the 11
tables of a text run of 84 documents, all events read with DuckDB in 10.2 ms from the 70 files
the run wrote against 3.3 ms from the 11 compacted ones, so fewer than this many cost a query a
few milliseconds, while merging them cost the run 0.11 s, a twentieth of its wall, at its very
end. Runs add files until a partition reaches this many; the writer compacts one that receives
``lake.writer.AUTO_COMPACT_FILES`` during a run, and ``doclake lake compact`` merges any."""


def basename(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def is_data_file(path: str) -> bool:
    name = basename(path)
    return name.endswith(".parquet") and not name.startswith(".")


def is_tmp_file(path: str) -> bool:
    """A compaction's output not yet moved into place (left by a crash when it stays)."""
    return basename(path).startswith(TMP_PREFIX)


def event_types(filesystem: pafs.FileSystem, root: str) -> list[str]:
    """Every event type with a folder in the lake, known to this release or not."""
    import pyarrow.fs as pafs

    selector = pafs.FileSelector(f"{root}/{EVENTS_PREFIX}", allow_not_found=True)
    names = [basename(i.path) for i in filesystem.get_file_info(selector)
             if i.type == pafs.FileType.Directory]
    return sorted(n.split("=", 1)[1] for n in names if n.startswith("event_type="))


def partitions(filesystem: pafs.FileSystem, root: str,
               event_type: str) -> dict[str, list[pafs.FileInfo]]:
    """Files directly inside each partition folder, as the views' ``*/*.parquet`` glob sees them."""
    import pyarrow.fs as pafs

    base = f"{root}/{EVENTS_PREFIX}/event_type={event_type}"
    selector = pafs.FileSelector(base, recursive=True, allow_not_found=True)
    folders: dict[str, list[pafs.FileInfo]] = {}
    for info in filesystem.get_file_info(selector):
        if info.type != pafs.FileType.File:
            continue
        folder = info.path.rsplit("/", 1)[0]
        if folder.rsplit("/", 1)[0] == base:
            folders.setdefault(folder, []).append(info)
    return dict(sorted(folders.items()))


def partition_due(infos: list[pafs.FileInfo], min_files: int) -> bool:
    """Whether a partition's files call for a compaction: ``min_files`` data files or more, or a
    ``.tmp-`` file (a crashed compaction's, which the next one removes once it is old)."""
    return (sum(is_data_file(i.path) for i in infos) >= min_files
            or any(is_tmp_file(i.path) for i in infos))


def partitions_due(filesystem: pafs.FileSystem, root: str, min_files: int) -> list[str]:
    """The partition folders of the lake that ``partition_due`` says to compact."""
    return [folder for event_type in event_types(filesystem, root)
            for folder, infos in partitions(filesystem, root, event_type).items()
            if partition_due(infos, min_files)]
