"""The pages of a job that an earlier delivery stored, with their metadata.

A redelivered read, or a redelivered split that read the first pages, must not read (or pay
for) a stored page again: it re-emits the page's event from the stored metadata instead. One
listing of the job's pages first (a first delivery finds none and looks no further), then the
metadata of the wanted ones, together: on S3 each is a request the others would wait behind;
on a local disk, inline, cheaper than a thread each.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection

from extract.ports import ObjectStore
from lake.layout import page_number_of, pages_prefix

__all__ = ["stored_pages"]


async def stored_pages(objects: ObjectStore, document_id: str, job_id: str,
                       numbers: Collection[int] | None = None) -> dict[int, dict[str, str]]:
    """Stored page number -> its metadata (reader, chars), among ``numbers`` (None: all)."""
    inline = getattr(objects, "local_reads", False)
    prefix = pages_prefix(document_id, job_id)
    keys = objects.list(prefix) if inline else await asyncio.to_thread(objects.list, prefix)
    wanted = [(page_number_of(key), key) for key in keys]
    if numbers is not None:
        wanted = [(number, key) for number, key in wanted if number in numbers]

    async def look(key: str) -> dict[str, str] | None:
        return objects.head(key) if inline else await asyncio.to_thread(objects.head, key)

    metadata = await asyncio.gather(*(look(key) for _, key in wanted))
    return {number: found for (number, _), found in zip(wanted, metadata, strict=True)
            if found is not None}
