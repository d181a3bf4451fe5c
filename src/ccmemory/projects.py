"""Project identity: the git top-level of a directory, else its real path; never a basename.

Two checkouts named ``app`` are two projects. The git top-level is found by
walking up to the nearest ``.git`` (a directory, or the file a worktree or
submodule has), which costs no subprocess on the hook path.
"""

from __future__ import annotations

import os
from pathlib import Path

from . import clock
from .db import Database


def project_root(cwd: str | os.PathLike[str]) -> Path:
    """The identity path of the project that contains ``cwd``."""
    start = Path(os.path.realpath(cwd))
    for candidate in (start, *start.parents):
        if (candidate / ".git").exists():
            return candidate
    return start


def project_id(db: Database, cwd: str | os.PathLike[str], *, create: bool = True) -> int | None:
    """The row id of the project containing ``cwd``, created on first sight."""
    root = str(project_root(cwd))
    found = db.scalar("SELECT id FROM projects WHERE path = ?", (root,))
    if found is not None or not create:
        return found
    with db.transaction():
        db.execute(
            "INSERT OR IGNORE INTO projects(path, name, created_at) VALUES (?, ?, ?)",
            (root, Path(root).name or root, clock.now()),
        )
        return db.scalar("SELECT id FROM projects WHERE path = ?", (root,))
