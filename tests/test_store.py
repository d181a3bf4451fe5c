"""The memory store on a real SQLite file: validation, round trips, lifecycle, FTS sync, migrations."""

from __future__ import annotations

import multiprocessing
import os
import stat
import subprocess
import sys

import pytest

from testing.schema import add_memory, old_project, store_before

from ccmemory import db as database
from ccmemory import memories, migrations, paths, projects, sessions
from ccmemory.errors import NotFoundError, ValidationError


# --- validation -----------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"content": ""}, "Content is required"),
        ({"content": "   "}, "Content is required"),
        ({"content": None}, "Content is required"),
        ({"content": 42}, "Content must be text"),
        ({"content": "x" * 10_001}, "Content exceeds maximum length of 10,000 characters"),
        ({"content": "ok", "sector": "dreamy"}, "Unknown sector 'dreamy'"),
        ({"content": "ok", "tier": "global"}, "Unknown tier 'global'"),
        ({"content": "ok", "importance": 1.5}, "Importance must be a number between 0 and 1"),
        ({"content": "ok", "importance": True}, "Importance must be a number between 0 and 1"),
        ({"content": "ok", "salience": -0.1}, "Salience must be a number between 0 and 1"),
        ({"content": "ok", "tags": [1, 2]}, "Tags must be strings"),
        ({"content": "ok", "files": [None]}, "Files must be strings"),
        ({"content": "ok", "metadata": ["not", "a", "dict"]}, "Metadata must be an object"),
        ({"content": "ok", "created_at": "8 May 2023"}, "created_at: Not an ISO-8601 date"),
    ],
)
def test_add_rejects_bad_input(db, project, kwargs, message):
    with pytest.raises(ValidationError, match=message):
        memories.add(db, project_id=project, **kwargs)
    assert db.scalar("SELECT COUNT(*) FROM memories") == 0


def test_a_memory_can_be_given_the_time_it_happened(db, project):
    old = memories.add(db, project_id=project, content="Moved to Berlin", created_at="2023-05-08T13:56:00+02:00")
    day = memories.add(db, project_id=project, content="Started the new job", created_at="2023-06-01")
    now = memories.add(db, project_id=project, content="Bought a bike")
    assert old.created_at == "2023-05-08T11:56:00.000Z" and day.created_at == "2023-06-01T00:00:00.000Z"
    assert old.updated_at > old.created_at  # written now, happened then
    listed = memories.list_memories(db, project_id=project)
    assert [m.id for m in listed] == [now.id, day.id, old.id]
    assert [m.id for m in memories.timeline(db, day.id, project_id=None)["before"]] == [old.id]


def test_content_at_the_limit_is_accepted(db, project):
    assert len(memories.add(db, project_id=project, content="y" * 10_000).content) == 10_000


def test_unknown_category_becomes_general(db, project):
    assert memories.add(db, project_id=project, content="x", category="nonsense").category == "general"
    assert memories.add(db, project_id=project, content="x", category="Architecture").category == "architecture"


@pytest.mark.parametrize("bad", ["", "   ", None, "no-such-id", "1234567"])
def test_lookups_of_unknown_ids_say_how_to_find_ids(db, project, bad):
    with pytest.raises((NotFoundError, ValidationError), match="memory_search"):
        memories.get(db, bad, project_id=None)
    with pytest.raises((NotFoundError, ValidationError)):
        memories.reinforce(db, bad, project_id=None)


@pytest.mark.parametrize("amount", [-0.1, 1.1, "a lot", None])
def test_reinforce_and_deemphasize_check_amount(db, project, amount):
    memory = memories.add(db, project_id=project, content="x")
    with pytest.raises(ValidationError, match="Amount"):
        memories.reinforce(db, memory.id, amount, project_id=None)
    with pytest.raises(ValidationError, match="Amount"):
        memories.deemphasize(db, memory.id, amount, project_id=None)


