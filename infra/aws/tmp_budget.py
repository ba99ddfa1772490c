"""Lambda's ``/tmp`` as a budget: one document's files at a time per invocation, and a source
that cannot fit refused before it is downloaded.

A batch of ten records from a bulk upload can name ten documents. Run together, each would fetch
its source (and an Office file's decrypted copy, and its converted PDF) into ``/tmp`` at once,
sized for one 512 MiB source. ``OneDocumentAtATime`` lets the records of one document run
together (they share one copy: ``infra.aws.s3.SharedDownloads``) while the others wait, without
holding a thread, and drops the idle copies before the next document starts. ``check_fits``
refuses a source larger than the function's ephemeral storage (terminal ``file_too_large``,
with the sizes in the message) and retries one that would fit once the space is free.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from extract.errors import LimitExceeded, TransientError

__all__ = ["MIB", "RESERVE_BYTES", "OneDocumentAtATime", "check_fits"]

MIB = 1024 * 1024
RESERVE_BYTES = 64 * MIB
"""Kept free beside a source for what reading it writes (rendered pages, LibreOffice's profile)."""


class OneDocumentAtATime:
    """An asyncio gate: records of the active document enter, the others wait for it to end."""

    def __init__(self, on_switch: Callable[[], None] = lambda: None) -> None:
        self._condition = asyncio.Condition()
        self._active: str | None = None
        self._inside = 0
        self._on_switch = on_switch
        self.documents: list[str] = []
        """The documents in the order they held the gate (for logs and tests)."""

    @asynccontextmanager
    async def document(self, document_id: str) -> AsyncIterator[None]:
        async with self._condition:
            await self._condition.wait_for(lambda: self._active in (None, document_id))
            if self._active is None:
                self._on_switch()  # the last document's copies go before this one's come
                self._active = document_id
                self.documents.append(document_id)
            self._inside += 1
        try:
            yield
        finally:
            async with self._condition:
                self._inside -= 1
                if self._inside == 0:
                    self._active = None
                    self._condition.notify_all()


def check_fits(size: int, ephemeral_bytes: int, *, folder: str | None = None) -> None:
    """Refuse a source of ``size`` bytes that ``/tmp`` could never hold, retry one it cannot
    hold now."""
    if size + RESERVE_BYTES > ephemeral_bytes:
        raise LimitExceeded(
            f"the source is {size / MIB:.0f} MiB and this function's /tmp is "
            f"{ephemeral_bytes / MIB:.0f} MiB ({RESERVE_BYTES / MIB:.0f} MiB kept for reading "
            "it): raise the function's ephemeral storage (cdk -c max_upload_bytes sizes it) or "
            "send a smaller file", error_type="file_too_large")
    free = shutil.disk_usage(folder or tempfile.gettempdir()).free
    if size + RESERVE_BYTES > free:
        raise TransientError(f"/tmp has {free / MIB:.0f} MiB free for a {size / MIB:.0f} MiB "
                             "source: tried again later", error_type="tmp_full")
