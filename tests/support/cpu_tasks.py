"""Functions for the process-pool tests (importable by worker processes)."""

from __future__ import annotations

import os
import time


def square(value: int) -> int:
    return value * value


def sleep_for(seconds: float) -> str:
    time.sleep(seconds)
    return "woke"


def die() -> None:
    os._exit(13)  # a crash PDFium could cause: no exception, the process is gone


def raise_runtime_error(text: str) -> None:
    raise RuntimeError(text)  # what pypdfium2's PdfiumError is: a RuntimeError from the call


def fail_to_load_page(path: str) -> None:
    """A pdfium page error from inside pdf.read_text_layer: page 999 of a short document."""
    from pathlib import Path

    from extract.formats.pdf import read_text_layer

    read_text_layer(Path(path), [999])


def sleep_then_touch(seconds: float, path: str) -> str:
    """A parse that runs long and then leaves a mark: the mark shows it was not stopped."""
    time.sleep(seconds)
    with open(path, "w") as handle:
        handle.write(str(os.getpid()))
    return "woke"


def crash_parsing(*args, **kwargs) -> None:
    """Stands for a parser that kills its process on certain bytes (a native abort)."""
    os._exit(13)


def resource_limits() -> dict[int, tuple[int, int]]:
    """The worker process's own soft and hard limits on core files and file size."""
    import resource

    return {limit: resource.getrlimit(limit)
            for limit in (resource.RLIMIT_CORE, resource.RLIMIT_FSIZE)}


def gated_ocr_page(gate: str, path, number: int, *args):
    """Stands for ``extract.readers.ocr._ocr_one`` (bind ``gate`` with functools.partial): an OCR
    page that takes as long as the test wants. It marks ``started-N`` in the folder ``gate``,
    waits until the test creates ``gate/open`` (at most 60 s; then it opens the gate itself, so
    a test that never opens it still ends soon), marks ``done-N`` and answers like an OCR page."""
    from pathlib import Path

    from extract.readers.ocr import OcrResult

    folder = Path(gate)
    (folder / f"started-{number}").touch()
    for _ in range(600):
        if (folder / "open").exists():
            break
        time.sleep(0.1)
    (folder / "open").touch()
    (folder / f"done-{number}").touch()
    return OcrResult(number, f"scanned words of page {number}", 90.0, 0, 1.0)


def process_id() -> int:
    """Which process ran the call (a documents-lane call: its name is no lane's own)."""
    return os.getpid()


def sniff_file(seconds: float) -> int:
    """Named as the short lane's sniff (the lanes route calls by name): holds the short lane's
    process for ``seconds``; answers with that process's id."""
    time.sleep(seconds)
    return os.getpid()


def kind_score(seconds: float = 0.0) -> int:
    """Named as the offline kind score, a call the short lane may spill to the documents lane:
    answers with the id of the process that ran it."""
    time.sleep(seconds)
    return os.getpid()