def test_list_and_timeline_check_their_arguments(db, project):
    memory = memories.add(db, project_id=project, content="x")
    with pytest.raises(ValidationError, match="Limit"):
        memories.list_memories(db, project_id=project, limit=0)
    with pytest.raises(ValidationError, match="sector"):
        memories.list_memories(db, project_id=project, sector="nope")
    with pytest.raises(ValidationError, match="depth_before"):
        memories.timeline(db, memory.id, before=-1, project_id=None)


# --- round trips ----------------------------------------------------------------------------------

def test_add_then_get_round_trips_every_field(db, project):
    added = memories.add(
        db, project_id=project, content="Auth uses JWT", sector="semantic", tier="session", category="architecture",
        tags=["auth", "jwt", "auth"], files=["/src/auth.py"], importance=0.8, source="manual",
        metadata={"why": "test", "n": 1}, session_id="s-1",
    )
    again = memories.get(db, added.id, project_id=None)
    assert again == added
    assert again.tags == ["auth", "jwt"] and again.files == ["/src/auth.py"]
    assert again.salience == pytest.approx(0.8) and again.importance == pytest.approx(0.8)
    assert again.metadata == {"why": "test", "n": 1}
    assert memories.get(db, added.id[:8], project_id=None).id == added.id
    assert again.session_id == "s-1"  # the session it was created in: no usage row repeats it
    assert db.rows("SELECT usage_type FROM session_memories WHERE memory_id = ?", (added.id,)) == []


def test_tags_files_and_metadata_are_redacted_at_any_depth(db, project):
    token = "ghp_" + "Zq8Hf2LmP0xRtY7uWc3VbN5kJ1sD4gA6eE9a"
    added = memories.add(
        db, project_id=project, content="Deploys use the bot account", tags=["deploy", f"key {token}"],
        files=[f"/tmp/{token}.txt"], metadata={"tool": "Bash", "count": 3, "deep": {"list": [[f"token {token}"]]},
                                               f"t {token}": "a key", "password": "hunter2hunter2",
                                               "note": "kept<private>mine</private>", "token": "$TOKEN"})
    row = db.one("SELECT tags, files, metadata FROM memories WHERE id = ?", (added.id,))
    assert token not in str(row) and "hunter2hunter2" not in str(row) and "mine" not in str(row)
    assert added.metadata["tool"] == "Bash" and added.metadata["count"] == 3 and added.metadata["note"] == "kept"
    assert added.metadata["password"] == "[REDACTED]" and added.metadata["token"] == "$TOKEN"
    assert added.metadata["deep"] == {"list": [["token [REDACTED]"]]} and "t [REDACTED]" in added.metadata
    memories.rewrite(db, added.id, "Deploys use the bot account", project_id=project,
                     metadata={"steps": [{"api_key": "zq8Hf2LmP0xR"}]})
    assert memories.get(db, added.id, project_id=project).metadata == {"steps": [{"api_key": "[REDACTED]"}]}


def _nested(depth: int) -> dict:
    """Metadata ``depth`` levels deep (the object is level 1): ``{"k": [[...]]}``."""
    value: list = []
    for _ in range(depth - 2):
        value = [value]
    return {"k": value}


def test_metadata_nested_too_deep_is_refused_by_every_writer(db, project):
    """Deeper than 32 levels breaks what prints metadata back (orjson stops at 255); checked without recursion, so
    a value deeper than Python's recursion limit gets the same clear error."""
    kept = memories.add(db, project_id=project, content="Nested as deep as allowed", metadata=_nested(32))
    assert kept.metadata == _nested(32)
    for depth in (33, 300, 5_000):
        with pytest.raises(ValidationError, match="Metadata is nested more than 32 levels deep"):
            memories.add(db, project_id=project, content="Nested too deep", metadata=_nested(depth))
        with pytest.raises(ValidationError, match="Metadata is nested more than 32 levels deep"):
            memories.rewrite(db, kept.id, "Rewritten", project_id=project, metadata=_nested(depth))
    assert [memory.content for memory in memories.list_memories(db, project_id=project)] == [kept.content]
    assert memories.get(db, kept.id, project_id=project).metadata == _nested(32)


