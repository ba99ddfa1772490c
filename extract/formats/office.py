"""Office files to PDF with headless LibreOffice, and encrypted Office files decrypted.

Each conversion is a fresh ``soffice`` process (measured against a warm unoserver in
``infra/bench/formats_bench.py``; see the README): a cold start costs about a second with a
ready profile, and no state survives from one conversion to the next, so a file that crashes or
wedges LibreOffice cannot poison a later one. Files that arrive together may share one process
(``convert_many_to_pdf``: eight one-page files in 1.7 s against 1.3 s each alone); a file that
process makes no PDF of is converted again alone. What makes that cheap and safe:

- the profile: a template profile is initialised once per process (the first start costs
  seconds) and copied (about 600 KB) into each conversion's own folder, so concurrent
  conversions never share a profile lock and a damaged profile dies with its folder;
- the time limit: the process runs in a session of its own and the whole group (oosplash,
  soffice.bin and anything they started) is killed with SIGKILL when the limit passes;
- no network: where unprivileged network namespaces exist (``unshare -rn``) LibreOffice runs
  with no network device at all; the profile also points every proxy at a closed local port,
  which covers the machines without namespaces (the XXE sample in the corpus must fetch nothing);
- the filesystem: under bubblewrap, or Landlock where bwrap is missing
  (``extract.formats.confine``), the converter can read the system and its own work folder,
  nothing else: a linked ``file:///`` image is not there to embed. Before that, a document that
  links outside itself is refused (``links_outside``, ``extract.formats.links``, in the convert
  handler), and after it a PDF holding a picture the document does not
  (``extract.formats.output_check``); the profile's ``BlockUntrustedRefererLinks`` blocks such
  links as well;
- its lifetime: the first process has a parent-death signal and the conversion runs in a PID
  namespace where one can be made: a ``kill -9`` of the run ends every converter process;
- resources: address space, file size (``RLIMIT_FSIZE``: no file past the output limit) and CPU
  time limits on the process; its temporary files go to the work folder, removed after it;
- the output: a missing PDF is a refusal (``corrupt``), an oversized one a limit.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
import hashlib
import os
import resource
import shutil
import signal
import stat
import subprocess
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from extract.errors import (
    ConverterUnavailable,
    CorruptDocument,
    EncryptedDocument,
    LimitExceeded,
)
from extract.formats.confine import confinement
from extract.formats.limits import memory_limit
from extract.formats.sandbox import find_bwrap
from extract.formats.scratch import scratch_folder, sweep_orphans
from extract.formats.sniff import Format

__all__ = ["CONVERTER", "SOFFICE_CANDIDATES", "PROXY_PORT", "profile_settings", "ConvertLimits",
           "Conversion", "find_soffice", "network_isolation", "convert_to_pdf",
           "convert_many_to_pdf", "decrypt_office"]

CONVERTER = "soffice"
SOFFICE_CANDIDATES = ("soffice", "libreoffice", "/usr/lib/libreoffice/program/soffice",
                      "/opt/libreoffice/program/soffice")
_EXTENSIONS = {Format.DOC: "doc", Format.DOCX: "docx", Format.PPT: "ppt", Format.PPTX: "pptx",
               Format.ODT: "odt", Format.ODP: "odp", Format.RTF: "rtf"}

PROXY_PORT = 9  # discard: nothing listens there, so a fetch fails at once

# Every proxy LibreOffice might use points at a closed local port, manual mode; no OpenCL
# probing; macros never run.
_SETTINGS = (
    ("/org.openoffice.Inet/Settings", "ooInetProxyType", "1"),
    ("/org.openoffice.Inet/Settings", "ooInetHTTPProxyName", "127.0.0.1"),
    ("/org.openoffice.Inet/Settings", "ooInetHTTPProxyPort", "{port}"),
    ("/org.openoffice.Inet/Settings", "ooInetHTTPSProxyName", "127.0.0.1"),
    ("/org.openoffice.Inet/Settings", "ooInetHTTPSProxyPort", "{port}"),
    ("/org.openoffice.Inet/Settings", "ooInetFTPProxyName", "127.0.0.1"),
    ("/org.openoffice.Inet/Settings", "ooInetFTPProxyPort", "{port}"),
    ("/org.openoffice.Inet/Settings", "ooInetNoProxy", ""),
    ("/org.openoffice.Office.Common/Misc", "UseOpenCL", "false"),
    ("/org.openoffice.Office.Common/Security/Scripting", "MacroSecurityLevel", "3"),
    # A linked image or object (file:///..., http://...) is not fetched: a document from outside
    # must not pull in a local file (the sandbox would hide it anyway, where there is one).
    ("/org.openoffice.Office.Common/Security/Scripting", "BlockUntrustedRefererLinks", "true"),
)


def profile_settings(port: int) -> str:
    """The profile's registrymodifications.xcu: the settings above."""
    items = "".join(f'<item oor:path="{path}"><prop oor:name="{name}" oor:op="fuse">'
                    f"<value>{value.format(port=port)}</value></prop></item>\n"
                    for path, name, value in _SETTINGS)
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            '<oor:items xmlns:oor="http://openoffice.org/2001/registry" '
            'xmlns:xs="http://www.w3.org/2001/XMLSchema" '
            'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">\n'
            f"{items}</oor:items>\n")


