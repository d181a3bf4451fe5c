"""Versioned schema migrations: small ordered functions registered by :func:`migration`, each in one transaction.

``PRAGMA user_version`` holds the number of migrations applied. Before an
existing database is migrated, a consistent copy is written beside it with
``VACUUM INTO`` (the newest three are kept), so a failed upgrade loses nothing.
Every statement here must run on the standard library's SQLite (3.40 on the
oldest supported build): the vector index lives in :mod:`ccmemory.vectors`,
created only by connections that could load sqlite-vec.
"""

from __future__ import annotations

import os
from contextlib import ExitStack, contextmanager

from . import clock, paths

TYPE_CHECKING = False
if TYPE_CHECKING:  # db opens the store and runs these migrations: importing it back here would be a cycle
    from typing import Any, Callable, Iterator, List, TypeVar

    from .db import Database

    StepT = TypeVar("StepT", bound=Callable[..., None])


def registrar(steps: List[StepT], prefix: str, what: str) -> Callable[[StepT], StepT]:
    """A decorator that appends a step to ``steps``; the step's name says its number (``<prefix>012_...``).

    Append only: a database records how many steps it has run, so a step never moves, and the name
    check makes a step written out of order fail at import instead of skipping or repeating work.
    The local schema's steps and the team server's (:mod:`ccmemory.team.server_schema`) are both kept so.
    """
    def register(step: StepT) -> StepT:
        number = len(steps) + 1
        if not step.__name__.startswith(f"{prefix}{number:03d}_"):
            raise RuntimeError(f"{what} {step.__name__} is registered as number {number}: "
                               f"name it {prefix}{number:03d}_... and keep the steps in order")
        steps.append(step)
        return step
    return register


#: The schema steps in order; ``PRAGMA user_version`` counts those applied. Filled by :func:`migration`.
MIGRATIONS: List[Callable[[Database], None]] = []
#: Register a step as the next migration (``_m012_...`` is the twelfth).
migration = registrar(MIGRATIONS, "_m", "Migration")


