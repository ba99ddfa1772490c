"""Which stored object a handler reads for a job: the upload, its decrypted copy, or its PDF.

An encrypted Office file opened with a password is decrypted once, by the split step, and
stored beside the upload; an Office file is converted once, by the convert step, and its PDF
stored. Later steps (convert, the sheet readers, the page readers) read those copies, never
the original again.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from extract.formats.sniff import IMAGE_FORMATS, OFFICE_FORMATS, Format
from extract.ports import ObjectStore
from extract.state import Job
from lake.layout import converted_key

__all__ = ["decrypted_key", "readable_key", "pdf_key", "source_format", "local_copy"]


def decrypted_key(document_id: str, job_id: str) -> str:
    """The decrypted copy of an encrypted Office upload (stored only when a password opened it)."""
    return f"decrypted/{document_id}/{job_id}"


def readable_key(objects: ObjectStore, job: Job) -> str:
    """The bytes to parse: the decrypted copy when there is one, else the upload."""
    key = decrypted_key(job.document_id, job.job_id)
    return key if objects.head(key) is not None else job.object_key


_CONVERTED = frozenset(f.value for f in OFFICE_FORMATS | IMAGE_FORMATS)


def pdf_key(job: Job) -> str:
    """The PDF whose pages a read unit reads: the converted one for an Office file or an
    image."""
    if job.detected_format in _CONVERTED:
        return converted_key(job.document_id, job.job_id)
    return job.object_key


def source_format(job: Job) -> Format | None:
    """The format recorded when the job was split (None before)."""
    try:
        return Format(job.detected_format) if job.detected_format else None
    except ValueError:
        return None


@asynccontextmanager
async def local_copy(objects: ObjectStore, key: str) -> AsyncIterator[Path]:
    """``objects.local_path(key)`` entered and left in a worker thread: on S3 that is a download
    (and a delete), which would otherwise stop every other record of the batch meanwhile."""
    if getattr(objects, "local_reads", False):  # a file already on this disk: no thread
        with objects.local_path(key) as path:
            yield path
        return
    manager = objects.local_path(key)
    path = await asyncio.to_thread(manager.__enter__)
    try:
        yield path
    except BaseException:
        if not await asyncio.to_thread(manager.__exit__, *sys.exc_info()):
            raise
    else:
        await asyncio.to_thread(manager.__exit__, None, None, None)
