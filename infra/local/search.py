"""Full-text search on SQLite FTS5: one row per page, so a hit names the document and the page.

A document's rows are found through ``page_text_rows`` (document, FTS rowid; a B-tree index),
not through the FTS table: its ``document_id`` column is UNINDEXED, so ``DELETE ... WHERE
document_id = ?`` read every row of the index, and replacing a document cost time in proportion
to everything indexed before it (2.3 ms a document in an empty index, 17.7 ms at 2,000).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from extract.ports import SearchHit
from infra.local.sqlite import open_database, transaction

__all__ = ["Fts5SearchIndex"]

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

# Version 1: each page's FTS rowid by document. An index made before it is filled from the FTS
# table once, by the first process that opens it (under the write lock, so only one does).
_ROWS_SCHEMA = """
CREATE TABLE IF NOT EXISTS page_text_rows (
  page_rowid INTEGER PRIMARY KEY,
  document_id TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS page_text_rows_by_document ON page_text_rows (document_id);
"""
_VERSION = 1


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
        if self._db.execute("PRAGMA user_version").fetchone()[0] < _VERSION:
            with transaction(self._db) as db:
                _upgrade(db)
        self._lock = threading.Lock()

    def __reduce__(self):
        return (_in_this_process, (str(self.path),))

    def replace_document(self, document_id: str, job_id: str, source_name: str,
                         pages: Iterator[tuple[int, str]]) -> int:
        """Make ``pages`` the document's searchable text, in place of what it had."""
        return self.replace_documents([(document_id, job_id, source_name, pages)])[0]

    def replace_documents(self, documents: Sequence[tuple[str, str, str,
                                                          Iterable[tuple[int, str]]]]
                          ) -> list[int]:
        """``replace_document`` for several documents in one transaction (one commit for the
        jobs a poll pass finished, not one each); returns the pages indexed of each."""
        counts = []
        with self._lock, transaction(self._db) as db:
            for document_id, job_id, source_name, pages in documents:
                counts.append(_replace(db, document_id, job_id, source_name, pages))
        return counts

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


def _replace(db: sqlite3.Connection, document_id: str, job_id: str, source_name: str,
             pages: Iterable[tuple[int, str]]) -> int:
    """One document's rows swapped for ``pages``, inside the caller's transaction."""
    old = db.execute("SELECT page_rowid FROM page_text_rows WHERE document_id = ?",
                     (document_id,)).fetchall()
    db.executemany("DELETE FROM page_text WHERE rowid = ?", old)
    db.execute("DELETE FROM page_text_rows WHERE document_id = ?", (document_id,))
    count = 0
    for page_number, text in pages:
        row = db.execute(
            "INSERT INTO page_text (text, document_id, job_id, source_name, page_number) "
            "VALUES (?, ?, ?, ?, ?)",
            (text, document_id, job_id, source_name, page_number),
        ).lastrowid
        db.execute("INSERT INTO page_text_rows (page_rowid, document_id) VALUES (?, ?)",
                   (row, document_id))
        count += 1
    return count


def _upgrade(db: sqlite3.Connection) -> None:
    """Add the rowid table to an index that lacks it (a new one, or one an older doclake
    made), filled from the FTS table's own rows."""
    if db.execute("PRAGMA user_version").fetchone()[0] >= _VERSION:
        return  # another process did it while this one waited for the lock
    for statement in _ROWS_SCHEMA.split(";"):  # not executescript: it would commit first
        if statement.strip():
            db.execute(statement)
    db.execute("INSERT OR IGNORE INTO page_text_rows (page_rowid, document_id) "
               "SELECT rowid, document_id FROM page_text")
    db.execute(f"PRAGMA user_version = {_VERSION}")


def _fts_query(text: str) -> str:
    """Plain words as an AND of quoted terms, so user punctuation is never FTS5 syntax; words
    inside double quotes ("exact phrase") stay together as one phrase."""
    parts = text.split('"')
    terms = [t for i, part in enumerate(parts)
             for t in ([part.strip()] if i % 2 else part.split()) if t.strip()]
    return " ".join(f'"{t}"' for t in terms) or '""'