_M001 = """
CREATE TABLE projects (
    id          INTEGER PRIMARY KEY,
    path        TEXT NOT NULL UNIQUE,
    name        TEXT NOT NULL,
    created_at  TEXT NOT NULL
);

CREATE TABLE sessions (
    id              TEXT PRIMARY KEY,
    project_id      INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    started_at      TEXT NOT NULL,
    ended_at        TEXT,
    summary         TEXT,
    transcript_path TEXT,
    metadata        TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX sessions_project ON sessions(project_id, started_at);

CREATE TABLE memories (
    seq             INTEGER PRIMARY KEY,
    id              TEXT NOT NULL UNIQUE,
    project_id      INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    session_id      TEXT REFERENCES sessions(id) ON DELETE SET NULL,
    content         TEXT NOT NULL,
    sector          TEXT NOT NULL CHECK (sector IN ('episodic', 'semantic', 'procedural', 'emotional', 'reflective')),
    tier            TEXT NOT NULL CHECK (tier IN ('session', 'project')),
    category        TEXT NOT NULL DEFAULT 'general',
    tags            TEXT NOT NULL DEFAULT '[]',
    files           TEXT NOT NULL DEFAULT '[]',
    importance      REAL NOT NULL DEFAULT 0.5,
    salience        REAL NOT NULL DEFAULT 0.5,
    reference_count INTEGER NOT NULL DEFAULT 0,
    last_accessed   TEXT,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL,
    valid_until     TEXT,
    is_deleted      INTEGER NOT NULL DEFAULT 0,
    deleted_at      TEXT,
    source          TEXT NOT NULL DEFAULT 'manual',
    dedupe_key      TEXT,
    needs_embedding INTEGER NOT NULL DEFAULT 1,
    metadata        TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX memories_project_created ON memories(project_id, created_at);
CREATE INDEX memories_session ON memories(session_id, created_at);
CREATE INDEX memories_category ON memories(project_id, category, created_at);
CREATE INDEX memories_unembedded ON memories(seq) WHERE needs_embedding = 1;
CREATE UNIQUE INDEX memories_dedupe ON memories(session_id, dedupe_key)
    WHERE session_id IS NOT NULL AND dedupe_key IS NOT NULL;

CREATE TABLE session_memories (
    session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    memory_id   TEXT NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    usage_type  TEXT NOT NULL CHECK (usage_type IN ('created', 'recalled', 'reinforced', 'updated')),
    created_at  TEXT NOT NULL,
    PRIMARY KEY (session_id, memory_id, usage_type)
);
CREATE INDEX session_memories_memory ON session_memories(memory_id);

CREATE TABLE memory_relationships (
    id                INTEGER PRIMARY KEY,
    source_id         TEXT NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    target_id         TEXT NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    relationship_type TEXT NOT NULL CHECK (relationship_type IN
                      ('SUPERSEDES', 'RELATES_TO', 'CONTRADICTS', 'DERIVED_FROM')),
    created_at        TEXT NOT NULL,
    UNIQUE (source_id, target_id, relationship_type)
);
CREATE INDEX memory_relationships_target ON memory_relationships(target_id);

CREATE VIRTUAL TABLE memories_fts USING fts5(
    content, tags, files, content='memories', content_rowid='seq', tokenize='unicode61 remove_diacritics 2'
);
-- Document frequencies of indexed words: search skips words that most memories contain.
CREATE VIRTUAL TABLE memories_vocab USING fts5vocab(memories_fts, 'row');
CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts(rowid, content, tags, files) VALUES (new.seq, new.content, new.tags, new.files);
END;
CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, content, tags, files)
        VALUES ('delete', old.seq, old.content, old.tags, old.files);
END;
CREATE TRIGGER memories_fts_update AFTER UPDATE OF content, tags, files ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, content, tags, files)
        VALUES ('delete', old.seq, old.content, old.tags, old.files);
    INSERT INTO memories_fts(rowid, content, tags, files) VALUES (new.seq, new.content, new.tags, new.files);
END;

CREATE TABLE documents (
    id           TEXT PRIMARY KEY,
    project_id   INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    title        TEXT NOT NULL,
    source_path  TEXT,
    source_url   TEXT,
    content_hash TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    metadata     TEXT NOT NULL DEFAULT '{}'
);
CREATE UNIQUE INDEX documents_source ON documents(project_id, source_path) WHERE source_path IS NOT NULL;

CREATE TABLE chunks (
    seq         INTEGER PRIMARY KEY,
    document_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    ordinal     INTEGER NOT NULL,
    heading     TEXT NOT NULL DEFAULT '',
    content     TEXT NOT NULL,
    needs_embedding INTEGER NOT NULL DEFAULT 1,
    UNIQUE (document_id, ordinal)
);
CREATE INDEX chunks_unembedded ON chunks(seq) WHERE needs_embedding = 1;

CREATE VIRTUAL TABLE chunks_fts USING fts5(
    heading, content, content='chunks', content_rowid='seq', tokenize='unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE chunks_vocab USING fts5vocab(chunks_fts, 'row');
CREATE TRIGGER chunks_fts_insert AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts(rowid, heading, content) VALUES (new.seq, new.heading, new.content);
END;
CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, heading, content) VALUES ('delete', old.seq, old.heading, old.content);
END;
CREATE TRIGGER chunks_fts_update AFTER UPDATE OF heading, content ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, heading, content) VALUES ('delete', old.seq, old.heading, old.content);
    INSERT INTO chunks_fts(rowid, heading, content) VALUES (new.seq, new.heading, new.content);
END;

-- Embeddings sit beside the id of the model that made them. The sqlite-vec index
-- (ccmemory.vectors) is derived from these rows and can be rebuilt from them;
-- `indexed` says whether a row has reached that index yet.
CREATE TABLE memory_embeddings (
    item_seq   INTEGER PRIMARY KEY REFERENCES memories(seq) ON DELETE CASCADE,
    model_id   TEXT NOT NULL,
    vector     BLOB NOT NULL,
    indexed    INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL
);
CREATE INDEX memory_embeddings_unindexed ON memory_embeddings(model_id) WHERE indexed = 0;
CREATE TABLE chunk_embeddings (
    item_seq   INTEGER PRIMARY KEY REFERENCES chunks(seq) ON DELETE CASCADE,
    model_id   TEXT NOT NULL,
    vector     BLOB NOT NULL,
    indexed    INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL
);
CREATE INDEX chunk_embeddings_unindexed ON chunk_embeddings(model_id) WHERE indexed = 0;
-- Rows whose vector must leave the sqlite-vec index. Hooks cannot touch vec0
-- tables (no extension), so removals are queued here and drained by a
-- connection that has the extension.
CREATE TABLE vector_tombstones (
    kind     TEXT NOT NULL,
    item_seq INTEGER NOT NULL,
    PRIMARY KEY (kind, item_seq)
);
CREATE TRIGGER memory_embeddings_gone AFTER DELETE ON memory_embeddings BEGIN
    INSERT OR IGNORE INTO vector_tombstones(kind, item_seq) VALUES ('memory', old.item_seq);
END;
CREATE TRIGGER chunk_embeddings_gone AFTER DELETE ON chunk_embeddings BEGIN
    INSERT OR IGNORE INTO vector_tombstones(kind, item_seq) VALUES ('chunk', old.item_seq);
END;
CREATE TRIGGER memories_content_changed AFTER UPDATE OF content ON memories BEGIN
    DELETE FROM memory_embeddings WHERE item_seq = new.seq;
    UPDATE memories SET needs_embedding = 1 WHERE seq = new.seq;
END;
CREATE TRIGGER chunks_content_changed AFTER UPDATE OF content ON chunks BEGIN
    DELETE FROM chunk_embeddings WHERE item_seq = new.seq;
    UPDATE chunks SET needs_embedding = 1 WHERE seq = new.seq;
END;

CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"""


@migration
def _m001_initial(db: Database) -> None:
    """Projects, sessions, memories, relationships, documents, FTS and embeddings."""
    _run_script(db, _M001)


