"""Upgrading a database made by the first released schema, full of data.

The database is built from the first release's schema frozen in ``fixtures/schema_v1.sql`` (not
from today's migration code, which could drift) and filled through plain SQL with every kind of
row. Opening it with today's code must take a backup first, keep every row and every value, and be
idempotent. Released migrations must never change: migration 1 still creates exactly the frozen
schema, and migrations 1-11 exactly the frozen ``fixtures/schema_v11.json``.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import sqlite3
from pathlib import Path
from typing import Any

from testing.schema import add_memory, old_project, store_before

from ccmemory import db as database, migrations, paths

FIXTURES = Path(__file__).parent / "fixtures"
V1_TABLES = ("projects", "sessions", "memories", "session_memories", "memory_relationships", "documents", "chunks")
PROJECTS, SESSIONS, MEMORIES_PER_SESSION = 3, 20, 50


def _first_schema_database(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    created = sqlite3.connect(path)
    created.executescript((FIXTURES / "schema_v1.sql").read_text(encoding="utf-8"))
    created.execute("PRAGMA user_version = 1")
    created.close()
    db = database.connect(path, migrate=False)
    try:
        with db.transaction():
            stamp = "2025-01-01T00:00:00.000000Z"
            for p in range(1, PROJECTS + 1):
                db.execute("INSERT INTO projects(id, path, name, created_at) VALUES (?, ?, ?, ?)",
                           (p, f"/work/project-{p}", f"project-{p}", stamp))
                for s in range(SESSIONS):
                    session = f"s-{p}-{s}"
                    db.execute("INSERT INTO sessions(id, project_id, started_at, summary) VALUES (?, ?, ?, ?)",
                               (session, p, stamp, f"Session {s} of project {p}: fixed the flaky test"))
                    for m in range(MEMORIES_PER_SESSION):
                        memory = f"{p:02d}{s:03d}{m:03d}-0000-4000-8000-000000000000"
                        db.execute(
                            "INSERT INTO memories(id, project_id, session_id, content, sector, tier, category, "
                            "tags, files, created_at, updated_at, is_deleted, valid_until) "
                            "VALUES (?, ?, ?, ?, 'episodic', 'session', 'general', '[\"Bash\"]', '[]', ?, ?, ?, ?)",
                            (memory, p, session, f"Ran pytest -k case{m} in session {s} \u00e9\u4e2d", stamp, stamp,
                             int(m % 17 == 0), stamp if m % 13 == 0 else None))
                        db.execute("INSERT INTO session_memories(session_id, memory_id, usage_type, created_at) "
                                   "VALUES (?, ?, 'created', ?)", (session, memory, stamp))
                        if s and m % 10 == 1:  # also used by the session before: usage the upgrade keeps
                            for usage in ("recalled", "reinforced", "created"):
                                db.execute("INSERT INTO session_memories(session_id, memory_id, usage_type, "
                                           "created_at) VALUES (?, ?, ?, ?)", (f"s-{p}-{s - 1}", memory, usage, stamp))
                        if m:
                            db.execute("INSERT INTO memory_relationships(source_id, target_id, relationship_type, "
                                       "created_at) VALUES (?, ?, 'RELATES_TO', ?)",
                                       (memory, f"{p:02d}{s:03d}{m - 1:03d}-0000-4000-8000-000000000000", stamp))
                db.execute("INSERT INTO documents(id, project_id, title, content_hash, created_at, updated_at) "
                           "VALUES (?, ?, 'Runbook', 'h', ?, ?)", (f"doc-{p}", p, stamp, stamp))
                for c in range(30):
                    db.execute("INSERT INTO chunks(document_id, ordinal, heading, content) VALUES (?, ?, 'H', ?)",
                               (f"doc-{p}", c, f"Chunk {c}: restart the worker with make bounce"))
    finally:
        db.close()


def _first_schema_database_and_copy(tmp_path: Path) -> tuple[Path, Path]:
    """A filled first-schema store under ``tmp_path/data`` and an untouched copy of it to compare with."""
    path = tmp_path / "data" / paths.DB_FILENAME
    _first_schema_database(path)
    original = tmp_path / "original.db"
    source = sqlite3.connect(path)
    source.execute("VACUUM INTO ?", (str(original),))
    source.close()
    return path, original


def _dump(path: Path) -> dict[str, list[tuple]]:
    connection = sqlite3.connect(path)
    try:
        return {table: connection.execute(f"SELECT * FROM {table} ORDER BY rowid").fetchall() for table in V1_TABLES}
    finally:
        connection.close()


def _dump_v1_columns(path: Path, reference: Path) -> dict[str, list[tuple]]:
    """The rows of ``path`` restricted to the columns the first schema had, in its column order."""
    old = sqlite3.connect(reference)
    new = sqlite3.connect(path)
    try:
        result = {}
        for table in V1_TABLES:
            columns = [row[1] for row in old.execute(f"PRAGMA table_info({table})")]
            result[table] = new.execute(f"SELECT {', '.join(columns)} FROM {table} ORDER BY rowid").fetchall()
        return result
    finally:
        old.close()
        new.close()


def _without_derived_links(dump: dict[str, list[tuple]]) -> dict[str, list[tuple]]:
    """``dump`` less the 'created' usage rows naming the memory's own session (its session_id says it)."""
    own_session = {row[1]: row[3] for row in dump["memories"]}  # id -> session_id (the first schema's order)
    links = [row for row in dump["session_memories"] if not (row[2] == "created" and own_session[row[1]] == row[0])]
    return {**dump, "session_memories": links}


