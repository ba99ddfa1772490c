"""The local full-text index (SQLite FTS5): replacing a document costs the same whatever else is
indexed, and an index made by an older doclake is upgraded in place without losing a page."""

from __future__ import annotations

import sqlite3

from infra.local.search import Fts5SearchIndex

OLD_SCHEMA = """
CREATE VIRTUAL TABLE page_text USING fts5 (
  text, document_id UNINDEXED, job_id UNINDEXED, source_name UNINDEXED, page_number UNINDEXED,
  tokenize = 'unicode61 remove_diacritics 2'
);
"""


def _steps_to_replace(index: Fts5SearchIndex, document_id: str) -> int:
    """SQLite virtual-machine steps (in hundreds) that replacing one document takes: a count
    that grows with the rows a statement reads, and does not depend on the machine's speed."""
    steps = 0

    def count() -> int:
        nonlocal steps
        steps += 1
        return 0

    index._db.set_progress_handler(count, 100)
    try:
        index.replace_document(document_id, "j2", f"{document_id}.pdf",
                               iter([(1, "a replaced page"), (2, "another one")]))
    finally:
        index._db.set_progress_handler(None, 100)
    return steps


def _fill(index: Fts5SearchIndex, documents: int) -> None:
    page = "This agreement between the parties shall remain confidential for five years. " * 20
    for number in range(documents):
        index.replace_document(f"d{number}", "j1", f"d{number}.pdf",
                               iter([(p, page) for p in range(1, 7)]))


def test_replacing_a_document_reads_only_its_own_rows(tmp_path):
    small = Fts5SearchIndex(tmp_path / "small.db")
    large = Fts5SearchIndex(tmp_path / "large.db")
    _fill(small, 10)
    _fill(large, 300)
    in_small, in_large = _steps_to_replace(small, "d5"), _steps_to_replace(large, "d5")
    # Reading every row of the FTS table (the old DELETE by an UNINDEXED column) made the large
    # index's count eighteen times the small one's (236 against 13 hundred-steps).
    assert in_large <= 2 * in_small + 20, (in_small, in_large)
    assert [h.page_number for h in large.search("replaced")] == [1]
    assert {h.document_id for h in large.search("agreement", limit=2000)} == \
        {f"d{n}" for n in range(300)} - {"d5"}


def test_an_index_made_before_the_rowid_table_is_upgraded_on_open(tmp_path):
    path = tmp_path / "search.db"
    old = sqlite3.connect(path)
    old.executescript(OLD_SCHEMA)
    old.executemany("INSERT INTO page_text VALUES (?, ?, ?, ?, ?)", [
        ("old zebra", "d", "j1", "a.pdf", 1), ("old okapi", "d", "j1", "a.pdf", 2),
        ("a kept llama", "e", "j9", "b.pdf", 1)])
    old.commit()
    old.close()

    index = Fts5SearchIndex(path)
    Fts5SearchIndex(path)  # a second process opening it finds it upgraded: nothing twice
    assert index.replace_document("d", "j2", "a.pdf", iter([(1, "new giraffe")])) == 1

    assert index.search("zebra") == [] and index.search("okapi") == []
    assert [(h.document_id, h.job_id) for h in index.search("giraffe")] == [("d", "j2")]
    assert [(h.document_id, h.page_number) for h in index.search("llama")] == [("e", 1)]
    rows = sqlite3.connect(path).execute(
        "SELECT document_id, count(*) FROM page_text_rows GROUP BY document_id").fetchall()
    assert sorted(rows) == [("d", 1), ("e", 1)]
