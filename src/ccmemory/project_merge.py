"""Merging two projects into one, and undoing it: every row kept, every move logged.

A merge happens when two locations turn out to be one repository (the upgrade to portable
identities, a shallow clone deepened, or ``ccmemory projects merge``). Every row of the project
merged away moves to the one kept; rows whose name would collide in the kept project (a memory
file, a document of the same source path) are renamed, never dropped, except the knowledge
index's bookkeeping (``knowledge_files``), which the next index run rebuilds. What moved is
logged in ``project_merges`` by row key, so :func:`undo` puts exactly those rows back; rows made
after the merge stay where they are.

Standard library only: the hook path can merge (a checkout re-identified at capture).
"""

from __future__ import annotations

import json
import posixpath

from . import clock, identity
from .errors import NotFoundError, ValidationError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .db import Database

#: table -> key column of the rows that move with their project (``project_id`` is set on each).
MOVED = {
    "sessions": "id",
    "memories": "seq",
    "documents": "id",
    "docmem_nodes": "id",
    "docmem_placements": "node_id",
    "memory_files": "id",
    "memory_file_log": "id",
    "project_aliases": "path",
    "project_roots": "root",
}
#: Where a project id appears inside a ``meta`` key (``<prefix><id>``).
META_PREFIXES = ("backfill_offered:",)


def merge(db: Database, keep: int, other: int, *, reason: str) -> dict[str, Any]:
    """Move every row of project ``other`` into ``keep``, delete ``other``, and log it; returns the log entry.

    Runs inside the caller's transaction when there is one. Vectors of the moved memories and
    chunks are marked for re-indexing, since the vector index is partitioned by project.
    """
    if keep == other:
        raise ValidationError(f"Project {keep} cannot be merged into itself; name two different projects")
    with db.transaction():
        gone = db.one("SELECT id, path, name, created_at, identity, remote FROM projects WHERE id = ?", (other,))
        if gone is None or db.scalar("SELECT 1 FROM projects WHERE id = ?", (keep,)) is None:
            raise NotFoundError(f"No project with id {other if gone is None else keep}; "
                                "`ccmemory projects` lists them")
        renamed = _make_room(db, keep, other)
        moved: dict[str, list[Any]] = {}
        for table, key in MOVED.items():
            moved[table] = [row[key] for row in db.rows(f"SELECT {key} FROM {table} WHERE project_id = ?", (other,))]
            db.execute(f"UPDATE {table} SET project_id = ? WHERE project_id = ?", (keep, other))
        moved["knowledge_files"] = [row["path"] for row in db.rows(
            "SELECT path FROM knowledge_files WHERE project_id = ?", (other,))]
        db.execute("UPDATE OR IGNORE knowledge_files SET project_id = ? WHERE project_id = ?", (keep, other))
        db.execute("DELETE FROM knowledge_files WHERE project_id = ?", (other,))
        _reindex(db, moved["memories"], moved["documents"])
        kept_identity = db.scalar("SELECT identity FROM projects WHERE id = ?", (keep,))
        for prefix in META_PREFIXES:
            db.execute("INSERT OR IGNORE INTO meta(key, value) SELECT ?, value FROM meta WHERE key = ?",
                       (f"{prefix}{keep}", f"{prefix}{other}"))
            db.execute("DELETE FROM meta WHERE key = ?", (f"{prefix}{other}",))
        db.execute("DELETE FROM projects WHERE id = ?", (other,))
        if identity.portability(gone["identity"]) > identity.portability(kept_identity):
            db.execute("UPDATE projects SET identity = ? WHERE id = ?", (gone["identity"], keep))
        entry = {"project": gone, "moved": moved, "renamed": renamed, "kept_identity": kept_identity}
        db.execute("INSERT INTO project_merges(into_id, from_id, reason, detail, at) VALUES (?, ?, ?, ?, ?)",
                   (keep, other, reason, json.dumps(entry, separators=(",", ":")), clock.now()))
        entry["id"] = db.scalar("SELECT last_insert_rowid()")
        entry["counts"] = {table: len(keys) for table, keys in moved.items() if keys}
        return entry


