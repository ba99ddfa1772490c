"""Memory limits for risky parsers, applied inside the worker process that runs them.

A parse runs in a pool process (``ctx.cpu``) that lives on after it; the limit is therefore set
around one call and lifted after it. ``RLIMIT_AS`` caps the process's address space: the limit
is the process's current size plus the parse's budget, so what a worker had already mapped
(PDFium, a cached document) does not count against the file being parsed. A Python allocation
over the limit raises ``MemoryError``, turned here into ``LimitExceeded('memory_limit')``; a
native library that aborts on a failed allocation kills the worker instead, which the pool
reports as a crash and the message is retried until its last delivery.
"""

from __future__ import annotations

import contextlib
import resource
from collections.abc import Iterator

from extract.errors import LimitExceeded

__all__ = ["memory_limit"]


def _current_address_space() -> int:
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


@contextlib.contextmanager
def memory_limit(budget_bytes: int | None, what: str) -> Iterator[None]:
    """Cap this process's address space at its current size plus ``budget_bytes`` (None: no
    cap) while the block runs."""
    if not budget_bytes:
        yield
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = _current_address_space() + budget_bytes
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    except MemoryError:
        raise LimitExceeded(f"{what} needed more than {budget_bytes // 2**20} MiB of memory",
                            error_type="memory_limit") from None
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
