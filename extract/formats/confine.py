"""The boundary a converter runs behind, the best this machine allows, and its lifetime.

In order of strength, each tried (never assumed) once per process:

1. bubblewrap (``extract.formats.sandbox``): a mount namespace in which only the system,
   read-only, and the work folder exist; no network; a PID namespace that dies with its parent.
2. Landlock (Linux 5.13 and later, when the kernel has it on): applied in the child before it
   runs the converter (``landlock_create_ruleset``, ``landlock_add_rule``,
   ``landlock_restrict_self``, syscalls 444 to 446 on every Linux architecture, by ctypes).
   The converter may read and run the system's programs, libraries, fonts and a few files of
   ``/etc``, and read and write its work folder; anything else (a home, a data room, doclake's
   home) cannot be opened, whatever a document names. Together with
3. ``unshare`` (user, PID and network namespaces, where unprivileged namespaces exist): no
   network, and every process of the conversion dies when the first one does.

Whatever holds, the converter's environment is a handful of fixed variables (no credentials
from the caller's), and its first process has a parent-death signal (``PR_SET_PDEATHSIG``): a
``kill -9`` of the run ends it at once, and with it (PID namespace) everything it started.
One moment escapes: a kill while bwrap still sets its sandbox up, before its init has its own
parent-death signal; that init and its converter are then ended by the next start's sweep
(``extract.formats.scratch``), which kills the group's processes that name the work folder.
Where nothing holds (macOS, a kernel without Landlock and no namespaces), ``boundary()`` says
``none`` and the links check and the output check stand alone; docs/security.md has the table.
"""

from __future__ import annotations

import ctypes
import functools
import logging
import os
import signal
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from extract.formats.sandbox import find_bwrap, sandbox

__all__ = ["Confinement", "boundary", "confinement", "landlock_abi"]

log = logging.getLogger(__name__)

_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_PDEATHSIG, _PR_SET_NO_NEW_PRIVS = 1, 38
# Landlock ABI 1 rights: execute, write, read file, read dir, remove dir/file, make char dev,
# dir, regular file, socket, fifo, block dev, symlink; ABI 2 adds refer, ABI 3 truncate.
_EXECUTE, _WRITE, _READ_FILE, _READ_DIR = 1, 2, 4, 8
_ALL_V1 = (1 << 13) - 1
_REFER, _TRUNCATE = 1 << 13, 1 << 14
_READ_RUN = _EXECUTE | _READ_FILE | _READ_DIR
# What a converter may read (and run): the system, and the few files of /etc it needs.
_READABLE = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32", "/opt/libreoffice",
             "/etc/fonts", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
             "/etc/libreoffice", "/etc/alternatives", "/etc/localtime", "/etc/passwd",
             "/etc/group", "/etc/nsswitch.conf", "/etc/locale.alias", "/etc/java-17-openjdk",
             "/etc/ssl/certs",
             "/var/cache/fontconfig", "/var/lib/libreoffice", "/proc", "/sys")
_DEVICES = ("/dev/null", "/dev/zero", "/dev/urandom", "/dev/random")
# LibreOffice makes its single-instance pipe in /tmp whatever TMPDIR says: a socket may be made
# there, nothing read, written or removed (extract.formats.office removes it once the converter
# has ended).
_MAKE_SOCK = 1 << 9
_MAKE_REG, _REMOVE_FILE = 1 << 8, 1 << 5  # POSIX shared memory (shm_open) lives in /dev/shm
_SOCKETS = ("/tmp", "/var/tmp")


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


@functools.cache
def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


@functools.cache
def landlock_abi() -> int:
    """The kernel's Landlock ABI version, 0 where there is none (or it is switched off)."""
    libc = _libc()
    if libc is None:
        return 0
    version = libc.syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0),
                           ctypes.c_uint32(_CREATE_RULESET_VERSION))
    return max(int(version), 0)


def _handled(abi: int) -> int:
    rights = _ALL_V1
    if abi >= 2:
        rights |= _REFER
    if abi >= 3:
        rights |= _TRUNCATE
    return rights


def _ruleset(writable: Sequence[Path], readable: Sequence[Path] = ()) -> int | None:
    """A Landlock ruleset (its descriptor) allowing the system read-only and ``writable`` in
    full; None where Landlock is missing or refuses."""
    abi = landlock_abi()
    libc = _libc()
    if abi < 1 or libc is None:
        return None
    handled = _handled(abi)
    attr = _RulesetAttr(handled)
    fd = libc.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)),
                      ctypes.c_uint32(0))
    if fd < 0:
        return None
    rules = [(path, _READ_RUN) for path in _READABLE] + [
        (path, _READ_FILE | _WRITE | _READ_DIR) for path in _DEVICES] + [
        (path, _MAKE_SOCK) for path in _SOCKETS] + [
        ("/dev/shm", _READ_FILE | _WRITE | _READ_DIR | _MAKE_REG | _REMOVE_FILE)] + [
        (str(Path(path).resolve()), _READ_FILE | _READ_DIR) for path in readable] + [
        (str(Path(path).resolve()), handled) for path in writable]
    for path, rights in rules:
        try:
            parent = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            continue  # not on this machine
        try:
            if not os.path.isdir(path):  # a file: only the rights that apply to files
                rights &= _EXECUTE | _WRITE | _READ_FILE | _TRUNCATE
            rule = _PathBeneathAttr(rights & handled, parent)
            if libc.syscall(_SYS_ADD_RULE, ctypes.c_int(fd), ctypes.c_int(_RULE_PATH_BENEATH),
                            ctypes.byref(rule), ctypes.c_uint32(0)) != 0:
                log.debug("landlock refused a rule for %s (errno %d)", path, ctypes.get_errno())
        finally:
            os.close(parent)
    return fd


@dataclass(frozen=True)
class Confinement:
    """How one converter process is started: a command prefix, a function for the child before
    it runs the converter, and what holds (for the log, the result and the docs' table)."""

    prefix: tuple[str, ...]
    preexec: Callable[[], None]
    boundary: str  # "bwrap", "landlock", or "none"
    close: Callable[[], None]


def boundary() -> str:
    """What confines a converter on this machine: ``bwrap``, ``landlock`` or ``none``."""
    if find_bwrap() is not None:
        return "bwrap"
    if landlock_abi() >= 1:
        return "landlock"
    return "none"


def confinement(writable: Sequence[Path], limits: Callable[[], None],
                namespaces: tuple[str, ...] = (), readable: Sequence[Path] = ()) -> Confinement:
    """The way to start a converter that may write only ``writable``; ``limits`` runs in the
    child first (resource limits); ``namespaces`` is the ``unshare`` prefix used where bwrap is
    missing (no network; a PID namespace so the conversion's processes die together). The
    caller calls ``close()`` once the process has started. ``readable``: folders it may read
    besides the system (LibreOffice's profile template, which the profile it runs with names)."""
    libc = _libc()
    parent = os.getpid()
    bwrap = sandbox(writable)
    ruleset = None if bwrap else _ruleset(writable, readable)

    def preexec() -> None:  # in the child, between fork and exec: no allocation-heavy work
        limits()
        if libc is not None:
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            if os.getppid() != parent:  # the parent died before the signal was armed
                os._exit(1)
        if ruleset is not None and libc is not None:
            libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
            if libc.syscall(_SYS_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
                os._exit(126)  # never run the converter unconfined when confinement was meant

    def close() -> None:
        if ruleset is not None:
            os.close(ruleset)

    if bwrap:
        return Confinement(bwrap, preexec, "bwrap", close)
    return Confinement(namespaces, preexec, "landlock" if ruleset is not None else "none",
                       close)
