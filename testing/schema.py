"""Stores at an older schema, for the tests of the migrations that upgrade them."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

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
