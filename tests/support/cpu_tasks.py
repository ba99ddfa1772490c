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