_M002 = """
-- Hierarchical docmem trees. parent_id has no foreign key: a node may hang under a
-- virtual node (a session, memory or document shown as a tree by ccmemory.docmem.virtual).
CREATE TABLE docmem_nodes (
    id            TEXT PRIMARY KEY,
    project_id    INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    parent_id     TEXT,
    order_value   REAL NOT NULL,
    content       TEXT NOT NULL DEFAULT '',
    token_count   INTEGER NOT NULL DEFAULT 0,
    context_type  TEXT NOT NULL DEFAULT '' CHECK (length(context_type) <= 24),
    context_name  TEXT NOT NULL DEFAULT '' CHECK (length(context_name) <= 24),
    context_value TEXT NOT NULL DEFAULT '' CHECK (length(context_value) <= 24),
    readonly      INTEGER NOT NULL DEFAULT 0 CHECK (readonly IN (0, 1)),
    hash          TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL
);
CREATE INDEX docmem_nodes_children ON docmem_nodes(parent_id, order_value);
CREATE INDEX docmem_nodes_roots ON docmem_nodes(project_id, created_at) WHERE parent_id IS NULL;

-- Where a summary filed a virtual node: its parent and order in the docmem view,
-- leaving the captured row untouched.
CREATE TABLE docmem_placements (
    node_id     TEXT PRIMARY KEY,
    project_id  INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    parent_id   TEXT NOT NULL REFERENCES docmem_nodes(id) ON DELETE CASCADE,
    order_value REAL NOT NULL,
    updated_at  TEXT NOT NULL
);
CREATE INDEX docmem_placements_parent ON docmem_placements(parent_id, order_value);
"""


@migration
def _m002_docmem(db: Database) -> None:
    """docmem trees and the placements of virtual nodes under docmem summaries."""
    _run_script(db, _M002)


_M003 = """
-- Claude's memory tool (memory_20250818) as files in the store. project_id NULL is the
-- user-wide scope (/memories/user/...), shared by every project; path is inside the scope.
CREATE TABLE memory_files (
    id         INTEGER PRIMARY KEY,
    project_id INTEGER REFERENCES projects(id) ON DELETE CASCADE,
    path       TEXT NOT NULL,
    content    TEXT NOT NULL,
    version    INTEGER NOT NULL DEFAULT 1,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE UNIQUE INDEX memory_files_path ON memory_files(ifnull(project_id, 0), path);

-- Every memory-file operation, successful or not: who (source, session), what, where. Never the
-- content. project_id has no foreign key so the log outlives what it describes.
CREATE TABLE memory_file_log (
    id         INTEGER PRIMARY KEY,
    at         TEXT NOT NULL,
    project_id INTEGER,
    session_id TEXT,
    source     TEXT NOT NULL,
    command    TEXT NOT NULL,
    path       TEXT,
    new_path   TEXT,
    ok         INTEGER NOT NULL,
    detail     TEXT NOT NULL DEFAULT ''
);
CREATE INDEX memory_file_log_project ON memory_file_log(project_id, id);
"""


@migration
def _m003_memory_files(db: Database) -> None:
    """Memory files of Claude's memory tool, project and user scopes, and their audit log."""
    _run_script(db, _M003)


_M004 = """
-- The rolling local context: one entry per turn that did something, per working directory.
-- Only the newest 40 entries stay rows; older ones are folded into their theme's counts.
CREATE TABLE local_context_entries (
    id         INTEGER PRIMARY KEY,
    directory  TEXT NOT NULL,
    session_id TEXT,
    at         TEXT NOT NULL,
    title      TEXT NOT NULL,
    details    TEXT NOT NULL DEFAULT '[]',
    files      TEXT NOT NULL DEFAULT '[]',
    theme      TEXT NOT NULL,
    last_seq   INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX local_context_entries_directory ON local_context_entries(directory, id);
CREATE TABLE local_context_themes (
    directory TEXT NOT NULL,
    theme     TEXT NOT NULL,
    entries   INTEGER NOT NULL,
    first_at  TEXT NOT NULL,
    last_at   TEXT NOT NULL,
    titles    TEXT NOT NULL DEFAULT '[]',
    PRIMARY KEY (directory, theme)
);
-- Per-directory switch (NULL: the configured default) and where the last clear left off.
CREATE TABLE local_context_directories (
    directory   TEXT PRIMARY KEY,
    enabled     INTEGER CHECK (enabled IN (0, 1)),
    cleared_at  TEXT,
    cleared_seq INTEGER NOT NULL DEFAULT 0
);
"""


@migration
def _m004_local_context(db: Database) -> None:
    """The rolling per-directory activity log, its themes and its per-directory switch."""
    _run_script(db, _M004)


_M005 = """
-- The trash and the superseded list: rare rows, found through small partial indexes
-- instead of a scan of the whole project (the viewer's deleted=only / superseded=only).
CREATE INDEX memories_trash ON memories(project_id, created_at) WHERE is_deleted = 1;
CREATE INDEX memories_superseded ON memories(project_id, created_at) WHERE valid_until IS NOT NULL;
"""


@migration
def _m005_rare_row_indexes(db: Database) -> None:
    """Partial indexes over deleted and over superseded memories."""
    _run_script(db, _M005)


_M006 = """
-- The markdown knowledge index (ccmemory.knowledge): one row per indexed file of a project's
-- .claude/knowledge tree. Its entries are memories with source 'knowledge' whose metadata names
-- the file; content_hash covers the bytes and the chunking settings, so an unchanged file is skipped.
CREATE TABLE knowledge_files (
    project_id   INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    path         TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    entries      INTEGER NOT NULL,
    indexed_at   TEXT NOT NULL,
    PRIMARY KEY (project_id, path)
);
CREATE INDEX memories_source ON memories(project_id, source);

-- When each discovery was referenced (a search hit), for promotion of discoveries referenced
-- 3+ times in 7 days. Only discoveries are logged, so the table stays small.
CREATE TABLE memory_references (
    memory_seq INTEGER NOT NULL REFERENCES memories(seq) ON DELETE CASCADE,
    at         TEXT NOT NULL
);
CREATE INDEX memory_references_memory ON memory_references(memory_seq, at);
CREATE TRIGGER discovery_referenced AFTER UPDATE OF reference_count ON memories
WHEN new.reference_count > old.reference_count AND new.category = 'discovery' BEGIN
    INSERT INTO memory_references(memory_seq, at)
        VALUES (new.seq, COALESCE(new.last_accessed, strftime('%Y-%m-%dT%H:%M:%fZ', 'now')));
END;
"""


