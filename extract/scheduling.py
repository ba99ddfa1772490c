"""Who goes first: the document with the least work left, ties by arrival, no one starved.

One rule for every queue and lane, locally and on AWS. A message or a CPU call carries a
*schedule key*; smaller goes first. The key is the moment the work arrived plus a price for the
pages its document still has to read::

    key = arrived_at + min(pages_left, PAGES_PRICED) * PAGE_WEIGHT_S

- Shortest remaining first: of two pieces of work that arrived together, the one whose
  document has fewer pages left has the smaller key, so a one-page letter's units pass a
  352-page book's and a scan's OCR pages.
- Ties by arrival: equal pages, the earlier arrival goes first.
- Starvation-free (age raises priority): the key is fixed when the work arrives, and work that
  arrives later has a later ``arrived_at``; so the book's units, priced ``PAGES_PRICED * 0.5``
  seconds at most, go before any work arriving more than that long after them, however small.
  In the words of aging: every second waited is worth two pages less.

On AWS, SQS has no priorities: ``queue_class`` picks a queue for small documents beside the bulk
one (each with its own consumers and cap), by the same page count.

Pure functions, no I/O: the SQLite queue stores the key as a column, the runtime's CPU lanes order
their waiting calls by it, and the AWS router reads ``queue_class``.
"""

from __future__ import annotations

import math
from typing import Literal

__all__ = [
    "SMALL_QUEUE_SUFFIX",
    "BYTES_PER_PAGE_GUESS",
    "PAGES_PRICED",
    "PAGE_WEIGHT_S",
    "SMALL_DOCUMENT_PAGES",
    "QueueClass",
    "guess_pages",
    "port_queue",
    "queue_class",
    "schedule_key",
    "small_queue",
]

PAGE_WEIGHT_S = 0.5
"""Seconds of waiting one page of remaining work is worth. A page of the text layer reads in a
millisecond, an OCR page in seconds: half a second keeps a small document ahead of the bulk that
arrived with it, and lets no piece of work wait longer than ``PAGES_PRICED * PAGE_WEIGHT_S`` behind
later arrivals."""

PAGES_PRICED = 400
"""Pages past this count no more: a 5,000-page file waits at most 200 s behind later work."""

BYTES_PER_PAGE_GUESS = 50_000
"""Before a document is opened (a split, an Office file's conversion) its pages are guessed from
its size: a page of a typical office file or PDF weighs tens of kilobytes."""

SMALL_DOCUMENT_PAGES = 20
"""At most this many pages left: a small document (the write-up's 1 to 20 pages bucket)."""

QueueClass = Literal["small", "bulk"]


def guess_pages(size_bytes: int | None) -> int:
    """Pages of a document not yet opened, from its size: at least 1."""
    if not size_bytes or size_bytes <= 0:
        return 1
    return max(1, math.ceil(size_bytes / BYTES_PER_PAGE_GUESS))


def schedule_key(pages_left: int | None, arrived_at: float, *,
                 page_weight_s: float = PAGE_WEIGHT_S) -> float:
    """The key of work that arrived at ``arrived_at`` (seconds, any clock the compared keys
    share) for a document with ``pages_left`` pages still to read; smaller goes first. Unknown
    pages count as one (the work is a split or a last step, both short)."""
    pages = 1 if pages_left is None else max(0, pages_left)
    return arrived_at + min(pages, PAGES_PRICED) * page_weight_s


def queue_class(pages_left: int | None) -> QueueClass:
    """Which of two queues a message goes to where the queue service has no priorities (SQS):
    ``small`` for a document with at most ``SMALL_DOCUMENT_PAGES`` pages left (or unknown: a
    split, a conversion, a last step), ``bulk`` otherwise."""
    if pages_left is None or pages_left <= SMALL_DOCUMENT_PAGES:
        return "small"
    return "bulk"


SMALL_QUEUE_SUFFIX = "-small"
"""A queue's twin for small documents, where the service has no priorities: ``read-small``."""


def small_queue(queue: str) -> str:
    """The name of ``queue``'s small-documents twin (``read`` -> ``read-small``; a dead-letter
    queue's: ``read-dlq`` -> ``read-small-dlq``)."""
    if queue.endswith("-dlq"):
        return f"{queue.removesuffix('-dlq')}{SMALL_QUEUE_SUFFIX}-dlq"
    return f"{queue}{SMALL_QUEUE_SUFFIX}"


def port_queue(name: str) -> str:
    """The queue a twin stands for (``read-small`` -> ``read``, ``read-small-dlq`` ->
    ``read-dlq``): what its messages are handled as."""
    if name.endswith(f"{SMALL_QUEUE_SUFFIX}-dlq"):
        return f"{name.removesuffix(f'{SMALL_QUEUE_SUFFIX}-dlq')}-dlq"
    return name.removesuffix(SMALL_QUEUE_SUFFIX)
