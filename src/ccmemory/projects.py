"""Project identity: the git top-level of a directory, else its real path; never a basename.

Two checkouts named ``app`` are two projects. The git top-level is found by
walking up to the nearest ``.git`` (a directory, or the file a worktree or
submodule has), which costs no subprocess on the hook path.
"""

from __future__ import annotations

import os

from . import clock
from .db import Database
from .errors import NotFoundError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Literal, overload


def project_root(cwd: str | os.PathLike[str]) -> str:
    """The identity path of the project that contains ``cwd``."""
    start = os.path.realpath(cwd)
    candidate = start
    while True:
        if os.path.exists(os.path.join(candidate, ".git")):
            return candidate
        parent = os.path.dirname(candidate)
        if parent == candidate:
            return start
        candidate = parent


if TYPE_CHECKING:  # with create (the default) there is always a project
    @overload
    def project_id(db: Database, cwd: str | os.PathLike[str], *, create: Literal[True] = True) -> int: ...
    @overload
    def project_id(db: Database, cwd: str | os.PathLike[str], *, create: bool) -> int | None: ...


def project_id(db: Database, cwd: str | os.PathLike[str], *, create: bool = True) -> int | None:
    """The row id of the project containing ``cwd``, created on first sight."""
    root = project_root(cwd)
    found = db.scalar("SELECT id FROM projects WHERE path = ?", (root,))
    if found is not None or not create:
        return found
    with db.transaction():
        db.execute(
            "INSERT OR IGNORE INTO projects(path, name, created_at) VALUES (?, ?, ?)",
            (root, os.path.basename(root) or root, clock.now()),
        )
        return db.scalar("SELECT id FROM projects WHERE path = ?", (root,))


def list_all(db: Database) -> list[dict[str, Any]]:
    """Every project with its live memory and session counts and its latest activity, most recent first.

    Live = all minus deleted, both counted from indexes alone (the trash has a partial
    index), so listing stays a few milliseconds at 100k memories.
    """
    return db.rows(
        "SELECT p.id, p.path, p.name, p.created_at, "
        "(SELECT COUNT(*) FROM memories m WHERE m.project_id = p.id) - "
        "(SELECT COUNT(*) FROM memories m WHERE m.project_id = p.id AND m.is_deleted = 1) AS memories, "
        "(SELECT COUNT(*) FROM sessions s WHERE s.project_id = p.id) AS sessions, "
        "COALESCE((SELECT MAX(created_at) FROM memories m WHERE m.project_id = p.id), p.created_at) AS last_activity "
        "FROM projects p ORDER BY last_activity DESC, p.id"
    )


def get(db: Database, project_id: int) -> dict[str, Any]:
    """One project row by id."""
    row = db.one("SELECT id, path, name, created_at FROM projects WHERE id = ?", (project_id,))
    if row is None:
        raise NotFoundError(f"No project with id {project_id!r}; pick one from the list of projects")
    return row