@migration
def _m006_knowledge(db: Database) -> None:
    """Indexed knowledge files, a (project, source) index to find their entries, discovery reference times."""
    _run_script(db, _M006)


_M007 = """
DROP TABLE memories_vocab;
DROP TABLE memories_fts;
CREATE VIRTUAL TABLE memories_fts USING fts5(
    content, tags, files, content='memories', content_rowid='seq',
    tokenize='porter unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE memories_vocab USING fts5vocab(memories_fts, 'row');
INSERT INTO memories_fts(memories_fts) VALUES ('rebuild');
DROP TABLE chunks_vocab;
DROP TABLE chunks_fts;
CREATE VIRTUAL TABLE chunks_fts USING fts5(
    heading, content, content='chunks', content_rowid='seq', tokenize='porter unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE chunks_vocab USING fts5vocab(chunks_fts, 'row');
INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild');
"""


@migration
def _m007_porter_stemming(db: Database) -> None:
    """Keyword indexes with the Porter stemmer ("fixed" finds "fix", "fixes"), rebuilt from the stored rows.

    The triggers that keep them current name the tables, not the tokenizer, so they stay as they are.
    """
    _run_script(db, _M007)


def _int8(vector: bytes) -> bytes:
    """A float32 vector as int8 scaled to +-127 (standard library only: migrations run in hooks too)."""
    from array import array

    values = array("f")
    values.frombytes(vector)
    peak = max((abs(value) for value in values), default=0.0) or 1.0
    return array("b", [max(-127, min(127, round(value * 127.0 / peak))) for value in values]).tobytes()


@migration
def _m008_int8_vectors(db: Database) -> None:
    """Stored vectors become int8, a quarter of their float32 size; the vector index re-syncs from them."""
    for table in ("memory_embeddings", "chunk_embeddings"):
        rows = db.execute(f"SELECT item_seq, vector FROM {table}").fetchall()
        for item_seq, vector in rows:
            db.execute(f"UPDATE {table} SET vector = ?, indexed = 0 WHERE item_seq = ?", (_int8(vector), item_seq))


@migration
def _m009_creation_links_derived(db: Database) -> None:
    """A memory's own session is its ``session_id``: the 'created' usage rows that repeat it go.

    Only rows naming the memory's own session are removed; other usage ('recalled', 'reinforced',
    'updated') and a 'created' row naming another session stay.
    """
    db.execute(
        "DELETE FROM session_memories WHERE usage_type = 'created' AND EXISTS (SELECT 1 FROM memories m "
        "WHERE m.id = session_memories.memory_id AND m.session_id = session_memories.session_id)"
    )


_M010 = """
-- Lookups by session (and the foreign key from sessions) use the unique (session_id, dedupe_key)
-- index, now over every row, instead of a second index on (session_id, created_at): a session's
-- rows are few enough to sort. NULL keys never collide, so the uniqueness is unchanged.
DROP INDEX memories_session;
DROP INDEX memories_dedupe;
CREATE UNIQUE INDEX memories_session ON memories(session_id, dedupe_key);
-- Most memories (every captured tool call) are 'general': listing those walks
-- memories_project_created; the other categories keep an index of their own, which a
-- query uses by repeating its condition (memories.list_memories does).
DROP INDEX memories_category;
CREATE INDEX memories_category ON memories(project_id, category, created_at) WHERE category <> 'general';
"""


@migration
def _m010_leaner_memory_indexes(db: Database) -> None:
    """One index serves session lookups and retried-capture detection; the category index skips 'general'."""
    _run_script(db, _M010)


_M011_EMBEDDINGS = """
CREATE TABLE {table}_new (
    item_seq INTEGER PRIMARY KEY REFERENCES {items}(seq) ON DELETE CASCADE,
    model    INTEGER NOT NULL REFERENCES embedding_models(id),
    vector   BLOB NOT NULL,
    indexed  INTEGER NOT NULL DEFAULT 0
);
INSERT INTO {table}_new(item_seq, model, vector, indexed)
    SELECT e.item_seq, m.id, e.vector, e.indexed FROM {table} e JOIN embedding_models m ON m.model_id = e.model_id;
DROP TABLE {table};
ALTER TABLE {table}_new RENAME TO {table};
CREATE INDEX {table}_unindexed ON {table}(model) WHERE indexed = 0;
"""


