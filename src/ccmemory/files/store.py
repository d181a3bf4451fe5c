"""Memory-file rows and the audit log: the only SQL about memory files.

A file row belongs to a project (``project_id``) or to the user-wide scope
(``project_id`` NULL); ``path`` is its path inside the scope (``notes.md``,
``topics/api.md``). Every change bumps ``version``, which the CLI's editor
round trip checks so an edit made meanwhile is never overwritten.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any
    from ..db import Database

from .. import clock
from .paths import Location, display

#: The audit log keeps about this many newest rows.
LOG_KEPT = 20_000
_PRUNE_EVERY = 500


class FileRow:
    """One stored memory file."""

    __slots__ = ("id", "project_id", "path", "content", "version", "created_at", "updated_at")
    id: int
    project_id: int | None
    path: str
    content: str
    version: int
    created_at: str
    updated_at: str

    def __init__(self, row: dict[str, Any]) -> None:
        for name in self.__slots__:
            setattr(self, name, row[name])

    @property
    def user(self) -> bool:
        return self.project_id is None

    @property
    def display(self) -> str:
        return display(self.user, self.path)

    @property
    def size(self) -> int:
        return len(self.content.encode("utf-8"))

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.display, "scope": "user" if self.user else "project", "content": self.content,
                "version": self.version, "created_at": self.created_at, "updated_at": self.updated_at}


_COLUMNS = "id, project_id, path, content, version, created_at, updated_at"


def scope_of(location: Location, project_id: int) -> int | None:
    """The ``project_id`` column value of a location's scope."""
    return None if location.user else project_id


def get(db: Database, scope: int | None, rel: str) -> FileRow | None:
    row = db.one(f"SELECT {_COLUMNS} FROM memory_files WHERE ifnull(project_id, 0) = ? AND path = ?",
                 (scope or 0, rel))
    return FileRow(row) if row else None


def under(db: Database, scope: int | None, rel_dir: str) -> list[FileRow]:
    """Files of a scope inside the directory ``rel_dir`` ("" = the whole scope), by path."""
    if not rel_dir:
        rows = db.rows(f"SELECT {_COLUMNS} FROM memory_files WHERE ifnull(project_id, 0) = ? ORDER BY path",
                       (scope or 0,))
    else:
        prefix = rel_dir + "/"
        rows = db.rows(f"SELECT {_COLUMNS} FROM memory_files WHERE ifnull(project_id, 0) = ? "
                       "AND substr(path, 1, ?) = ? ORDER BY path", (scope or 0, len(prefix), prefix))
    return [FileRow(row) for row in rows]


def visible(db: Database, project_id: int) -> list[FileRow]:
    """Everything a project sees: its own files, then the user-wide ones."""
    return under(db, project_id, "") + under(db, None, "")


def count(db: Database, scope: int | None) -> int:
    return int(db.scalar("SELECT count(*) FROM memory_files WHERE ifnull(project_id, 0) = ?", (scope or 0,)))


def insert(db: Database, scope: int | None, rel: str, content: str) -> None:
    now = clock.now()
    db.execute("INSERT INTO memory_files(project_id, path, content, version, created_at, updated_at) "
               "VALUES (?, ?, ?, 1, ?, ?)", (scope, rel, content, now, now))


def update(db: Database, row: FileRow, content: str) -> None:
    db.execute("UPDATE memory_files SET content = ?, version = version + 1, updated_at = ? WHERE id = ?",
               (content, clock.now(), row.id))


def move(db: Database, row: FileRow, scope: int | None, rel: str) -> None:
    db.execute("UPDATE memory_files SET project_id = ?, path = ?, version = version + 1, updated_at = ? "
               "WHERE id = ?", (scope, rel, clock.now(), row.id))


def remove(db: Database, rows: list[FileRow]) -> None:
    for row in rows:
        db.execute("DELETE FROM memory_files WHERE id = ?", (row.id,))


def log(db: Database, *, project_id: int | None, session_id: str | None, source: str, command: str,
        path: str | None, new_path: str | None, ok: bool, detail: str) -> None:
    """Append one audit row (inside the caller's transaction); now and then drop the oldest beyond LOG_KEPT.

    Paths and details pass through the redaction too: a rejected path may be the very secret it looked like.
    """
    from ..redaction import redact

    path, new_path = (redact(v) if v else v for v in (path, new_path))
    detail = redact(detail) if detail else detail
    db.execute(
        "INSERT INTO memory_file_log(at, project_id, session_id, source, command, path, new_path, ok, detail) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (clock.now(), project_id, session_id, source, command, path, new_path, int(ok), (detail or "")[:500]),
    )
    newest = db.scalar("SELECT last_insert_rowid()")
    if newest and newest % _PRUNE_EVERY == 0:
        db.execute("DELETE FROM memory_file_log WHERE id <= ?", (newest - LOG_KEPT,))


def log_rows(db: Database, project_id: int | None, limit: int = 50) -> list[dict[str, Any]]:
    """The newest audit rows of a project (all projects with None), newest first."""
    where, params = ("WHERE project_id = ?", (project_id,)) if project_id is not None else ("", ())
    return db.rows(f"SELECT at, project_id, session_id, source, command, path, new_path, ok, detail "
                   f"FROM memory_file_log {where} ORDER BY id DESC LIMIT ?", (*params, limit))
