"""Queue messages: ids only, never document bytes, with a ``type`` field for routing.

On AWS all functions share one image and read ``type`` to pick a handler; locally the runtime
does the same. Each type has its own queue so that each can have its own concurrency.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

__all__ = ["SPLIT_QUEUE", "READ_QUEUE", "INDEX_QUEUE", "FIELDS_QUEUE", "CONVERT_QUEUE", "SHEET_QUEUE",
           "QUEUES", "dead_letter_queue", "SplitMessage", "ReadUnitMessage", "ConvertMessage",
           "ReadSheetMessage", "IndexMessage", "FieldsMessage", "Message", "parse_message"]

SPLIT_QUEUE = "split"
READ_QUEUE = "read"
INDEX_QUEUE = "index"
FIELDS_QUEUE = "fields"
CONVERT_QUEUE = "convert"  # Office to PDF with LibreOffice: its own, smaller, concurrency
SHEET_QUEUE = "sheet"  # one spreadsheet sheet a message, sheets 2..n of a workbook
QUEUES = (SPLIT_QUEUE, READ_QUEUE, INDEX_QUEUE, FIELDS_QUEUE, CONVERT_QUEUE, SHEET_QUEUE)


def dead_letter_queue(queue: str) -> str:
    """The name of a queue's dead-letter queue."""
    return f"{queue}-dlq"


class _Message(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    document_id: str
    job_id: str


class SplitMessage(_Message):
    """Plan a job: sniff the format, count pages, write the units."""

    type: Literal["split"] = "split"


class ReadUnitMessage(_Message):
    """Read the pages of one unit and store their text."""

    type: Literal["read_unit"] = "read_unit"
    unit_id: str


class ConvertMessage(_Message):
    """Convert an Office file to PDF, store it, then split it like a PDF in the same run."""

    type: Literal["convert"] = "convert"


class ReadSheetMessage(_Message):
    """Read one sheet of a workbook (a unit of kind ``sheet``) and store its text."""

    type: Literal["read_sheet"] = "read_sheet"
    unit_id: str


class IndexMessage(_Message):
    """Merge a succeeded job's pages into the search index."""

    type: Literal["index"] = "index"


class FieldsMessage(_Message):
    """Extract a schema's fields from a finished job's pages with one strategy, and publish them.

    The request travels in the message (not in a worker's settings), so a worker resuming after a
    crash extracts exactly what the run asked for."""

    type: Literal["fields"] = "fields"
    schema_name: str
    """``nda`` or ``MODULE:CLASS``, as ``--fields`` gave it."""
    strategy: str


Message = Annotated[SplitMessage | ReadUnitMessage | IndexMessage | FieldsMessage
                    | ConvertMessage | ReadSheetMessage, Field(discriminator="type")]
_ADAPTER: TypeAdapter[Message] = TypeAdapter(Message)


def parse_message(body: str) -> (SplitMessage | ReadUnitMessage | IndexMessage | FieldsMessage
                                 | ConvertMessage | ReadSheetMessage):
    """Parse a message body; raises ``pydantic.ValidationError`` on a malformed one."""
    return _ADAPTER.validate_json(body)