@migration
def _m011_embedding_model_numbers(db: Database) -> None:
    """Each stored vector names its model by a small number (``embedding_models``), not a ~60-character id.

    The tables are rebuilt without the per-row model id and creation time (nothing read the
    time). The triggers that name them are dropped first and made again from their stored SQL,
    so the rename sees no reference to a missing table; ``indexed`` flags carry over, so the
    vector index (keyed by item seq) needs no rebuild.
    """
    db.execute("CREATE TABLE embedding_models (id INTEGER PRIMARY KEY, model_id TEXT NOT NULL UNIQUE)")
    db.execute("INSERT INTO embedding_models(model_id) "
               "SELECT model_id FROM memory_embeddings UNION SELECT model_id FROM chunk_embeddings")
    triggers = db.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND "
        "(sql LIKE '%memory\\_embeddings%' ESCAPE '\\' OR sql LIKE '%chunk\\_embeddings%' ESCAPE '\\')"
    ).fetchall()
    for name, _sql in triggers:
        db.execute(f'DROP TRIGGER "{name}"')
    for table, items in (("memory_embeddings", "memories"), ("chunk_embeddings", "chunks")):
        _run_script(db, _M011_EMBEDDINGS.format(table=table, items=items))
    for _name, sql in triggers:
        db.execute(sql)


#: The mark capture put at the end of a failed call's first text line (its head), when migration 12 was written.
_M012_FAILED_MARK = " (failed)"


def observation_fields_from_text(content: str, category: str, tags: str, metadata: dict[str, Any]) -> dict[str, Any]:
    """The structured metadata of one captured tool call, parsed from its text as capture wrote it then.

    Frozen with migration 12 (capture's text may change later; these rows will not): ``tool``
    from the first tag when missing; ``outcome`` ``"failed"`` when the head ends in the mark, or
    when a gotcha's (or a settled failure's) head runs over several lines (``multiline``) and a
    later line ends in it; for Bash, ``command``: the head after ``Ran…: `` without the mark (its
    description, which the head cannot tell apart, stays in it; a head of several lines is kept
    whole only for a failure, where its end is known). What the row already has wins and keeps its
    order. Import applies it too: an export written before migration 12 has rows without these keys.
    """
    import json

    fields: dict[str, Any] = {}
    tool = metadata.get("tool")
    if not isinstance(tool, str) or not tool:
        named = json.loads(tags or "[]")
        tool = named[0] if isinstance(named, list) and named and isinstance(named[0], str) else None
        if tool:
            fields["tool"] = tool
    lines = content.split("\n")
    head = lines[:1]
    if lines[0].endswith(_M012_FAILED_MARK):
        fields["outcome"] = "failed"
    elif category == "gotcha" or metadata.get("fixed_by"):
        end = next((n for n, line in enumerate(lines[1:], 1) if line.endswith(_M012_FAILED_MARK)), None)
        if end is not None:
            fields["outcome"], fields["multiline"] = "failed", True
            head = lines[:end + 1]
    if tool == "Bash":
        text = "\n".join(head)
        if fields.get("outcome") == "failed":
            text = text[:-len(_M012_FAILED_MARK)]
        fields["command"] = text.split(": ", 1)[1] if ": " in text else text
    return {**metadata, **{key: value for key, value in fields.items() if key not in metadata}}


@migration
def _m012_observation_metadata(db: Database) -> None:
    """Captured tool calls get the structured metadata readers use instead of re-parsing their text.

    Capture now stores each call's facts (tool, outcome, command, …; :mod:`ccmemory.observations`)
    beside its text; the calls stored before get them here, parsed once from their text by
    :func:`observation_fields_from_text`. Only ``metadata`` changes, so no keyword index or vector is touched.
    """
    import json

    last = 0
    while True:
        rows = db.execute("SELECT seq, content, category, tags, metadata FROM memories "
                          "WHERE source = 'capture' AND seq > ? ORDER BY seq LIMIT 500", (last,)).fetchall()
        if not rows:
            return
        for seq, content, category, tags, stored in rows:
            last = seq
            try:
                metadata = json.loads(stored or "{}")
                fields = observation_fields_from_text(content, category, tags, metadata) \
                    if isinstance(metadata, dict) else metadata
            except ValueError:  # a row whose JSON is broken keeps what it has
                continue
            if fields != metadata:
                db.execute("UPDATE memories SET metadata = ? WHERE seq = ?",
                           (json.dumps(fields, separators=(",", ":")), seq))

_M013 = """
-- Portable project identity (ccmemory.identity): the same for every clone, worktree and machine.
-- identity is 'git:<root commit>', 'remote:<host/path>' or 'path:<real path>'; remote a hint.
ALTER TABLE projects ADD COLUMN identity TEXT;
ALTER TABLE projects ADD COLUMN remote TEXT;
CREATE UNIQUE INDEX projects_identity ON projects(identity) WHERE identity IS NOT NULL;
-- Every location (git top-level or directory) where a project was seen. marker is the .git's
-- device:inode when the identity was read; pinned: chosen by the user (merge, split), never re-read.
CREATE TABLE project_aliases (
    path       TEXT PRIMARY KEY,
    project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    kind       TEXT NOT NULL CHECK (kind IN ('git', 'remote', 'path')),
    marker     TEXT NOT NULL,
    pinned     INTEGER NOT NULL DEFAULT 0 CHECK (pinned IN (0, 1)),
    first_seen TEXT NOT NULL
);
CREATE INDEX project_aliases_project ON project_aliases(project_id);
-- The root commits of each project's repository: a checkout reaching any of them is that project.
CREATE TABLE project_roots (
    root       TEXT PRIMARY KEY,
    project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE
);
CREATE INDEX project_roots_project ON project_roots(project_id);
-- Each merge of one project into another and what it moved (JSON), so it can be undone.
CREATE TABLE project_merges (
    id        INTEGER PRIMARY KEY,
    into_id   INTEGER NOT NULL,
    from_id   INTEGER NOT NULL,
    reason    TEXT NOT NULL,
    detail    TEXT NOT NULL,
    at        TEXT NOT NULL,
    undone_at TEXT
);
"""