def test_clean_metadata_costs_one_scan_and_is_stored_as_given(db, project, monkeypatch):
    """The capture hook's small dict: its strings are scanned together once, not one by one."""
    from ccmemory import redaction

    calls = []
    real = redaction.redact
    monkeypatch.setattr(redaction, "redact", lambda text: calls.append(text) or real(text))
    metadata = {"tool": "Edit", "scope": "def login", "tool_use_id": "toolu_01", "hook_event_name": "PostToolUse",
                "duration_ms": 12, "token_count": 40, "password_hash": "bcrypt"}
    assert redaction.redact_fields(metadata) is metadata and len(calls) == 1
    added = memories.add(db, project_id=project, content="Edited login", metadata=metadata)
    assert added.metadata == metadata


def test_sector_is_guessed_when_not_given(db, project):
    assert memories.add(db, project_id=project, content="The user prefers tabs").sector == "emotional"
    assert memories.add(db, project_id=project, content="To release, run make dist").sector == "procedural"
    assert memories.add(db, project_id=project, content="Postgres 16 is the database").sector == "semantic"


def test_get_many_keeps_order_and_reports_missing(db, project):
    first = memories.add(db, project_id=project, content="one")
    second = memories.add(db, project_id=project, content="two")
    found, missing = memories.get_many(db, [second.id, "ghost", first.id], project_id=None)
    assert [m.id for m in found] == [second.id, first.id]
    assert missing == ["ghost"]


def test_list_is_newest_first_filtered_and_limited(db, project):
    for number in range(60):
        memories.add(db, project_id=project, content=f"note {number}",
                     category="architecture" if number % 2 else "gotcha")
    listed = memories.list_memories(db, project_id=project)
    assert len(listed) == 50
    assert listed[0].content == "note 59"
    architecture = memories.list_memories(db, project_id=project, category="architecture", limit=100)
    assert len(architecture) == 30 and {m.category for m in architecture} == {"architecture"}
    assert memories.list_memories(db, project_id=project, category="nonexistent") == []


def test_a_rare_category_is_listed_through_its_partial_index(db, project):
    """memories_category holds no 'general' row (most memories are): a list of another category still seeks it."""
    for number in range(30):
        memories.add(db, project_id=project, content=f"note {number}", category="gotcha" if number % 10 == 0 else None)
    assert [m.content for m in memories.list_memories(db, project_id=project, category="gotcha")] == \
        ["note 20", "note 10", "note 0"]
    assert len(memories.list_memories(db, project_id=project, category="General", limit=100)) == 27
    assert memories.count_memories(db, project_id=project, category="gotcha") == 3
    [(clauses, params)] = memories._list_filters(project_id=project, category="gotcha")
    plan = " ".join(str(row) for row in db.rows(
        f"EXPLAIN QUERY PLAN SELECT id FROM memories WHERE {' AND '.join(clauses)} ORDER BY created_at DESC", params))
    assert "memories_category" in plan
    assert db.scalar("SELECT COUNT(*) FROM memories INDEXED BY memories_category "
                     "WHERE project_id = ? AND category = 'gotcha' AND category <> 'general'", (project,)) == 3


def test_reopen_after_close_loses_nothing(home, project_dir):
    first = database.connect()
    project = projects.project_id(first, project_dir)
    ids = [memories.add(first, project_id=project, content=f"fact {n}", session_id="s").id for n in range(25)]
    sessions.set_summary(first, "s", "did things")
    first.close()
    again = database.connect(vectors=True)
    assert [m.id for m in memories.list_memories(again, project_id=project, limit=100)] == ids[::-1]
    assert sessions.get(again, "s")["summary"] == "did things"
    again.close()


