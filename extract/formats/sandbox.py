"""A converter that can see only its own work folder: bubblewrap (``bwrap``), or a warning.

A document is untrusted input and LibreOffice follows what it links to: an ``.odt`` whose image
is ``file:///home/me/private.png`` comes out of conversion with that image embedded (and then
OCR'd, indexed, perhaps sent to a vision model). Link blocking in the profile stops the known
cases; a mount namespace stops the whole class. Under ``bwrap`` the converter sees the system's
programs, libraries and fonts read-only, a private ``/tmp``, its own work folder read-write and
nothing else: no home, no data room, no doclake home; and no network (``--unshare-all`` takes
the network, PID, IPC and UTS namespaces too), dying with its parent.

Where ``bwrap`` is missing or cannot make namespaces (some containers, Lambda), ``sandbox``
returns no prefix and logs one warning: the conversion then runs under Landlock where the
kernel has it (``extract.formats.confine``), behind the link check before it
(``extract.formats.links``) and the output check after it, with the profile's link blocking
and ``unshare -n`` for the network (``extract.formats.office``). docs/security.md says what
holds where.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

__all__ = ["log", "find_bwrap", "sandbox"]

log = logging.getLogger(__name__)

# Read-only views of the system: programs and libraries, and the few files of /etc a converter
# reads (fonts, the loader cache, LibreOffice's own config and the alternatives it links via).
# /etc as a whole holds more than a converter needs (host keys, credentials of services).
_SYSTEM = ("/usr", "/opt/libreoffice")
_ETC = ("/etc/fonts", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
        "/etc/libreoffice", "/etc/alternatives", "/etc/localtime", "/etc/passwd", "/etc/group",
        "/etc/nsswitch.conf", "/etc/java-17-openjdk", "/etc/ssl/certs")
_TOP_LINKS = ("/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32")


@functools.cache
def find_bwrap() -> str | None:
    """``bwrap``, if installed and able to make its namespaces here (tried once, not assumed)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return None
    try:
        probe = subprocess.run([bwrap, *_base_arguments(), "true"], capture_output=True,
                               timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    if probe.returncode != 0:
        log.warning("bwrap cannot make namespaces here (%s); conversions run without the "
                    "sandbox", probe.stderr.decode(errors="replace").strip()[:200])
        return None
    return bwrap


def _base_arguments() -> list[str]:
    arguments = ["--unshare-all", "--die-with-parent", "--new-session",
                 "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    for path in _SYSTEM:
        if os.path.isdir(path):
            arguments += ["--ro-bind", path, path]
    for path in _TOP_LINKS:
        if os.path.islink(path):
            arguments += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            arguments += ["--ro-bind", path, path]
    for path in _ETC:
        arguments += ["--ro-bind-try", path, path]
    return arguments


_warned = False


def sandbox(writable: Sequence[Path]) -> tuple[str, ...]:
    """The command prefix that runs a program seeing only the system read-only and the folders
    in ``writable`` read-write, with no network; () without bwrap (warned once)."""
    global _warned
    bwrap = find_bwrap()
    if bwrap is None:
        if not _warned:
            _warned = True
            log.warning("bubblewrap (bwrap) is not available: LibreOffice conversions are not "
                        "confined to their work folder (documents linking outside themselves are "
                        "still refused, and link blocking in the profile is still on); install "
                        "the bubblewrap package")
        return ()
    arguments = [bwrap, *_base_arguments()]
    for folder in writable:
        resolved = str(Path(folder).resolve())
        arguments += ["--bind", resolved, resolved]
    return tuple(arguments)
