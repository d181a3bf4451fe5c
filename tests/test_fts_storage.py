"""The keyword indexes store no second copy of the text, and stay consistent across upgrades and edits.

``memories_fts`` and ``chunks_fts`` are external-content FTS5 tables (``content='memories'`` /
``content='chunks'``): they keep only the inverted index and per-row sizes, and read columns from
the rows themselves. Their triggers pass the old values to FTS5's 'delete' command, so an update
or a delete leaves no stale terms; ``integrity-check`` with rank 1 compares the index with the rows.
"""

from __future__ import annotations

from pathlib import Path

from ccmemory import db as database
from ccmemory import memories, migrations, search

STAMP = "2025-01-01T00:00:00.000000Z"
# Migration 7 rebuilt both keyword indexes with the Porter stemmer from the stored rows.
BEFORE_PORTER_REBUILD = 6


def _integrity(db: database.Database) -> None:
    """Raises if either index disagrees with its content table (rank 1: compare with the rows)."""
    db.execute("INSERT INTO memories_fts(memories_fts, rank) VALUES ('integrity-check', 1)")
    db.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 1)")


def _found(db: database.Database, project: int, query: str) -> set[str]:
    hits = search.search(db, query, project_id=project, mode="keyword", limit=50, track=False)
    return {hit.memory.id for hit in hits}


def _vocab_docs(db: database.Database, term: str) -> int:
    return db.scalar("SELECT doc FROM memories_vocab WHERE term = ?", (term,)) or 0


def test_keyword_indexes_are_external_content_without_a_copy_of_the_text(db) -> None:
    for table, content in (("memories_fts", "memories"), ("chunks_fts", "chunks")):
        sql = db.scalar("SELECT sql FROM sqlite_master WHERE name = ?", (table,))
        assert f"content='{content}'" in sql and "content_rowid='seq'" in sql and "porter" in sql
        shadows = {row["name"] for row in db.rows("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE ?",
                                                   (table + "%",))}
        assert shadows == {table, f"{table}_data", f"{table}_idx", f"{table}_docsize", f"{table}_config"}


def _database_before_porter_rebuild(path: Path) -> None:
    """A database at schema version 6 (the keyword index without stemming) with memories and chunks in it."""
    db = database.connect(path, migrate=False)
    try:
        for number in range(1, BEFORE_PORTER_REBUILD + 1):
            with db.transaction():
                migrations.MIGRATIONS[number - 1](db)
                db.execute(f"PRAGMA user_version = {number}")
        with db.transaction():
            db.execute("INSERT INTO projects(id, path, name, created_at) VALUES (1, ?, 'p', ?)", (str(path.parent), STAMP))
            rows = [("old-retry", "Fixed the flaky retry loop in the uploader", '["ci"]', '["src/upload.py"]')]
            rows += [(f"old-{n}", f"Ran the linter over module number {n}", '["Bash"]', "[]") for n in range(1200)]
            for memory_id, content, tags, files in rows:
                # Added on their own, outside a session: search lends no score to a session's neighbours.
                db.execute("INSERT INTO memories(id, project_id, content, sector, tier, tags, files, "
                           "created_at, updated_at) VALUES (?, 1, ?, 'episodic', 'project', ?, ?, ?, ?)",
                           (memory_id, content, tags, files, STAMP, STAMP))
            db.execute("INSERT INTO documents(id, project_id, title, content_hash, created_at, updated_at) "
                       "VALUES ('doc', 1, 'Runbook', 'h', ?, ?)", (STAMP, STAMP))
            db.execute("INSERT INTO chunks(document_id, ordinal, heading, content) "
                       "VALUES ('doc', 0, 'Deploys', 'Restarting the workers after a deploy')")
    finally:
        db.close()


def test_after_the_rebuild_search_finds_old_and_new_memories_and_edits_keep_the_index_consistent(
        home: Path) -> None:
    path = home / "ccmemory.db"
    _database_before_porter_rebuild(path)
    db = database.connect(path)
    try:
        assert migrations.current_version(db) == migrations.target_version()
        _integrity(db)
        assert db.scalar("SELECT COUNT(*) FROM memories_fts") == db.scalar("SELECT COUNT(*) FROM memories") == 1201
        # Rows written before the upgrade are found, through the stemmer ("fixes" -> "fix" <- "Fixed").
        assert _found(db, 1, "fixes retrying") == {"old-retry"}
        assert _vocab_docs(db, "linter") == 1200 and _vocab_docs(db, "fix") == 1
        assert db.scalar("SELECT COUNT(*) FROM chunks_fts WHERE chunks_fts MATCH 'restart'") == 1

        added = memories.add(db, project_id=1, content="Fixing the retry budget of the uploader", tags=["ci"],
                             files=["src/budget.py"])
        assert _found(db, 1, "fixes retrying") == {"old-retry", added.id}
        assert _found(db, 1, "budget") == {added.id}
        assert _vocab_docs(db, "fix") == 2
        _integrity(db)

        # Text, tags and files change in place: old terms leave the index, new ones are found.
        assert memories.rewrite(db, "old-retry", "Replaced the uploader's backoff with jitter", project_id=1,
                                tags=["network"], files=["src/backoff.py"])
        assert _found(db, 1, "fixes") == {added.id}
        assert _found(db, 1, "jitter") == _found(db, 1, "network") == _found(db, 1, "backoff") == {"old-retry"}
        assert _vocab_docs(db, "fix") == 1 and _vocab_docs(db, "loop") == 0
        _integrity(db)
        # Tags alone (a column the text trigger does not watch) follow too.
        with db.transaction():
            db.execute("UPDATE memories SET tags = '[\"flaky\"]' WHERE id = ?", (added.id,))
        assert _found(db, 1, "flaky") == {added.id} and _vocab_docs(db, "ci") == 0
        _integrity(db)

        # A soft delete hides a memory from search; a hard delete removes it from the index.
        memories.delete(db, "old-retry", project_id=1)
        assert _found(db, 1, "jitter") == set()
        memories.delete(db, "old-retry", project_id=1, hard=True)
        memories.delete(db, added.id, project_id=1, hard=True)
        with db.transaction():
            db.execute("DELETE FROM memories WHERE id LIKE 'old-1%'")
            db.execute("UPDATE chunks SET content = 'Rolling back a release' WHERE document_id = 'doc'")
        assert _vocab_docs(db, "jitter") == _vocab_docs(db, "flaky") == 0
        assert db.scalar("SELECT COUNT(*) FROM memories_fts") == db.scalar("SELECT COUNT(*) FROM memories")
        assert _vocab_docs(db, "linter") == db.scalar("SELECT COUNT(*) FROM memories")
        assert db.scalar("SELECT COUNT(*) FROM chunks_fts WHERE chunks_fts MATCH 'restart'") == 0
        assert db.scalar("SELECT COUNT(*) FROM chunks_fts WHERE chunks_fts MATCH 'roll'") == 1
        _integrity(db)
    finally:
        db.close()
