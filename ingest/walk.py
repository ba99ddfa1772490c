"""The walk of a data room: which files are ingested, and what is left out and why.

A data room arrives from outside, often an unpacked archive: links are never followed, only
regular files are taken, and a file with more than one name (a hard link: a name inside the
room for a file that may live outside it) is left out unless the setting
``allow_hard_links`` is on and every one of its names is inside the folders walked. Split out
of ``ingest.planner`` (which plans what the walk found).
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from pathlib import Path

from lake.files import open_folder_at

__all__ = ["MAX_DEPTH", "SKIP_CHANGED", "SKIP_DEEP", "SKIP_HARD_LINK", "SKIP_LINK",
           "SKIP_SPECIAL", "SKIP_UNREADABLE", "Walk", "expand_paths", "expand_sources",
           "walk_sources"]

MAX_DEPTH = 64  # folders below a folder given: deeper ones are skipped (and said so), not a crash


def expand_paths(paths: list[Path]) -> list[Path]:
    """Files named, and every non-hidden regular file under folders named, in a stable order.

    Raises ``FileNotFoundError`` naming the first missing path before anything is ingested.
    """
    return [file for file, _ in expand_sources(paths)]


def expand_sources(paths: list[Path]) -> list[tuple[Path, str]]:
    """``expand_paths`` with each file's ``source_path``: its path relative to the folder named
    (``a/NDA.pdf``, POSIX separators), or its name for a file named by itself."""
    return walk_sources(paths).files


@dataclass
class Walk:
    """What a walk found: the files to ingest (each with its ``source_path``) and what it left
    out, each with the reason (a link, not a regular file, too deep, unreadable)."""

    files: list[tuple[Path, str]]
    skipped: list[tuple[Path, str]]

    def skipped_summary(self) -> str | None:
        """One line for the user: how many were skipped, why, and a few of them by name."""
        if not self.skipped:
            return None
        counts: dict[str, int] = {}
        for _, reason in self.skipped:
            counts[reason] = counts.get(reason, 0) + 1
        reasons = ", ".join(f"{n} {reason}" for reason, n in sorted(counts.items()))
        shown = ", ".join(str(p) for p, _ in self.skipped[:3])
        more = " ..." if len(self.skipped) > 3 else ""
        return f"skipped {len(self.skipped)} ({reasons}): {shown}{more}"


SKIP_LINK = "symbolic link, not followed"
SKIP_SPECIAL = "not a regular file"
SKIP_DEEP = "folder deeper than the limit"
SKIP_UNREADABLE = "unreadable folder"
SKIP_CHANGED = "changed while it was read"
SKIP_HARD_LINK = "hard link: the file has other names, perhaps outside the room"


def walk_sources(paths: list[Path], *, max_depth: int = MAX_DEPTH,
                 allow_hard_links: bool = False) -> Walk:
    """Walk the paths given, taking regular files only.

    A data room arrives from outside, often an unpacked archive, and unzip keeps symbolic links:
    a link inside a folder given is never followed (``link.csv -> /etc/passwd`` would copy that
    file into the home), nor is anything but a regular file taken (a FIFO blocks a read, a device
    never ends). A path named on the command line is the user's own choice: a folder is walked
    from its real path (links in the path named are followed once, here), so every path found
    holds no link at all, and ``lake.files.open_regular`` can refuse any link it meets later.
    The walk goes by descriptors: each folder is opened relative to its parent with
    ``O_NOFOLLOW | O_DIRECTORY`` and listed through that descriptor, so a folder exchanged for a
    link while the walk runs is never listed. It is iterative with a depth limit, so a folder
    nested 1,200 deep is reported, not a ``RecursionError``. Hidden files and folders are
    skipped silently. Raises ``FileNotFoundError`` naming the first missing path before anything
    is ingested. A file with more than one name (``st_nlink > 1``) is skipped
    (``SKIP_HARD_LINK``) unless ``allow_hard_links`` and every one of its names was found by
    this walk.
    """
    files: list[tuple[Path, str]] = []
    skipped: list[tuple[Path, str]] = []
    for path in paths:
        if not path.exists():
            raise FileNotFoundError(f"no such file or folder: {path}")
        if not path.is_dir():
            if path.is_file():
                # The folder holding it by its real path; the file itself is still not followed.
                files.append((Path(os.path.realpath(path.parent)) / path.name, path.name))
            else:
                skipped.append((path, SKIP_SPECIAL))
            continue
        root = Path(os.path.realpath(path))
        try:
            descriptor = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            skipped.append((path, SKIP_UNREADABLE))
            continue
        found: list[tuple[Path, str]] = []
        _walk_folder(_Folder(descriptor, root, 0, None), root, max_depth, found, skipped)
        files += sorted(found)
    return Walk(*_without_hard_links(files, skipped, allow_hard_links))


def _without_hard_links(files: list[tuple[Path, str]], skipped: list[tuple[Path, str]],
                        allow: bool) -> tuple[list[tuple[Path, str]], list[tuple[Path, str]]]:
    """The files whose every name is known: one name, or (``allow``) all names in the walk."""
    seen: dict[tuple[int, int], int] = {}
    links: dict[Path, tuple[tuple[int, int], int]] = {}
    for path, _ in files:
        try:
            status = os.stat(path, follow_symlinks=False)
        except OSError:
            continue  # gone: the planner says so when it opens it
        if status.st_nlink > 1:
            key = (status.st_dev, status.st_ino)
            seen[key] = seen.get(key, 0) + 1
            links[path] = (key, status.st_nlink)
    kept = []
    for path, source in files:
        if path in links:
            key, count = links[path]
            if not allow or seen[key] < count:
                skipped.append((path, SKIP_HARD_LINK))
                continue
        kept.append((path, source))
    return kept, skipped


@dataclass
class _Folder:
    """A folder open during the walk; closed once listed and every sub-folder opened."""

    fd: int
    path: Path
    depth: int
    parent: _Folder | None
    pending: int = 0  # sub-folders still to be opened relative to this one
    listed: bool = False

    def release(self) -> None:
        if self.listed and self.pending == 0:
            os.close(self.fd)
            if self.parent is not None:
                self.parent.pending -= 1
                self.parent.release()


def _walk_folder(top: _Folder, root: Path, max_depth: int, found: list[tuple[Path, str]],
                 skipped: list[tuple[Path, str]]) -> None:
    """Depth first, with at most one open descriptor per level (a folder stays open only while
    sub-folders of it wait to be opened)."""
    stack: list[tuple[_Folder, str] | _Folder] = [top]
    while stack:
        item = stack.pop()
        if isinstance(item, tuple):
            parent, name = item
            child_path = parent.path / name
            try:
                folder = _Folder(open_folder_at(parent.fd, name), child_path, parent.depth + 1,
                                 parent)
            except OSError as error:
                skipped.append((child_path,
                                SKIP_LINK if error.errno == errno.ELOOP else SKIP_UNREADABLE))
                parent.pending -= 1
                parent.release()
                continue
        else:
            folder = item
        try:
            with os.scandir(folder.fd) as listing:
                entries = list(listing)
        except OSError:
            entries = []
            skipped.append((folder.path, SKIP_UNREADABLE))
        for entry in entries:
            if entry.name.startswith("."):
                continue
            child = folder.path / entry.name
            try:
                if entry.is_symlink():
                    skipped.append((child, SKIP_LINK))
                elif entry.is_dir(follow_symlinks=False):
                    if folder.depth + 1 > max_depth:
                        skipped.append((child, SKIP_DEEP))
                    else:
                        folder.pending += 1
                        stack.append((folder, entry.name))
                elif entry.is_file(follow_symlinks=False):
                    found.append((child, child.relative_to(root).as_posix()))
                else:
                    skipped.append((child, SKIP_SPECIAL))
            except OSError:  # gone since the listing
                skipped.append((child, SKIP_UNREADABLE))
        folder.listed = True
        folder.release()


