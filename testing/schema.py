"""Stores at an older schema, for the tests of the migrations that upgrade them."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable, Sequence

from ccmemory import db as database
from ccmemory import migrations


def store_before(migration: Callable[[database.Database], None], path: Path | None = None) -> database.Database:
    """An open store whose schema stops just before ``migration`` (connecting runs no migration)."""
    db = database.connect(path, migrate=False)
    before = migrations.MIGRATIONS.index(migration)
    with db.transaction():
        for step in migrations.MIGRATIONS[:before]:
            step(db)
        db.execute(f"PRAGMA user_version = {before}")
    return db


def old_project(db: database.Database, folder: str | Path) -> int:
    """A project row in a store at a schema older than portable identities (migration 13), as code of then made it."""
    from ccmemory import clock, projects

    root = projects.project_root(folder)
    with db.transaction():
        db.execute("INSERT OR IGNORE INTO projects(path, name, created_at) VALUES (?, ?, ?)",
                   (root, Path(root).name or root, clock.now()))
        return int(db.scalar("SELECT id FROM projects WHERE path = ?", (root,)))


def add_memory(db: database.Database, *, project_id: int, content: str, session_id: str | None = None,
               category: str = "general", tags: Sequence[str] = (), files: Sequence[str] = (),
               source: str = "manual", metadata: dict[str, Any] | None = None,
               dedupe_key: str | None = None) -> SimpleNamespace:
    """A memory (and its session) written with the columns every schema since the first has, into a store
    at an older schema: today's writer (``memories.add``) names columns a later migration added.

    Answers with the row's ``id`` and ``seq``.
    """
    from ccmemory import clock, memories

    now = clock.now()
    if session_id:
        db.execute("INSERT OR IGNORE INTO sessions(id, project_id, started_at) VALUES (?, ?, ?)",
                   (session_id, project_id, now))
    memory_id = memories.new_id()
    db.execute(
        "INSERT INTO memories(id, project_id, session_id, content, sector, tier, category, tags, files, created_at, "
        "updated_at, source, dedupe_key, metadata) VALUES (?, ?, ?, ?, 'semantic', 'project', ?, ?, ?, ?, ?, ?, ?, ?)",
        (memory_id, project_id, session_id, content, category, json.dumps(list(tags)), json.dumps(list(files)),
         now, now, source, dedupe_key, json.dumps(metadata or {})))
    return SimpleNamespace(id=memory_id, seq=db.scalar("SELECT seq FROM memories WHERE id = ?", (memory_id,)))