@migration
def _m013_portable_projects(db: Database) -> None:
    """Projects get a portable identity; locations of one repository become one project, each kept as an alias.

    Each stored project's location is identified (git runs once per location that still exists;
    a location gone keeps its path identity); projects that turn out to be one repository are
    merged into the oldest with :func:`ccmemory.project_merge.merge`, which keeps every row and
    logs what it moved, so ``ccmemory projects undo`` can take a wrong merge back.
    """
    from . import identity, project_merge

    _run_script(db, _M013)
    seen_at = clock.now()
    by_key: dict[str, int] = {}
    for row in db.rows("SELECT id, path FROM projects ORDER BY id"):
        path = row["path"]
        found = identity.identify(path) if os.path.isdir(path) else \
            {"kind": "path", "key": f"path:{path}", "roots": [], "remote": None}
        db.execute("INSERT INTO project_aliases(path, project_id, kind, marker, first_seen) VALUES (?, ?, ?, ?, ?)",
                   (path, row["id"], found["kind"], identity.marker(path), seen_at))
        keep = by_key.get(found["key"])
        if keep is None and found["roots"]:
            keep = db.scalar(f"SELECT project_id FROM project_roots WHERE root IN ({','.join('?' * len(found['roots']))}) "
                             "LIMIT 1", found["roots"])
        if keep is None:
            by_key[found["key"]] = row["id"]
            db.execute("UPDATE projects SET identity = ?, remote = ? WHERE id = ?", (found["key"], found["remote"], row["id"]))
        else:
            project_merge.merge(db, keep, row["id"], reason=f"{path} is the same repository ({found['key']})")
        for root in found["roots"]:
            db.execute("INSERT OR IGNORE INTO project_roots(root, project_id) VALUES (?, ?)", (root, keep or row["id"]))


_M014 = """
-- Who a memory is for: 'project' (its own project only) or 'user' (shown in every project, stored
-- once). project_id stays the project it was written in, so every per-project query keeps its index.
ALTER TABLE memories ADD COLUMN scope TEXT NOT NULL DEFAULT 'project' CHECK (scope IN ('project', 'user'));
-- The user-wide memories are few: every project's search, list and SessionStart finds them here.
CREATE INDEX memories_user ON memories(created_at) WHERE scope = 'user';
"""


@migration
def _m014_memory_scope(db: Database) -> None:
    """A memory's scope: its project's alone, or the user's in every project (``ccmemory.scopes``).

    A column with a default, so no row is rewritten: the keyword index, the vectors (keyed by
    the row's seq) and every per-project index stay as they are.
    """
    _run_script(db, _M014)


_M015 = """
-- Team sync (ccmemory.team.sync): what must go to the server, and what the server said about each memory.
-- The outbox fills only once sync is set up on this machine (meta 'sync.enabled'), so a store that never
-- syncs pays one indexed read per write. Rows name memories by their global id (a uuid), not seq.
CREATE TABLE sync_outbox (
    memory_id TEXT PRIMARY KEY,
    queued_at TEXT NOT NULL
);
-- Each memory the server holds as this machine knows it: its owner (a database role), scope, the server's
-- change number and time, and a hash of the fields as on the server (a push that would change nothing
-- is skipped, so pulled rows are never echoed back).
CREATE TABLE sync_memories (
    memory_id   TEXT PRIMARY KEY,
    owner       TEXT NOT NULL,
    mine        INTEGER NOT NULL,
    scope       TEXT NOT NULL CHECK (scope IN ('personal', 'team')),
    updated_seq INTEGER NOT NULL,
    shared_at   TEXT NOT NULL,
    synced_hash TEXT NOT NULL,
    superseded_by TEXT
);
CREATE INDEX sync_memories_theirs ON sync_memories(memory_id) WHERE mine = 0;
CREATE INDEX sync_memories_superseded ON sync_memories(superseded_by) WHERE superseded_by IS NOT NULL;
-- What the user chose for one memory (ccmemory sync share ID --scope ...), over the rules of settings.
CREATE TABLE sync_choices (
    memory_id TEXT PRIMARY KEY,
    scope     TEXT NOT NULL CHECK (scope IN ('none', 'personal', 'team'))
);
-- Rows pulled for a project this machine has not seen yet: applied once that project is known here.
CREATE TABLE sync_inbox (
    memory_id   TEXT PRIMARY KEY,
    project     TEXT NOT NULL,
    updated_seq INTEGER NOT NULL,
    row         TEXT NOT NULL
);
CREATE INDEX sync_inbox_project ON sync_inbox(project);
CREATE TRIGGER sync_memory_added AFTER INSERT ON memories
    WHEN EXISTS (SELECT 1 FROM meta WHERE key = 'sync.enabled') BEGIN
    INSERT OR REPLACE INTO sync_outbox(memory_id, queued_at) VALUES (new.id, new.updated_at);
END;
CREATE TRIGGER sync_memory_changed AFTER UPDATE OF content, sector, tier, category, tags, files, importance,
    is_deleted, valid_until, source, metadata, project_id ON memories
    WHEN EXISTS (SELECT 1 FROM meta WHERE key = 'sync.enabled') BEGIN
    INSERT OR REPLACE INTO sync_outbox(memory_id, queued_at) VALUES (new.id, new.updated_at);
END;
CREATE TRIGGER sync_memory_removed AFTER DELETE ON memories
    WHEN EXISTS (SELECT 1 FROM meta WHERE key = 'sync.enabled') BEGIN
    INSERT OR REPLACE INTO sync_outbox(memory_id, queued_at) VALUES (old.id, strftime('%Y-%m-%dT%H:%M:%fZ'));
END;
CREATE TRIGGER sync_memory_embedded AFTER INSERT ON memory_embeddings
    WHEN EXISTS (SELECT 1 FROM meta WHERE key = 'sync.enabled') BEGIN
    INSERT OR REPLACE INTO sync_outbox(memory_id, queued_at)
        SELECT id, strftime('%Y-%m-%dT%H:%M:%fZ') FROM memories WHERE seq = new.item_seq;
END;
CREATE TRIGGER sync_memory_reembedded AFTER UPDATE OF model ON memory_embeddings
    WHEN EXISTS (SELECT 1 FROM meta WHERE key = 'sync.enabled') BEGIN
    INSERT OR REPLACE INTO sync_outbox(memory_id, queued_at)
        SELECT id, strftime('%Y-%m-%dT%H:%M:%fZ') FROM memories WHERE seq = new.item_seq;
END;
"""