def test_first_schema_database_upgrades_with_backup_every_row_kept_and_idempotently(tmp_path: Path) -> None:
    path, original = _first_schema_database_and_copy(tmp_path)
    before = _dump(original)
    assert len(before["memories"]) == PROJECTS * SESSIONS * MEMORIES_PER_SESSION

    db = database.connect(path)
    assert migrations.current_version(db) == migrations.target_version()
    db.close()
    backups = sorted(p for p in path.parent.iterdir() if p.name.endswith(".bak"))
    assert len(backups) == 1 and ".v1-" in backups[0].name
    assert _dump(backups[0]) == before, "the backup is the database as it was before the upgrade"
    kept = _without_derived_links(before)
    assert len(kept["session_memories"]) == 3 * PROJECTS * (SESSIONS - 1) * (MEMORIES_PER_SESSION // 10)
    assert _dump_v1_columns(path, original) == kept, \
        "every row and value of the first schema is kept, but 'created' links that repeat a memory's session_id"
    upgraded = sqlite3.connect(path)
    fts = upgraded.execute("SELECT COUNT(*) FROM memories_fts WHERE memories_fts MATCH 'pytest'")
    assert fts.fetchone()[0] == len(before["memories"])
    for index in ("memories_fts", "chunks_fts"):  # the rebuilt keyword indexes agree with their rows
        upgraded.execute(f"INSERT INTO {index}({index}, rank) VALUES ('integrity-check', 1)")
    upgraded.close()

    for _ in range(2):
        again = database.connect(path)
        assert migrations.migrate(again) == 0
        again.close()
    assert sorted(p for p in path.parent.iterdir() if p.name.endswith(".bak")) == backups
    assert _dump_v1_columns(path, original) == kept
    assert oct(os.stat(backups[0]).st_mode & 0o777) == oct(0o600)


def test_creation_link_migration_removes_only_links_that_repeat_the_memory_session(tmp_path: Path) -> None:
    from ccmemory import memories

    path = tmp_path / "v8.db"
    old = store_before(migrations._m009_creation_links_derived, path)
    with old.transaction():
        project = old_project(old, str(tmp_path))
        first = add_memory(old, project_id=project, content="made in s-1", session_id="s-1").id
        second = add_memory(old, project_id=project, content="made in s-2", session_id="s-2").id
        loose = add_memory(old, project_id=project, content="made outside any session").id
        links = [("s-1", first, "created"), ("s-2", second, "created"),  # repeat session_id: removed
                 ("s-2", first, "created"), ("s-1", loose, "created"),  # another session, or none: kept
                 ("s-1", first, "recalled"), ("s-2", first, "reinforced"), ("s-1", second, "updated")]
        for session, memory, usage in links:
            old.execute("INSERT INTO session_memories(session_id, memory_id, usage_type, created_at) "
                        "VALUES (?, ?, ?, '2026-01-01T00:00:00.000Z')", (session, memory, usage))
    old.close()

    upgraded = database.connect(path)
    try:
        kept = {(row["session_id"], row["memory_id"], row["usage_type"])
                for row in upgraded.rows("SELECT * FROM session_memories")}
        assert kept == set(links[2:])
        # the session index now also detects retried captures (NULL keys never collide)
        assert memories.add(upgraded, project_id=project, content="retried", session_id="s-1",
                            dedupe_key="toolu_9").id == \
            memories.add(upgraded, project_id=project, content="retried", session_id="s-1", dedupe_key="toolu_9").id
        assert upgraded.scalar("SELECT COUNT(*) FROM memories WHERE session_id = 's-1'") == 2
        plan = " ".join(str(row) for row in upgraded.rows(
            "EXPLAIN QUERY PLAN SELECT id FROM memories WHERE session_id = ? ORDER BY created_at", ("s-1",)))
        assert "memories_session" in plan
    finally:
        upgraded.close()


def test_embedding_model_migration_keeps_every_vector_under_a_model_number(tmp_path: Path) -> None:
    from ccmemory import memories

    path = tmp_path / "v10.db"
    old = store_before(migrations._m011_embedding_model_numbers, path)
    model = "sentence-transformers/all-MiniLM-L6-v2@onnx-int8-8199be6f"
    with old.transaction():
        project = old_project(old, str(tmp_path))
        made = [add_memory(old, project_id=project, content=f"memory {n}") for n in range(3)]
        for n, memory in enumerate(made):
            old.execute("INSERT INTO memory_embeddings(item_seq, model_id, vector, indexed, created_at) "
                        "VALUES (?, ?, ?, ?, '2026-01-01T00:00:00.000Z')",
                        (memory.seq, model if n else "another-model", bytes([n]) * 4, n % 2))
    old.close()

    db = database.connect(path)
    try:
        assert {row["model_id"] for row in db.rows("SELECT model_id FROM embedding_models")} == {model, "another-model"}
        rows = db.rows("SELECT e.item_seq, m.model_id, e.vector, e.indexed FROM memory_embeddings e "
                       "JOIN embedding_models m ON m.id = e.model ORDER BY e.item_seq")
        assert rows == [{"item_seq": memory.seq, "model_id": model if n else "another-model",
                         "vector": bytes([n]) * 4, "indexed": n % 2} for n, memory in enumerate(made)]
        columns = [row["name"] for row in db.rows("PRAGMA table_info(memory_embeddings)")]
        assert columns == ["id", "item_seq", "part", "model", "vector", "indexed"]  # parts since migration 13
        # the triggers that named the rebuilt tables still work: a changed text drops its vector, queued for the index
        with db.transaction():
            db.execute("UPDATE memories SET content = 'memory 1, reworded' WHERE seq = ?", (made[1].seq,))
        assert db.scalar("SELECT COUNT(*) FROM memory_embeddings WHERE item_seq = ?", (made[1].seq,)) == 0
        assert db.scalar("SELECT COUNT(*) FROM vector_tombstones WHERE kind = 'memory' AND vector_id = ?",
                         (made[1].seq,)) == 1
        memories.delete(db, made[2].id, project_id=project, hard=True)
        assert db.scalar("SELECT COUNT(*) FROM memory_embeddings") == 1
        assert db.scalar("PRAGMA foreign_key_check") is None
    finally:
        db.close()


def _schema(db: database.Database) -> list[list[str]]:
    return [[row["type"], row["name"], row["tbl_name"], row["sql"]] for row in
            db.rows("SELECT type, name, tbl_name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY type, name")]


def test_released_migrations_still_create_the_frozen_schemas(tmp_path: Path) -> None:
    """Editing a released migration would give users who ran the old one a schema today's code never
    sees; a change to the schema must be a new migration, so these files are never regenerated."""
    frozen = sqlite3.connect(tmp_path / "frozen.db")
    frozen.executescript((FIXTURES / "schema_v1.sql").read_text(encoding="utf-8"))
    frozen.close()
    first = store_before(migrations.MIGRATIONS[1], tmp_path / "v1.db")
    expected = database.connect(tmp_path / "frozen.db", migrate=False)
    assert _schema(first) == _schema(expected), "migration 1 changed since it was released"
    first.close()
    expected.close()
    for fixture in sorted(FIXTURES.glob("schema_v*.json")):
        released = json.loads(fixture.read_text(encoding="utf-8"))
        version = released["version"]
        built = database.connect(tmp_path / f"v{version}.db", migrate=False)
        with built.transaction():
            for step in migrations.MIGRATIONS[:version]:
                step(built)
        assert _schema(built) == released["objects"], f"migrations 1-{version} changed since they were released"
        built.close()


def _open_at_once(path: str, barrier: Any, results: Any) -> None:
    barrier.wait()
    try:
        database.connect(path).close()
        results.put("ok")
    except Exception as exc:
        results.put(f"{type(exc).__name__}: {exc}")


def _open_together(path: Path, processes: int = 8) -> list[str]:
    """Open ``path`` from ``processes`` processes released at the same instant; what each said."""
    context = multiprocessing.get_context("fork")
    barrier, results = context.Barrier(processes), context.Queue()
    workers = [context.Process(target=_open_at_once, args=(str(path), barrier, results)) for _ in range(processes)]
    for worker in workers:
        worker.start()
    said = [results.get(timeout=120) for _ in workers]
    for worker in workers:
        worker.join(60)
    return said


def test_processes_opening_a_new_store_together_all_open_it(tmp_path: Path) -> None:
    """A first session's hooks create the store together: none may fail (each failure was a lost capture)."""
    for attempt in range(20):
        path = tmp_path / f"store-{attempt}" / paths.DB_FILENAME
        path.parent.mkdir()
        assert _open_together(path) == ["ok"] * 8
        db = database.connect(path)
        assert migrations.current_version(db) == migrations.target_version()
        db.close()
        assert not [p for p in path.parent.iterdir() if p.name.endswith(".bak")]  # a new store needs no backup


def test_processes_upgrading_an_old_store_together_back_it_up_once_and_keep_every_row(tmp_path: Path) -> None:
    """After an update, SessionStart, the MCP server and the CLI may open the old file together."""
    path, original = _first_schema_database_and_copy(tmp_path)
    assert _open_together(path) == ["ok"] * 8
    backups = [p for p in path.parent.iterdir() if p.name.endswith(".bak")]
    assert len(backups) == 1 and _dump(backups[0]) == _dump(original)
    assert _dump_v1_columns(path, original) == _without_derived_links(_dump(original))


def embedded_then(old: Any, embedder: Any, written: list[tuple[Any, str]]) -> None:
    """Give each (memory, text) of a store at an older schema the one vector its build made, as that build did."""
    from ccmemory import embeddings, vectors

    model = embeddings.model_number(old, embedder.model_id)
    for memory, text in written:
        old.execute("INSERT INTO memory_embeddings(item_seq, model, vector, indexed) VALUES (?, ?, ?, 0)",
                    (memory.seq, model, vectors.quantize(embedder.embed([text])[0])))
        old.execute("UPDATE memories SET needs_embedding = 0 WHERE seq = ?", (memory.seq,))
    old.execute("INSERT INTO meta(key, value) VALUES ('embeddings_model:memory', ?)", (embedder.model_id,))


def test_windows_migration_keeps_first_vectors_and_the_pass_adds_the_rest(home: Path, embedder) -> None:
    """A store from before windows keeps each vector (now part 0, id = seq, still indexed); its long
    memories are flagged, and the embedding pass adds their further windows without redoing the first."""
    from ccmemory import embeddings, memories, projects, vectors

    path = home / "ccmemory.db"
    old = store_before(migrations._m017_embedding_windows, path)
    long_text = " ".join(f"Paragraph {n}: the deploy copies bundle {n} to the edge cache." for n in range(80))
    with old.transaction():
        project = projects.project_id(old, str(home))
        short = add_memory(old, project_id=project, content="A short note")
        long = add_memory(old, project_id=project, content=long_text)
        embedded_then(old, embedder, [(short, "A short note"), (long, long_text)])
    old.close()

    db = database.connect(path, vectors=True)
    try:
        first = {row["item_seq"]: row for row in db.rows("SELECT id, item_seq, part, vector FROM memory_embeddings")}
        assert {seq: (row["id"], row["part"]) for seq, row in first.items()} == {short.seq: (short.seq, 0),
                                                                                long.seq: (long.seq, 0)}
        # Both are notes: the long one for its windows, the short one for its sentences (migration 19; it has one).
        assert [row["seq"] for row in db.rows("SELECT seq FROM memories WHERE needs_embedding = 1")] == [short.seq,
                                                                                                           long.seq]
        assert embeddings.pending_count(db, embedder.model_id, keyword_only=True) == 0  # found by meaning meanwhile
        assert embeddings.embed_pending(db, embedder) == 2
        assert db.rows("SELECT id, part, vector FROM memory_embeddings WHERE item_seq = ?", (short.seq,)) == [
            {"id": short.seq, "part": 0, "vector": first[short.seq]["vector"]}]
        parts = db.rows("SELECT id, part, vector FROM memory_embeddings WHERE item_seq = ? ORDER BY part", (long.seq,))
        assert len(parts) > 3 and (parts[0]["id"], parts[0]["vector"]) == (long.seq, first[long.seq]["vector"])
        assert db.scalar("SELECT COUNT(*) FROM memory_vec") == len(parts) + 1
        memories.delete(db, long.id, project_id=project, hard=True)
        vectors.sync(db, "memory", embedder.model_id)
        assert db.scalar("SELECT COUNT(*) FROM memory_vec") == 1
    finally:
        db.close()


def test_the_sentence_migration_keeps_each_vector_and_the_pass_adds_the_sentences(home: Path, embedder) -> None:
    """A store from before sentence vectors: a note of several sentences is flagged and gets one vector per
    sentence beside the one it has (kept); a captured call is not flagged."""
    import numpy

    from ccmemory import embeddings, projects

    path = home / "ccmemory.db"
    old = store_before(migrations._m019_sentence_vectors, path)
    note = ("Ben: Hey Anna! Long time no talk, how is the studio going? Last week was wild, "
            "fashion editors noticed my sketches. Anyway, the kids are fine.")
    with old.transaction():
        project = projects.project_id(old, str(home))
        command = "Bash: pytest -q. All tests pass. Ran in 3 s."
        turn = add_memory(old, project_id=project, content=note)
        call = add_memory(old, project_id=project, content=command, source="capture")
        embedded_then(old, embedder, [(turn, note), (call, command)])
    old.close()

    db = database.connect(path, vectors=True)
    try:
        kept = db.scalar("SELECT vector FROM memory_embeddings WHERE item_seq = ? AND part = 0", (turn.seq,))
        assert [row["seq"] for row in db.rows("SELECT seq FROM memories WHERE needs_embedding = 1")] == [turn.seq]
        assert embeddings.embed_pending(db, embedder) == 1
        parts = db.rows("SELECT part, vector FROM memory_embeddings WHERE item_seq = ? ORDER BY part", (turn.seq,))
        assert [row["part"] for row in parts] == [0, 1, 2, 3, 4] and parts[0]["vector"] == kept  # "Ben: Hey Anna!" too
        assert db.scalar("SELECT COUNT(*) FROM memory_embeddings WHERE item_seq = ?", (call.seq,)) == 1
        # The sentence that answers is nearer the question than the whole turn is.
        query = numpy.frombuffer(embedder.embed_query("Who noticed her sketches?"), numpy.float32)
        cosines = [float(query @ stored / numpy.linalg.norm(stored))
                   for stored in (numpy.frombuffer(row["vector"], numpy.int8).astype(numpy.float32) for row in parts)]
        assert max(cosines) == cosines[3] > cosines[0] + 0.05
    finally:
        db.close()


def test_the_windows_rebuild_keeps_every_trigger_on_the_vectors(tmp_path: Path) -> None:
    """Migration 17 rebuilds memory_embeddings: triggers made on it earlier (the sync outbox's) are made again."""
    db = database.connect(tmp_path / "fresh.db")
    try:
        on_vectors = {row["name"] for row in db.rows(
            "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'memory_embeddings'")}
    finally:
        db.close()
    assert {"memory_embeddings_gone", "sync_memory_embedded", "sync_memory_reembedded"} <= on_vectors