def undo(db: Database, merge_id: int | None = None) -> dict[str, Any]:
    """Put back the rows a merge moved (the latest not yet undone, or ``merge_id``); returns the project restored."""
    with db.transaction():
        where, params = ("id = ?", (merge_id,)) if merge_id is not None else ("1", ())
        row = db.one(f"SELECT id, into_id, from_id, detail FROM project_merges WHERE undone_at IS NULL AND {where} "
                     "ORDER BY id DESC LIMIT 1", params)
        if row is None:
            raise NotFoundError("No merge to undo" + (f" with id {merge_id}" if merge_id is not None else "")
                                + "; `ccmemory projects merges` lists them")
        entry = json.loads(row["detail"])
        project = entry["project"]
        if db.scalar("SELECT 1 FROM projects WHERE id = ?", (row["from_id"],)):
            raise ValidationError(f"Project {row['from_id']} exists again; this merge cannot be undone")
        clash = db.scalar("SELECT id FROM projects WHERE path = ? OR identity = ?", (project["path"], project["identity"]))
        if clash is not None and clash != row["into_id"]:
            raise ValidationError(f"Project {clash} now holds {project['path']}; merge it away first")
        db.execute("UPDATE projects SET identity = ? WHERE id = ? AND identity IS ?",
                   (entry["kept_identity"], row["into_id"], project["identity"]))
        db.execute("UPDATE projects SET path = path || '#' || id WHERE id = ? AND path = ?",
                   (row["into_id"], project["path"]))
        db.execute("INSERT INTO projects(id, path, name, created_at, identity, remote) VALUES (?, ?, ?, ?, ?, ?)",
                   (project["id"], project["path"], project["name"], project["created_at"], project["identity"],
                    project["remote"]))
        for table, key in MOVED.items():
            _move_back(db, table, key, entry["moved"].get(table, []), row["into_id"], row["from_id"])
        for table, key, new, old in entry["renamed"]:
            db.execute(f"UPDATE {table} SET {key} = ? WHERE {key} = ? AND project_id = ?", (old, new, row["from_id"]))
        _reindex(db, entry["moved"].get("memories", []), entry["moved"].get("documents", []))
        db.execute("UPDATE project_aliases SET pinned = 1 WHERE project_id = ?", (row["from_id"],))
        db.execute("UPDATE project_merges SET undone_at = ? WHERE id = ?", (clock.now(), row["id"]))
        return project


def history(db: Database) -> list[dict[str, Any]]:
    """Every merge, newest first, with what it moved counted per table."""
    found = []
    for row in db.rows("SELECT id, into_id, from_id, reason, detail, at, undone_at FROM project_merges ORDER BY id DESC"):
        detail = json.loads(row.pop("detail"))
        row["from_path"] = detail["project"]["path"]
        row["counts"] = {table: len(keys) for table, keys in detail["moved"].items() if keys}
        found.append(row)
    return found


def _make_room(db: Database, keep: int, other: int) -> list[list[str]]:
    """Rename ``other``'s rows whose unique name the kept project already uses; returns (table, column, new, old)."""
    renamed: list[list[str]] = []
    suffix = f"from-project-{other}"
    for row in db.rows("SELECT f.id, f.path FROM memory_files f WHERE f.project_id = ? AND EXISTS "
                       "(SELECT 1 FROM memory_files k WHERE k.project_id = ? AND k.path = f.path)", (other, keep)):
        stem, extension = posixpath.splitext(row["path"])
        new = f"{stem}.{suffix}{extension}"
        db.execute("UPDATE memory_files SET path = ? WHERE id = ?", (new, row["id"]))
        renamed.append(["memory_files", "path", new, row["path"]])
    for row in db.rows("SELECT d.id, d.source_path FROM documents d WHERE d.project_id = ? AND d.source_path IS NOT NULL "
                       "AND EXISTS (SELECT 1 FROM documents k WHERE k.project_id = ? AND k.source_path = d.source_path)",
                       (other, keep)):
        new = f"{row['source_path']}#{suffix}"
        db.execute("UPDATE documents SET source_path = ? WHERE id = ?", (new, row["id"]))
        renamed.append(["documents", "source_path", new, row["source_path"]])
    return renamed


def _move_back(db: Database, table: str, key: str, keys: list[Any], current: int, original: int) -> None:
    for start in range(0, len(keys), 500):
        part = keys[start:start + 500]
        db.execute(f"UPDATE {table} SET project_id = ? WHERE project_id = ? AND {key} IN ({','.join('?' * len(part))})",
                   (original, current, *part))


def _reindex(db: Database, memory_seqs: list[int], document_ids: list[str]) -> None:
    """Mark moved vectors for re-indexing: the vector index is partitioned by project."""
    for start in range(0, len(memory_seqs), 500):
        part = memory_seqs[start:start + 500]
        db.execute(f"UPDATE memory_embeddings SET indexed = 0 WHERE item_seq IN ({','.join('?' * len(part))})", part)
    for start in range(0, len(document_ids), 500):
        names = document_ids[start:start + 500]
        db.execute("UPDATE chunk_embeddings SET indexed = 0 WHERE item_seq IN "
                   f"(SELECT seq FROM chunks WHERE document_id IN ({','.join('?' * len(names))}))", names)