def test_project_identity_is_the_git_top_level_not_the_basename(db, tmp_path):
    a = tmp_path / "one" / "app"
    b = tmp_path / "two" / "app"
    for folder in (a, b):
        (folder / ".git").mkdir(parents=True)
        (folder / "src").mkdir()
    assert projects.project_id(db, a / "src") == projects.project_id(db, a)
    assert projects.project_id(db, a) != projects.project_id(db, b)
    assert projects.project_root(a / "src") == str(a.resolve())


def test_dedupe_key_makes_a_retried_write_a_no_op(db, project):
    first = memories.add(db, project_id=project, content="Ran pytest", session_id="s", dedupe_key="toolu_1")
    second = memories.add(db, project_id=project, content="Ran pytest", session_id="s", dedupe_key="toolu_1")
    assert first.id == second.id
    assert db.scalar("SELECT COUNT(*) FROM memories") == 1


# --- lifecycle ------------------------------------------------------------------------------------

def test_soft_delete_hides_restore_brings_back_hard_delete_removes(db, project):
    memory = memories.add(db, project_id=project, content="To be deleted", session_id="s")
    assert memories.delete(db, memory.id, project_id=None) == {"deleted": True, "id": memory.id, "hard": False}
    assert db.scalar("SELECT is_deleted FROM memories WHERE id = ?", (memory.id,)) == 1
    assert memories.list_memories(db, project_id=project) == []
    assert memories.get(db, memory.id, project_id=None).is_deleted
    assert not memories.restore(db, memory.id, project_id=None).is_deleted
    assert memories.delete(db, memory.id, hard=True, project_id=None)["hard"] is True
    assert db.scalar("SELECT COUNT(*) FROM memories") == 0
    assert db.scalar("SELECT COUNT(*) FROM session_memories") == 0
    assert db.scalar("SELECT COUNT(*) FROM memories_fts WHERE memories_fts MATCH 'deleted'") == 0


def test_delete_of_unknown_id_reports_not_found(db, project):
    assert memories.delete(db, "nonexistent", project_id=None) == {"deleted": False, "id": "nonexistent", "reason": "Entry not found"}


def test_reinforce_has_diminishing_returns_and_never_reaches_one(db, project):
    memory = memories.add(db, project_id=project, content="High salience fact")
    saliences = [memory.salience]
    for _ in range(5):
        saliences.append(memories.reinforce(db, memory.id, 0.2, project_id=None).salience)
    gains = [b - a for a, b in zip(saliences, saliences[1:])]
    assert all(later < earlier for earlier, later in zip(gains, gains[1:]))
    assert 0.8 < saliences[-1] < 1.0
    for _ in range(200):
        memory = memories.reinforce(db, memory.id, 1.0, project_id=None)
    assert memory.salience < 1.0


def test_deemphasize_lowers_salience_but_not_below_zero(db, project):
    memory = memories.add(db, project_id=project, content="Less important")
    lower = memories.deemphasize(db, memory.id, 0.3, project_id=None)
    assert lower.salience < memory.salience
    assert memories.deemphasize(db, memory.id, 1.0, project_id=None).salience == 0.0


def test_supersede_links_and_keeps_history(db, project):
    old = memories.add(db, project_id=project, content="Old approach", session_id="s")
    new = memories.add(db, project_id=project, content="New approach", session_id="s")
    old_after, _ = memories.supersede(db, old.id, new.id, project_id=None)
    assert old_after.valid_until is not None and old_after.is_superseded
    links = db.rows("SELECT * FROM memory_relationships WHERE source_id = ? AND target_id = ? "
                    "AND relationship_type = 'SUPERSEDES'", (new.id, old.id))
    assert len(links) == 1
    assert memories.superseded_by(db, [old.id]) == {old.id: new.id}
    assert memories.related_counts(db, [old.id, new.id]) == {old.id: 1, new.id: 1}
    assert [m.id for m in memories.list_memories(db, project_id=project, include_superseded=False)] == [new.id]
    assert old.id in {m.id for m in memories.timeline(db, new.id, project_id=None)["before"]}
    with pytest.raises(ValidationError, match="itself"):
        memories.supersede(db, new.id, new.id, project_id=None)
    with pytest.raises(ValidationError, match="already supersedes"):
        memories.supersede(db, new.id, old.id, project_id=None)


