"""Handlers: one module per message type, each a ``handle_*`` coroutine; the rest are their parts.

``extract.handling`` routes a received message to its handler and sorts its errors once.

Message handlers (queue -> module):

- ``split``: ``split.handle_split`` sniffs the real format and routes the document by it
  (``split_together.split_together``: split messages received together, in one worker call);
- ``convert``: ``convert.handle_convert`` turns an Office file into a PDF, then splits it;
- ``read``: ``read.handle_read`` reads one unit's pages and stores their Markdown;
- ``sheet``: ``sheet.handle_sheet`` reads one sheet of a workbook (sheets 2..n);
- ``index``: ``index.handle_index`` makes a succeeded job's pages searchable
  (``index.index_together`` for messages received together);
- ``fields``: ``fields.handle_fields`` extracts one schema's fields into a stored result.

Their shared parts: ``sources`` (which stored object a handler reads for a job),
``stored_pages`` (the pages an earlier delivery stored), ``unit_claim`` (a read's claim on its
unit, under a renewed lease).
"""

__all__ = []