@dataclass(frozen=True)
class ConvertLimits:
    timeout_s: float = 120.0
    max_output_bytes: int = 256 * 1024 * 1024
    max_memory_bytes: int | None = 4 * 1024**3


@dataclass(frozen=True)
class Conversion:
    pdf: Path
    duration_ms: float
    converter: str
    isolated_network: bool


@functools.cache
def find_soffice() -> str | None:
    """The LibreOffice binary, or None when it is not installed."""
    override = os.environ.get("DOCLAKE_SOFFICE")
    for candidate in ((override,) if override else SOFFICE_CANDIDATES):
        found = shutil.which(candidate) if "/" not in candidate else (
            candidate if os.access(candidate, os.X_OK) else None)
        if found:
            return found
    return None


@functools.cache
def network_isolation() -> tuple[str, ...]:
    """The command prefix that gives a process no network and a PID namespace of its own
    (``unshare -rn --pid --fork --kill-child``: every process of a conversion dies with its
    first), the network alone where PID namespaces are refused, or () where namespaces are not
    allowed (some containers): the proxy settings then stand alone."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return ()
    pid = ("--pid", "--fork", "--kill-child")
    # Without -r first: a user namespace needs /proc/self/uid_map written, which Landlock
    # (applied before) forbids; -r where the first are refused (an unprivileged user).
    for prefix in ((unshare, "-n", *pid), (unshare, "-rn", *pid), (unshare, "-n"),
                   (unshare, "-rn")):
        try:
            if subprocess.run([*prefix, "true"], capture_output=True, timeout=10).returncode == 0:
                return prefix
        except (OSError, subprocess.SubprocessError):
            continue
    return ()


def _write_settings(profile: Path) -> None:
    (profile / "user").mkdir(parents=True, exist_ok=True)
    (profile / "user" / "registrymodifications.xcu").write_text(profile_settings(PROXY_PORT))


_template: Path | None = None
_swept = False


async def _profile_template(soffice: str, timeout_s: float) -> Path | None:
    """A profile initialised once per process; None if LibreOffice cannot even start. Two
    conversions starting together may both make one: the first one made is kept, the other
    removed at once."""
    global _template, _swept
    if _template is not None and _template.is_dir():
        return _template
    if not _swept:  # this process's first conversion: folders of killed processes go first
        _swept = True
        await asyncio.to_thread(sweep_orphans)
    folder = scratch_folder("lo-template")
    _write_settings(folder)
    try:
        code, _ = await _run([soffice, *_flags(folder), "--terminate_after_init"], timeout_s,
                             None, folder)
    finally:
        _remove_pipe(folder)
    if code != 0:
        shutil.rmtree(folder, ignore_errors=True)
        return None
    if _template is not None and _template.is_dir():  # another conversion made one meanwhile
        shutil.rmtree(folder, ignore_errors=True)
        return _template
    if _template is None:
        atexit.register(_remove_template)
    _template = folder
    return folder


def _remove_template() -> None:
    """The template profile goes with the process that made it (no folders left in /tmp)."""
    if _template is not None:
        shutil.rmtree(_template, ignore_errors=True)


# Where LibreOffice makes its single-instance socket (osl/unx/pipe.cxx): /tmp, else /var/tmp,
# whatever TMPDIR says.
_PIPE_FOLDERS = (Path("/tmp"), Path("/var/tmp"))


def _pipe_name(profile: Path) -> str:
    """The name of the socket a LibreOffice using ``profile`` makes for its single-instance
    check: an MD5 of the profile's URL in UTF-16 code units, each byte in hex without a
    leading zero (``CreateMD5FromString`` in desktop/source/app/officeipcthread.cxx)."""
    digest = hashlib.md5(profile.as_uri().encode("utf-16-le"), usedforsecurity=False).digest()
    return f"OSL_PIPE_{os.getuid()}_SingleOfficeIPC_{''.join(f'{byte:x}' for byte in digest)}"


def _remove_pipe(profile: Path) -> None:
    """Remove the socket a converter left behind once it is gone. Under Landlock it may make
    one in /tmp but not remove it (nothing else there is its to remove), so each conversion
    would leave one; unconfined LibreOffice removes its own and there is nothing to do. Only
    a socket of this user's, of this profile's name, is removed."""
    name = _pipe_name(profile)
    for folder in _PIPE_FOLDERS:
        path = folder / name
        with contextlib.suppress(OSError):
            found = path.lstat()
            if stat.S_ISSOCK(found.st_mode) and found.st_uid == os.getuid():
                path.unlink()


def _flags(profile: Path) -> list[str]:
    # The shared extensions' cache in the profile too: as root LibreOffice would write it under
    # /usr (or /var/lib), which a confined converter may not (Landlock answers EACCES, which
    # LibreOffice does not take for a read-only install).
    return [f"-env:UserInstallation={profile.as_uri()}",
            f"-env:UNO_SHARED_PACKAGES_CACHE={(profile / 'shared').as_uri()}", "--headless", "--invisible",
            "--norestore", "--nologo", "--nodefault", "--nolockcheck", "--nofirststartwizard"]


async def _run(argv: list[str], timeout_s: float, memory: int | None,
               home: Path, max_file_bytes: int | None = None,
               readable: tuple[Path, ...] = ()) -> tuple[int | None, str]:
    """Run ``argv`` confined to ``home`` (``extract.formats.confine``: it can write nothing
    else, read nothing but the system, and dies with this process) to completion, or kill the
    whole process group at the time limit (code None)."""
    cpu_s = max(int(timeout_s * 2), 10)  # CPU seconds: a backstop to the wall-clock limit

    def limits() -> None:  # in the child, before exec
        if memory:
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        if max_file_bytes:
            resource.setrlimit(resource.RLIMIT_FSIZE, (max_file_bytes, max_file_bytes))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core file of a document's pages

    temporary = home / "tmp"
    temporary.mkdir(exist_ok=True)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
           "TMPDIR": str(temporary),
           "LANG": "C.UTF-8", "SAL_USE_VCLPLUGIN": "svp",
           "http_proxy": f"http://127.0.0.1:{PROXY_PORT}",
           "https_proxy": f"http://127.0.0.1:{PROXY_PORT}", "no_proxy": ""}
    confined = confinement([home], limits, network_isolation(), readable)
    (home / "converter.pid").write_text("")  # the sweep's key: filled in once started
    try:
        process = await asyncio.create_subprocess_exec(
            *confined.prefix, *argv, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
            start_new_session=True, preexec_fn=confined.preexec, env=env)
    finally:
        confined.close()
    # The process group a sweep kills if this process dies without reaping it
    # (extract.formats.scratch): its id is the group's.
    (home / "converter.pid").write_text(str(process.pid))
    try:
        output, _ = await asyncio.wait_for(process.communicate(), timeout=timeout_s)
        code: int | None = process.returncode
    except (TimeoutError, asyncio.CancelledError):
        _kill_group(process.pid)
        await process.wait()
        if asyncio.current_task() is not None and asyncio.current_task().cancelling():
            raise
        return None, ""
    _kill_group(process.pid)  # anything it left behind (a second soffice.bin) goes too
    return code, output.decode("utf-8", "replace")


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


@contextlib.asynccontextmanager
async def convert_to_pdf(source: Path, fmt: Format, limits: ConvertLimits
                         ) -> AsyncIterator[Conversion]:
    """The PDF LibreOffice makes of ``source`` (sniffed as ``fmt``), in a folder removed on exit.

    Raises ``ConverterUnavailable`` without LibreOffice, ``LimitExceeded`` at the time or size
    limit, ``CorruptDocument`` when LibreOffice refuses the file."""
    soffice = _soffice()
    work = scratch_folder("convert")
    try:
        started = time.perf_counter()
        code, output = await _convert_in(work, soffice, [(source, fmt)], limits, started)
        if code is None:
            raise LimitExceeded(f"LibreOffice did not convert the file within "
                                f"{limits.timeout_s:g} s; its processes were killed",
                                error_type="conversion_timeout")
        pdf = _output(work, 0)
        if pdf.is_file() and pdf.stat().st_size > limits.max_output_bytes:
            raise LimitExceeded(f"the converted PDF has more than {limits.max_output_bytes} "
                                "bytes, the limit", error_type="converted_too_large")
        if not pdf.is_file() or pdf.stat().st_size == 0:
            tail = " ".join(output.split())[-300:]
            raise CorruptDocument(f"LibreOffice could not convert the {fmt.value} file "
                                  f"(exit {code}): {tail or 'no output'}")
        yield Conversion(pdf, (time.perf_counter() - started) * 1000, CONVERTER,
                         bool(find_bwrap() or network_isolation()))
    finally:
        shutil.rmtree(work, ignore_errors=True)


@contextlib.asynccontextmanager
async def convert_many_to_pdf(sources: Sequence[tuple[Path, Format]], limits: ConvertLimits
                              ) -> AsyncIterator[list[Conversion | None]]:
    """The PDFs one LibreOffice process makes of several files, in the order given; None for a
    file it made no PDF of (it refused the file) or one over the size limit, and for every file
    when the process did not end cleanly (the time limit, a crash, the size limit): a PDF being
    written then may be cut short. For those the caller converts the file alone with
    ``convert_to_pdf``, which says why it fails. Every file's ``duration_ms`` is the whole
    process's: each waited for it.

    Why together: LibreOffice's start is most of a small file's conversion (1.3 s for a
    one-page file; 1.7 s for eight of them in one process), and a data room brings its Office
    files together. The files share the process and the work folder: only files of one home
    (one user's) are converted together, each checked for links before and its PDF after, as
    alone. Raises ``ConverterUnavailable`` without LibreOffice."""
    soffice = _soffice()
    work = scratch_folder("convert")
    try:
        started = time.perf_counter()
        code, _ = await _convert_in(work, soffice, sources, limits, started)
        duration_ms = (time.perf_counter() - started) * 1000
        isolated = bool(find_bwrap() or network_isolation())
        results: list[Conversion | None] = []
        for position in range(len(sources)):
            pdf = _output(work, position)
            size = pdf.stat().st_size if code == 0 and pdf.is_file() else 0
            results.append(Conversion(pdf, duration_ms, CONVERTER, isolated)
                           if 0 < size <= limits.max_output_bytes else None)
        yield results
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _soffice() -> str:
    soffice = find_soffice()
    if soffice is None:
        raise ConverterUnavailable(
            "LibreOffice is not installed (no soffice on PATH): install libreoffice-writer-nogui "
            "and libreoffice-impress-nogui, or set DOCLAKE_SOFFICE")
    return soffice


def _output(work: Path, position: int) -> Path:
    return work / "out" / f"document-{position}.pdf"


async def _convert_in(work: Path, soffice: str, sources: Sequence[tuple[Path, Format]],
                      limits: ConvertLimits, started: float) -> tuple[int | None, str]:
    """One LibreOffice process converting ``sources`` (copied into ``work/in`` as
    ``document-N``) into ``work/out``; its exit code (None at the time limit) and output."""
    template = await _profile_template(soffice, limits.timeout_s)
    if template is None:
        raise ConverterUnavailable(f"LibreOffice ({soffice}) does not start on this machine")
    profile = work / "profile"
    shutil.copytree(template, profile, symlinks=True)
    folder = work / "in"
    folder.mkdir()
    documents = []
    for position, (source, fmt) in enumerate(sources):
        document = folder / f"document-{position}.{_EXTENSIONS[fmt]}"
        shutil.copyfile(source, document)
        documents.append(str(document))
    remaining = max(1.0, limits.timeout_s - (time.perf_counter() - started))
    try:
        return await _run(
            [soffice, *_flags(profile), "--convert-to", "pdf", "--outdir", str(work / "out"),
             *documents],
            remaining, limits.max_memory_bytes, work,
            # a file one byte past the output limit fails the write (SIGXFSZ), not the disk
            max_file_bytes=limits.max_output_bytes + 1, readable=(template,))
    finally:
        _remove_pipe(profile)


def decrypt_office(source: Path, target: Path, password: str,
                   max_memory_bytes: int | None = None) -> None:
    """Decrypt an encrypted Office file (OOXML in an OLE2 wrapper, or Word, Excel or PowerPoint
    97-2003) with msoffcrypto-tool; runs in a worker process. A wrong password, or an
    encryption it cannot undo, is ``EncryptedDocument``."""
    import msoffcrypto
    from msoffcrypto import exceptions as crypto_errors

    with memory_limit(max_memory_bytes, "decrypting the file"), open(source, "rb") as handle:
        try:
            office = msoffcrypto.OfficeFile(handle)
            office.load_key(password=password)
            with open(target, "wb") as out:
                office.decrypt(out)
        except (crypto_errors.InvalidKeyError, crypto_errors.DecryptionError) as error:
            raise EncryptedDocument(f"the file is encrypted and the password given does not "
                                    f"open it ({error})") from None
        except (crypto_errors.FileFormatError, crypto_errors.ParseError, NotImplementedError,
                AssertionError, ValueError) as error:
            raise EncryptedDocument(f"the file is encrypted in a way msoffcrypto-tool cannot "
                                    f"undo ({type(error).__name__}: {error})") from None