def test_timeline_orders_memories_around_the_anchor_with_sessions(db, project):
    sessions.ensure(db, "sess1", project)
    sessions.set_summary(db, "sess1", "Test session")
    made = [memories.add(db, project_id=project, content=f"action {n}", session_id="sess1") for n in range(9)]
    result = memories.timeline(db, made[4].id, before=2, after=3, project_id=None)
    assert [m.content for m in result["before"]] == ["action 2", "action 3"]
    assert result["anchor"].id == made[4].id
    assert [m.content for m in result["after"]] == ["action 5", "action 6", "action 7"]
    assert result["sessions"]["sess1"]["summary"] == "Test session"


def test_touch_references_counts_hits(db, project):
    memory = memories.add(db, project_id=project, content="x", session_id="s")
    memories.touch_references(db, [memory.id], session_id="s")
    memories.touch_references(db, [memory.id])
    again = memories.get(db, memory.id, project_id=None)
    assert again.reference_count == 2 and again.last_accessed is not None
    assert db.scalar("SELECT COUNT(*) FROM session_memories WHERE usage_type = 'recalled'") == 1


# --- FTS stays in sync ----------------------------------------------------------------------------

def _fts(db, word: str) -> set[int]:
    return {row["rowid"] for row in db.rows("SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?", (word,))}


def test_fts_follows_insert_update_and_delete(db, project):
    memory = memories.add(db, project_id=project, content="pineapple pizza decision", tags=["food"])
    assert _fts(db, "pineapple") == {memory.seq}
    assert _fts(db, "food") == {memory.seq}
    with db.transaction():
        db.execute("UPDATE memories SET content = 'anchovy pizza decision' WHERE id = ?", (memory.id,))
    assert _fts(db, "pineapple") == set()
    assert _fts(db, "anchovy") == {memory.seq}
    memories.reinforce(db, memory.id, project_id=None)
    assert _fts(db, "anchovy") == {memory.seq}
    memories.delete(db, memory.id, hard=True, project_id=None)
    assert _fts(db, "anchovy") == set()
    db.execute("INSERT INTO memories_fts(memories_fts, rank) VALUES ('integrity-check', 1)")  # raises if out of sync


# --- files, permissions, migrations ---------------------------------------------------------------