@migration
def _m015_sync_outbox(db: Database) -> None:
    """The sync client's tables: an outbox filled by triggers, what the server holds, the user's choices, an inbox."""
    _run_script(db, _M015)


_M016 = """
-- Consolidation passes (ccmemory.consolidation): when each ran, what it did (JSON), whether it was undone.
CREATE TABLE consolidation_passes (
    id          INTEGER PRIMARY KEY,
    started_at  TEXT NOT NULL,
    finished_at TEXT,
    trigger     TEXT NOT NULL,
    report      TEXT NOT NULL DEFAULT '{}',
    undone_at   TEXT
);
-- What a pass changed, as it was before (zlib-compressed JSON, one row per batch), so
-- `ccmemory consolidate --undo` restores it exactly; only the latest pass keeps its log.
CREATE TABLE consolidation_undo (
    step    INTEGER PRIMARY KEY,
    pass_id INTEGER NOT NULL REFERENCES consolidation_passes(id) ON DELETE CASCADE,
    data    BLOB NOT NULL
);
CREATE INDEX consolidation_undo_pass ON consolidation_undo(pass_id);
"""


@migration
def _m016_consolidation(db: Database) -> None:
    """The log of consolidation passes and the undo log of the latest one (``ccmemory consolidate``)."""
    _run_script(db, _M016)


#: Characters above which a memory may hold more word pieces than one window of the model (254 then;
#: a word piece covers at least one character). Frozen with migration 17.
_M017_ONE_WINDOW_CHARS = 254
_M017 = """
CREATE TABLE memory_embeddings_new (
    id       INTEGER PRIMARY KEY,
    item_seq INTEGER NOT NULL REFERENCES memories(seq) ON DELETE CASCADE,
    part     INTEGER NOT NULL DEFAULT 0,
    model    INTEGER NOT NULL REFERENCES embedding_models(id),
    vector   BLOB NOT NULL,
    indexed  INTEGER NOT NULL DEFAULT 0,
    UNIQUE (item_seq, part)
);
INSERT INTO memory_embeddings_new(id, item_seq, part, model, vector, indexed)
    SELECT item_seq, item_seq, 0, model, vector, indexed FROM memory_embeddings;
DROP TABLE memory_embeddings;
ALTER TABLE memory_embeddings_new RENAME TO memory_embeddings;
CREATE INDEX memory_embeddings_unindexed ON memory_embeddings(model) WHERE indexed = 0;
ALTER TABLE vector_tombstones RENAME COLUMN item_seq TO vector_id;
CREATE TRIGGER memory_embeddings_gone AFTER DELETE ON memory_embeddings BEGIN
    INSERT OR IGNORE INTO vector_tombstones(kind, vector_id) VALUES ('memory', old.id);
END;
CREATE TRIGGER memories_content_changed AFTER UPDATE OF content ON memories BEGIN
    DELETE FROM memory_embeddings WHERE item_seq = new.seq;
    UPDATE memories SET needs_embedding = 1 WHERE seq = new.seq;
END;
"""


@migration
def _m017_embedding_windows(db: Database) -> None:
    """A memory may have several vectors, one per window of its text (``part`` 0, 1, …), each its own row.

    The vector index is keyed by the row's ``id`` (a chunk's row is still its item's seq); existing rows
    keep ``id = item_seq``, so the index needs no rebuild, and the queued removals name that id. Memories
    that may be longer than one window are flagged for embedding: the background pass keeps their first
    vector (the content is unchanged) and adds the windows after it.
    """
    remade = ("memory_embeddings_gone", "memories_content_changed")
    others = db.execute(  # e.g. the sync outbox's (migration 15): dropped with the table, made again after
        "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND sql LIKE '%memory\\_embeddings%' ESCAPE '\\' "
        f"AND name NOT IN ({','.join('?' * len(remade))})", remade).fetchall()
    for name, _sql in others:
        db.execute(f'DROP TRIGGER "{name}"')
    for name in remade:
        db.execute(f'DROP TRIGGER IF EXISTS "{name}"')
    _run_script(db, _M017)
    for _name, sql in others:
        db.execute(sql)
    db.execute("UPDATE memories SET needs_embedding = 1 WHERE is_deleted = 0 AND length(content) > ? "
               "AND seq IN (SELECT item_seq FROM memory_embeddings)", (_M017_ONE_WINDOW_CHARS,))


