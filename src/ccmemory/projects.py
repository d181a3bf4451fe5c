"""Project identity: the git top-level of a directory, else its real path; never a basename.

Two checkouts named ``app`` are two projects. The git top-level is found by
walking up to the nearest ``.git`` (a directory, or the file a worktree or
submodule has), which costs no subprocess on the hook path.
"""

from __future__ import annotations

import os

from . import clock
from .db import Database


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
