"""Full-text search on SQLite FTS5: one row per page, so a hit names the document and the page."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

from extract.ports import SearchHit
from infra.local.sqlite import open_database, transaction

_SCHEMA = """
CREATE VIRTUAL TABLE IF NOT EXISTS page_text USING fts5 (
  text,
  document_id UNINDEXED,
  job_id UNINDEXED,
  source_name UNINDEXED,
  page_number UNINDEXED,
  tokenize = 'unicode61 remove_diacritics 2'
);
"""


_OPEN: dict[str, Fts5SearchIndex] = {}


def _in_this_process(path: str) -> Fts5SearchIndex:
    """The index at ``path`` as this process has it open (one connection a process)."""
    index = _OPEN.get(path)
    if index is None:
        index = _OPEN[path] = Fts5SearchIndex(Path(path))
    return index


class Fts5SearchIndex:
    """One connection, used from the indexer's threads one at a time (``_lock``).

    Picklable: a worker process that receives it opens the same database once and keeps it
    open, so a document's pages are tokenised and written by a worker, not the main process
    (SQLite's write lock serialises the writers; WAL lets readers go on)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._db = open_database(path)
        self._db.executescript(_SCHEMA)
        self._lock = threading.Lock()

    def __reduce__(self):
        return (_in_this_process, (str(self.path),))

    def replace_document(self, document_id: str, job_id: str, source_name: str,
                         pages: Iterator[tuple[int, str]]) -> int:
        count = 0
        with self._lock, transaction(self._db) as db:
            db.execute("DELETE FROM page_text WHERE document_id = ?", (document_id,))
            for page_number, text in pages:
                db.execute(
                    "INSERT INTO page_text (text, document_id, job_id, source_name, page_number) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (text, document_id, job_id, source_name, page_number),
                )
                count += 1
        return count

    def search(self, query: str, *, limit: int = 10) -> list[SearchHit]:
        with self._lock:
            rows = self._search(query, limit)
        return [SearchHit(r["document_id"], r["job_id"], r["source_name"], int(r["page_number"]),
                          r["snippet"], float(r["score"])) for r in rows]

    def _search(self, query: str, limit: int) -> list:
        return self._db.execute(
            "SELECT document_id, job_id, source_name, page_number, "
            " snippet(page_text, 0, '[', ']', ' … ', 12) AS snippet, bm25(page_text) AS score "
            "FROM page_text WHERE page_text MATCH ? ORDER BY score LIMIT ?",
            (_fts_query(query), limit),
        ).fetchall()

    def close(self) -> None:
        self._db.close()


def _fts_query(text: str) -> str:
    """Plain words as an AND of quoted terms, so user punctuation is never FTS5 syntax; words
    inside double quotes ("exact phrase") stay together as one phrase."""
    parts = text.split('"')
    terms = [t for i, part in enumerate(parts)
             for t in ([part.strip()] if i % 2 else part.split()) if t.strip()]
    return " ".join(f'"{t}"' for t in terms) or '""'
