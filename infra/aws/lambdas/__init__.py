"""Lambda entry points: thin edges over the same handlers the local runtime runs.

``extraction`` (split, read, sheet, convert, index, fields: the message ``type`` decides) and
``ingest`` run from the extraction image; ``poller`` and ``compaction`` too (scheduled);
``presigner`` and ``publisher`` ship as thin zips and import neither pydantic nor pyarrow.
"""

__all__ = []