_M018 = """
-- Content fingerprints of project files as they were at a (size, mtime) (ccmemory.staleness): a file
-- whose size or modification time changed but whose content did not (a touch, a checkout back) is
-- recognised as unchanged. A cache: losing it only makes such files look changed.
CREATE TABLE file_fingerprints (
    path        TEXT NOT NULL,
    size        INTEGER NOT NULL,
    mtime_ns    INTEGER NOT NULL,
    crc         INTEGER NOT NULL,
    PRIMARY KEY (path, size, mtime_ns)
) WITHOUT ROWID;
"""


@migration
def _m018_file_fingerprints(db: Database) -> None:
    """The cache of file content fingerprints that tells a touched file from a changed one (``ccmemory.staleness``)."""
    _run_script(db, _M018)


#: Memories embedded whole, with no vector per sentence: captured calls, session summaries, curated
#: knowledge (``ccmemory.vocabulary.SELF_CONTAINED``). Frozen with migration 19.
_M019_SELF_CONTAINED = ("capture", "summary", "knowledge")


@migration
def _m019_sentence_vectors(db: Database) -> None:
    """Memories written by a person or a model get a vector per sentence besides their own.

    Those that already have a vector are flagged for embedding: the background pass keeps it (the content
    is unchanged) and adds their sentences' (``ccmemory.embeddings._parts_to_embed``); search finds them by
    meaning meanwhile.
    """
    marks = ",".join("?" * len(_M019_SELF_CONTAINED))
    db.execute(f"UPDATE memories SET needs_embedding = 1 WHERE is_deleted = 0 AND source NOT IN ({marks}) "
               "AND seq IN (SELECT item_seq FROM memory_embeddings WHERE part = 0)", _M019_SELF_CONTAINED)


_BACKUPS_KEPT = 3
#: How long a process waits for another that is upgrading the same file (a large store takes seconds).
UPGRADE_WAIT_SECONDS = 60


def _run_script(db: Database, script: str) -> None:
    """Execute a multi-statement script statement by statement inside the current transaction.

    ``sqlite3.executescript`` would COMMIT first, so statements are split with
    :func:`sqlite3.complete_statement`, which understands trigger bodies.
    """
    import sqlite3

    statement = ""
    for line in script.splitlines(keepends=True):
        if not statement and (not line.strip() or line.lstrip().startswith("--")):
            continue
        statement += line
        if sqlite3.complete_statement(statement):
            db.execute(statement)
            statement = ""
    if statement.strip():
        raise ValueError(f"Unterminated SQL statement in migration: {statement[:80]!r}")


def current_version(db: Database) -> int:
    return int(db.scalar("PRAGMA user_version"))


def target_version() -> int:
    return len(MIGRATIONS)


def migrate(db: Database) -> int:
    """Bring the schema up to date; returns the number of migrations applied."""
    version = current_version(db)
    if version == target_version():
        return 0
    if version > target_version():
        from .errors import StorageError

        raise StorageError(
            f"{db.path} has schema version {version}, newer than this ccmemory understands "
            f"({target_version()}). Upgrade ccmemory (pip install -U ccmemory)."
        )
    with _upgrade_lock(db.path):
        # Another process may have migrated, wholly or in part, while this one waited.
        version = current_version(db)
        if version > 0 and version < target_version():
            _backup(db, version)
        applied = 0
        for number in range(version + 1, target_version() + 1):
            with db.transaction():
                if current_version(db) >= number:
                    continue
                MIGRATIONS[number - 1](db)
                db.execute(f"PRAGMA user_version = {number}")
                applied += 1
    return applied


@contextmanager
def _upgrade_lock(path: str) -> Iterator[None]:
    """One process at a time reads the version, backs up and migrates.

    Without it, processes opening the file together (the hooks of a first
    session, or SessionStart and the MCP server after an upgrade) each saw a
    version another was moving through and wrote a backup of a half-migrated
    file at the same moment; all but one then failed to open the store. The lock
    is ``<db>.upgrade.lock`` (:mod:`ccmemory.locks`): a holder that died leaves it
    to the next process at once, and a waiter gives up after :data:`UPGRADE_WAIT_SECONDS`.
    """
    if path in ("", ":memory:"):
        yield
        return
    from . import locks

    with ExitStack() as stack:
        try:
            stack.enter_context(locks.held(path + ".upgrade.lock", wait=UPGRADE_WAIT_SECONDS, command="upgrade"))
        except locks.Busy:
            from .errors import StorageError

            raise StorageError(f"Another process has been upgrading {path} for over "
                               f"{UPGRADE_WAIT_SECONDS} s; try again once it has finished.") from None
        yield


def _backup(db: Database, version: int) -> str:
    """Write a consistent copy of the database before it is migrated."""
    stamp = clock.now().replace(":", "").replace("-", "").replace(".", "")
    folder, name = os.path.split(os.path.abspath(db.path))
    target = os.path.join(folder, f"{name}.v{version}-{stamp}.bak")
    db.execute("VACUUM INTO ?", (target,))
    paths.make_private_file(target)
    backups = sorted(f for f in os.listdir(folder) if f.startswith(f"{name}.v") and f.endswith(".bak"))
    for old in backups[:-_BACKUPS_KEPT]:
        os.remove(os.path.join(folder, old))
    return target