def test_data_dir_is_ccmemory_home_else_the_user_dir_never_the_plugin_data_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("CLAUDE_PLUGIN_DATA", str(tmp_path / "plugin-data"))
    monkeypatch.setenv("CCMEMORY_HOME", str(tmp_path / "a"))
    assert paths.data_dir() == str(tmp_path / "a")
    assert paths.ignored_settings() == []
    monkeypatch.delenv("CCMEMORY_HOME")
    assert paths.data_dir() == paths.default_data_dir()
    if sys.platform.startswith("linux"):
        assert paths.data_dir() == str(tmp_path / "xdg" / "ccmemory")


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_a_database_at_an_explicit_path_leaves_an_existing_folder_alone(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    database.connect(shared / "elsewhere.db").close()
    assert stat.S_IMODE(shared.stat().st_mode) == 0o1777
    database.connect(tmp_path / "new" / "inside.db").close()
    assert stat.S_IMODE((tmp_path / "new").stat().st_mode) == 0o700


@pytest.mark.parametrize("value", ["relative/dir", "${CLAUDE_PLUGIN_DATA}", "${CCMEMORY_HOME}/x", "."])
def test_a_data_dir_that_is_not_absolute_is_ignored_never_made_in_the_project(monkeypatch, tmp_path, value):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CCMEMORY_HOME", value)
    assert paths.data_dir() == paths.default_data_dir()
    assert value in paths.ignored_settings()[0]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_directory_and_file_are_private(db, home):
    assert stat.S_IMODE(os.stat(home).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(home / paths.DB_FILENAME).st_mode) == 0o600
    memories.add(db, project_id=projects.project_id(db, home), content="written through the WAL")
    for suffix in ("-wal", "-shm"):
        assert stat.S_IMODE(os.stat(home / (paths.DB_FILENAME + suffix)).st_mode) == 0o600
    assert db.scalar("PRAGMA journal_mode") == "wal"
    assert db.scalar("PRAGMA busy_timeout") >= 5000
    assert db.scalar("PRAGMA synchronous") == 1


def test_fresh_database_is_at_the_latest_schema(db):
    assert migrations.current_version(db) == migrations.target_version()


def test_migration_backs_up_first_and_is_transactional(home, monkeypatch):
    first = database.connect()
    project = projects.project_id(first, home)
    memories.add(first, project_id=project, content="survives the upgrade")
    first.close()

    def broken(db):
        db.execute("CREATE TABLE half_done (x)")
        raise RuntimeError("boom")

    monkeypatch.setattr(migrations, "MIGRATIONS", [*migrations.MIGRATIONS, broken])
    with pytest.raises(RuntimeError, match="boom"):
        database.connect()
    backups = list(home.glob(f"{paths.DB_FILENAME}.v*.bak"))
    assert len(backups) == 1
    check = database.connect(path=backups[0], migrate=False)
    assert check.scalar("SELECT content FROM memories") == "survives the upgrade"
    check.close()

    def added(db):
        db.execute("CREATE TABLE later_feature (x)")

    monkeypatch.setattr(migrations, "MIGRATIONS", [*migrations.MIGRATIONS[:-1], added])
    upgraded = database.connect()
    assert upgraded.scalar("SELECT name FROM sqlite_master WHERE name = 'half_done'") is None
    assert upgraded.scalar("SELECT name FROM sqlite_master WHERE name = 'later_feature'") == "later_feature"
    assert upgraded.scalar("SELECT content FROM memories") == "survives the upgrade"
    upgraded.close()


def test_a_newer_schema_is_refused_with_advice(home):
    first = database.connect()
    first.execute(f"PRAGMA user_version = {migrations.target_version() + 1}")
    first.close()
    from ccmemory.errors import StorageError

    with pytest.raises(StorageError, match="Upgrade ccmemory"):
        database.connect()


def _writer(home: str, project_dir: str, worker: int) -> None:
    os.environ["CCMEMORY_HOME"] = home
    connection = database.connect()
    project = projects.project_id(connection, project_dir)
    for number in range(40):
        memories.add(connection, project_id=project, content=f"worker {worker} note {number}",
                     session_id=f"session-{worker % 2}", dedupe_key=f"{worker}-{number}")
    connection.close()


def test_parallel_writers_lose_nothing_and_duplicate_nothing(home, project_dir):
    processes = [multiprocessing.get_context("spawn").Process(target=_writer, args=(str(home), str(project_dir), n))
                 for n in range(4)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(120)
        assert process.exitcode == 0
    check = database.connect()
    assert check.scalar("SELECT COUNT(*) FROM memories") == 160
    assert check.scalar("SELECT COUNT(DISTINCT content) FROM memories") == 160
    assert check.scalar("SELECT COUNT(*) FROM projects") == 1
    assert check.scalar("SELECT COUNT(*) FROM sessions") == 2
    check.close()


def test_an_older_store_is_migrated_to_stemmed_keyword_indexes(home, project_dir):
    from ccmemory import db as database, migrations, search

    old = store_before(migrations._m007_porter_stemming)
    project = old_project(old, project_dir)
    with old.transaction():
        add_memory(old, project_id=project, content="Fixed the flaky uploads by retrying connections")
    assert old.scalar("SELECT COUNT(*) FROM memories_fts WHERE memories_fts MATCH '\"fixes\"'") == 0
    old.close()

    migrated = database.connect()
    try:
        assert migrations.current_version(migrated) == migrations.target_version()
        for query in ("fixes", "retried connection", "upload"):
            hits = search.search(migrated, query, project_id=project, mode="keyword")
            assert [hit.memory.content for hit in hits] == ["Fixed the flaky uploads by retrying connections"], query
    finally:
        migrated.close()


def test_the_int8_migration_converts_stored_float_vectors(tmp_path):
    from array import array

    path = tmp_path / "v2.db"
    old = store_before(migrations._m008_int8_vectors, path)
    with old.transaction():
        project = old_project(old, str(tmp_path))
        seq = add_memory(old, project_id=project, content="a memory embedded by an older build").seq
        old.execute("INSERT INTO memory_embeddings(item_seq, model_id, vector, indexed, created_at) "
                    "VALUES (?, 'm', ?, 1, 'now')", (seq, array("f", [0.5, -0.25, 0.0, 0.1]).tobytes()))
    old.close()
    upgraded = database.connect(path)
    row = upgraded.one("SELECT vector, indexed FROM memory_embeddings")
    assert array("b", row["vector"]).tolist() == [127, -64, 0, 25]
    assert row["indexed"] == 0  # the vector index re-syncs from the converted rows
    upgraded.close()


def test_an_id_that_is_not_ascii_is_not_found_not_an_error(db, project_dir):
    project = projects.project_id(db, project_dir)
    memories.add(db, project_id=project, content="kept")
    for odd in ("\ud800abcdefgh", "é" * 10, "x\udfff"):
        with pytest.raises(NotFoundError):
            memories.get(db, odd, project_id=project)
    assert memories.get_many(db, ["\ud800abcdefgh"], project_id=project)[1] == ["\ud800abcdefgh"]



_SCHEMA_CHURN = """
import sqlite3, sys, time
connection = sqlite3.connect(sys.argv[1], timeout=10, isolation_level=None)
print("ready", flush=True)
for burst in range(150):
    connection.execute("CREATE TABLE churn(x)")  # two schema changes close together, as a vector table's
    connection.execute("DROP TABLE churn")       # first creation and an index's rebuild make
    time.sleep(0.002)
"""


@pytest.mark.parametrize("vectors", [False, True], ids=["sqlite3", "apsw"])
def test_a_search_beside_another_process_changing_the_schema_still_answers(tmp_path, project_dir, vectors):
    """SQLite prepares a statement again once after a schema change; the FTS5 table's constructor fails when a second
    lands in between (a command run just after an import met it, while the embedder created its vector table)."""
    path = tmp_path / "store" / "ccmemory.db"
    store = database.connect(path, vectors=vectors)
    try:
        memories.add(store, project_id=projects.project_id(store, project_dir), content="We release with make release")
    finally:
        store.close()
    churn = subprocess.Popen([sys.executable, "-c", _SCHEMA_CHURN, str(path)], stdout=subprocess.PIPE, text=True)
    assert churn.stdout is not None and churn.stdout.readline() == "ready\n"
    answers = 0
    try:
        while churn.poll() is None:
            reader = database.connect(path, vectors=vectors, migrate=False)
            try:
                assert reader.binding == ("apsw" if vectors else "sqlite3")
                assert reader.rows("SELECT rowid FROM memories_fts WHERE memories_fts MATCH 'release'")
            finally:
                reader.close()
            answers += 1
    finally:
        churn.kill()
    assert churn.wait() == 0 and answers > 0
