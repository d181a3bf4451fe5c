"""Merging two projects into one, and undoing it: every row kept, every move logged.

A merge happens when two locations turn out to be one repository (the upgrade to portable
identities, a shallow clone deepened, or ``ccmemory projects merge``). Every row of the project
merged away moves to the one kept; rows whose name would collide in the kept project (a memory
file, a document of the same source path) are renamed, never dropped, except the knowledge
index's bookkeeping (``knowledge_files``), which the next index run rebuilds. What moved is
logged in ``project_merges`` by row key, so :func:`undo` puts exactly those rows back; rows made
after the merge stay where they are.

A split (``ccmemory projects split PATH``) is the way back for a location put in the wrong
project: it undoes the merge that brought the location, if one did, and otherwise gives the
location a new project of its own with the sessions that ran there (:func:`sessions_at`). It
is logged in the same table (``detail.kind = "split"``), so :func:`undo` takes it back too.

Standard library only: the hook path can merge (a checkout re-identified at capture).
"""

from __future__ import annotations

import json
import os
import posixpath

from . import clock, identity, transcript
from .errors import NotFoundError, ValidationError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Iterator, Sequence

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


def merge(db: Database, keep: int, other: int, *, reason: str, pin: bool = False) -> dict[str, Any]:
    """Move every row of project ``other`` into ``keep``, delete ``other``, and log it; returns the log entry.

    Runs inside the caller's transaction when there is one. Vectors of the moved memories and
    chunks are marked for re-indexing, since the vector index is partitioned by project. With
    ``pin`` (a merge the user asked for) the moved aliases are pinned: never re-identified.
    Migration 13 merges with it too, so it names only tables and columns that exist from
    schema 13 on (a column added later must be read here only when present).
    """
    with db.transaction():
        _check_pair(db, keep, other)
        entry = _absorb(db, keep, other)
        if pin:
            _pin(db, entry["moved"]["project_aliases"])
        entry["id"] = _log(db, keep, other, reason, entry)
        entry["counts"] = _counted(entry["moved"])
        return entry


def plan(db: Database, keep: int, other: int) -> dict[str, int]:
    """What :func:`merge` would move from ``other`` into ``keep``, counted per table (nothing is written)."""
    _check_pair(db, keep, other)
    counts = {table: int(db.scalar(f"SELECT COUNT(*) FROM {table} WHERE project_id = ?", (other,)))
              for table in (*MOVED, "knowledge_files")}
    return {table: count for table, count in counts.items() if count}


def _check_pair(db: Database, keep: int, other: int) -> None:
    if keep == other:
        raise ValidationError(f"Project {keep} cannot be merged into itself; name two different projects")
    for project in (keep, other):
        if db.scalar("SELECT 1 FROM projects WHERE id = ?", (project,)) is None:
            raise NotFoundError(f"No project with id {project}; `ccmemory projects` lists them")


def _absorb(db: Database, keep: int, other: int) -> dict[str, Any]:
    """Move every row of ``other`` into ``keep`` and delete ``other``: what moved, by key, for the log."""
    gone = db.one("SELECT id, path, name, created_at, identity, remote FROM projects WHERE id = ?", (other,))
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
    if gone is not None and identity.portability(gone["identity"]) > identity.portability(kept_identity):
        db.execute("UPDATE projects SET identity = ? WHERE id = ?", (gone["identity"], keep))
    return {"project": gone, "moved": moved, "renamed": renamed, "kept_identity": kept_identity}


def _log(db: Database, into: int, source: int, reason: str, entry: dict[str, Any]) -> int:
    db.execute("INSERT INTO project_merges(into_id, from_id, reason, detail, at) VALUES (?, ?, ?, ?, ?)",
               (into, source, reason, json.dumps(entry, separators=(",", ":")), clock.now()))
    return int(db.scalar("SELECT last_insert_rowid()"))


def _counted(moved: dict[str, list[Any]]) -> dict[str, int]:
    return {table: len(keys) for table, keys in moved.items() if keys}


def _pin(db: Database, paths: list[str]) -> None:
    for part, marks in _parts(paths):
        db.execute(f"UPDATE project_aliases SET pinned = 1 WHERE path IN ({marks})", part)


def undo(db: Database, merge_id: int | None = None) -> dict[str, Any]:
    """Take back the latest merge or split not yet undone (or ``merge_id``).

    A merge: the rows it moved go back to the project it removed, which is made again (later rows
    stay). A split: the location and everything its project holds go back into the project it was
    split from. Returns ``{"id", "kind", "project"}``: the log entry and the project restored (merge)
    or the one the location rejoined (split).
    """
    with db.transaction():
        where, params = ("id = ?", (merge_id,)) if merge_id is not None else ("1", ())
        row = db.one(f"SELECT id, into_id, from_id, detail FROM project_merges WHERE undone_at IS NULL AND {where} "
                     "ORDER BY id DESC LIMIT 1", params)
        if row is None:
            if merge_id is not None and db.scalar("SELECT 1 FROM project_merges WHERE id = ?", (merge_id,)):
                raise ValidationError(f"Merge {merge_id} is already undone; `ccmemory projects merges` lists them")
            raise NotFoundError("No merge to undo" + (f" with id {merge_id}" if merge_id is not None else "")
                                + "; `ccmemory projects merges` lists them")
        entry = json.loads(row["detail"])
        if entry.get("kind") == "split":
            project = _unsplit(db, row, entry)
        else:
            project = _unmerge(db, row, entry)
        db.execute("UPDATE project_merges SET undone_at = ? WHERE id = ?", (clock.now(), row["id"]))
        return {"id": row["id"], "kind": entry.get("kind", "merge"), "project": project}


def _unmerge(db: Database, row: dict[str, Any], entry: dict[str, Any]) -> dict[str, Any]:
    project: dict[str, Any] = entry["project"]
    if db.scalar("SELECT 1 FROM projects WHERE id = ?", (row["from_id"],)):
        raise ValidationError(f"Project {row['from_id']} exists again; merge {row['id']} cannot be undone")
    if db.scalar("SELECT 1 FROM projects WHERE id = ?", (row["into_id"],)) is None:
        raise ValidationError(f"Project {row['into_id']} is gone (merged or split since); undo that first: "
                              "`ccmemory projects merges` lists what happened")
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
    _settle_path(db, row["into_id"])
    return project


def split(db: Database, path: str, *, reason: str) -> dict[str, Any]:
    """Give the location ``path`` (an alias) a project of its own, logged so that :func:`undo` takes it back.

    If a merge not yet undone brought ``path`` into its project, that merge is undone (its project
    comes back with what it moved). Otherwise a new project is made for ``path``. Either way the
    alias is pinned there, and the sessions that ran at ``path`` (:func:`sessions_at`) still in the
    old project move with their memories. Returns ``{"id", "project", "from_id", "undid", "counts",
    "ambiguous"}``: ``undid`` the merge undone (or None), ``counts`` what moved per table (the undone
    merge's rows included), ``ambiguous`` the sessions left where they were because their folder
    names another location of the project as well.
    """
    with db.transaction():
        alias = db.one("SELECT path, project_id, pinned FROM project_aliases WHERE path = ?", (path,))
        if alias is None:
            raise NotFoundError(f"No project has been seen at {path}; `ccmemory projects` lists the paths of each")
        source = int(alias["project_id"])
        path_was = db.scalar("SELECT path FROM projects WHERE id = ?", (source,))
        undid = _merge_that_brought(db, path, source)
        restored: dict[str, int] = {}
        if undid is not None:
            restored = _counted(json.loads(db.scalar("SELECT detail FROM project_merges WHERE id = ?", (undid,)))["moved"])
            target = int(undo(db, undid)["project"]["id"])
        elif db.scalar("SELECT COUNT(*) FROM project_aliases WHERE project_id = ?", (source,)) < 2:
            raise ValidationError(f"{path} is the only path of project {source}: it has a project of its own already")
        else:
            target = _create_for(db, path)
        moving, ambiguous = sessions_at(db, source, path)
        moved: dict[str, list[Any]] = {"project_aliases": [], "sessions": moving, "memories": []}
        if undid is None:
            moved["project_aliases"] = [path]
            db.execute("UPDATE project_aliases SET project_id = ?, pinned = 1 WHERE path = ?", (target, path))
        for part, marks in _parts(moving):
            moved["memories"] += [r["seq"] for r in db.rows(
                f"SELECT seq FROM memories WHERE project_id = ? AND session_id IN ({marks})", (source, *part))]
            db.execute(f"UPDATE sessions SET project_id = ? WHERE project_id = ? AND id IN ({marks})",
                       (target, source, *part))
            db.execute(f"UPDATE memories SET project_id = ? WHERE project_id = ? AND session_id IN ({marks})",
                       (target, source, *part))
        _reindex(db, moved["memories"], [])
        _settle_path(db, source)
        entry = {"kind": "split", "path": path, "project": db.one(
                     "SELECT id, path, name, created_at, identity, remote FROM projects WHERE id = ?", (target,)),
                 "created": undid is None, "undid": undid, "pinned": alias["pinned"], "path_was": path_was,
                 "moved": moved, "renamed": []}
        log_id = _log(db, target, source, reason, entry)
        counts = {table: restored.get(table, 0) + len(moved.get(table, [])) for table in {*restored, *moved}}
        return {"id": log_id, "project": entry["project"], "from_id": source, "undid": undid,
                "counts": {table: count for table, count in counts.items() if count}, "ambiguous": ambiguous}


def sessions_at(db: Database, project: int, path: str) -> tuple[list[str], int]:
    """The sessions of ``project`` that ran at the location ``path``, and how many could as well have run elsewhere.

    Sessions do not store their working directory, but their transcript lies in the folder Claude
    Code names after it (:func:`ccmemory.transcript.folder_name`): a session ran at ``path`` when
    that folder is ``path``'s name, or the name of a directory below it (``<name>-…``), and no
    other location of the project names it as closely (the longest name wins: ``/a/app-old``
    over ``/a/app``). Two locations with the same name (``/a/b-c`` and ``/a/b/c``) leave their
    sessions where they are (counted as ambiguous), as do sessions without a transcript.
    """
    names = [(transcript.folder_name(row["path"]), row["path"]) for row in db.rows(
        "SELECT path FROM project_aliases WHERE project_id = ? OR path = ?", (project, path))]
    found: list[str] = []
    ambiguous = 0
    for row in db.rows("SELECT id, transcript_path FROM sessions WHERE project_id = ? AND transcript_path IS NOT NULL",
                       (project,)):
        folder = os.path.basename(os.path.dirname(row["transcript_path"]))
        matching = [(len(name), where) for name, where in names if folder == name or folder.startswith(name + "-")]
        if not matching:
            continue
        longest = max(length for length, _ in matching)
        best = [where for length, where in matching if length == longest]
        if best == [path]:
            found.append(row["id"])
        elif path in best:
            ambiguous += 1
    return found, ambiguous


def _merge_that_brought(db: Database, path: str, project: int) -> int | None:
    """The latest merge not yet undone that moved the alias ``path`` into ``project``."""
    for row in db.rows("SELECT id, detail FROM project_merges WHERE undone_at IS NULL AND into_id = ? "
                       "ORDER BY id DESC", (project,)):
        entry = json.loads(row["detail"])
        if entry.get("kind", "merge") == "merge" and path in entry["moved"].get("project_aliases", []):
            return int(row["id"])
    return None


def _create_for(db: Database, path: str) -> int:
    """A new project for the location ``path``, identified by its path (the repository's identity stays with the old)."""
    key = f"path:{path}"
    free = db.scalar("SELECT 1 FROM projects WHERE identity = ?", (key,)) is None
    db.execute("UPDATE projects SET path = path || '#' || id WHERE path = ?", (path,))
    db.execute("INSERT INTO projects(path, name, created_at, identity) VALUES (?, ?, ?, ?)",
               (path, os.path.basename(path) or path, clock.now(), key if free else None))
    return int(db.scalar("SELECT last_insert_rowid()"))


def _settle_path(db: Database, project: int) -> None:
    """A project whose path is no longer one of its locations takes its oldest location as its path."""
    own = db.scalar("SELECT path FROM projects WHERE id = ?", (project,))
    if own is None or db.scalar("SELECT 1 FROM project_aliases WHERE path = ? AND project_id = ?", (own, project)):
        return
    oldest = db.scalar("SELECT path FROM project_aliases WHERE project_id = ? AND path NOT IN "
                       "(SELECT path FROM projects) ORDER BY first_seen, path LIMIT 1", (project,))
    if oldest is not None:
        db.execute("UPDATE projects SET path = ? WHERE id = ?", (oldest, project))


def _unsplit(db: Database, row: dict[str, Any], entry: dict[str, Any]) -> dict[str, Any]:
    """The split location, and everything its project holds now, back into the project it was split from."""
    back, split_off = int(row["from_id"]), int(row["into_id"])
    for project in (back, split_off):
        if db.scalar("SELECT 1 FROM projects WHERE id = ?", (project,)) is None:
            raise ValidationError(f"Project {project} is gone (merged or split since); split {row['id']} cannot be "
                                  "undone. `ccmemory projects merges` lists what happened")
    _absorb(db, back, split_off)
    db.execute("UPDATE project_aliases SET pinned = ? WHERE path = ?", (entry["pinned"], entry["path"]))
    if not db.scalar("SELECT 1 FROM projects WHERE path = ?", (entry["path_was"],)):
        db.execute("UPDATE projects SET path = ? WHERE id = ?", (entry["path_was"], back))
    return db.rows("SELECT id, path, name, created_at, identity, remote FROM projects WHERE id = ?", (back,))[0]


def history(db: Database) -> list[dict[str, Any]]:
    """Every merge and split, newest first, with what it moved counted per table.

    ``path`` is the location split off (a split) or the path of the project merged away (a merge).
    """
    found = []
    for row in db.rows("SELECT id, into_id, from_id, reason, detail, at, undone_at FROM project_merges ORDER BY id DESC"):
        detail = json.loads(row.pop("detail"))
        row["kind"] = detail.get("kind", "merge")
        row["path"] = detail["path"] if row["kind"] == "split" else detail["project"]["path"]
        row["undid"] = detail.get("undid")
        row["counts"] = _counted(detail["moved"])
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
    for part, marks in _parts(keys):
        db.execute(f"UPDATE {table} SET project_id = ? WHERE project_id = ? AND {key} IN ({marks})",
                   (original, current, *part))


def _reindex(db: Database, memory_seqs: list[int], document_ids: list[str]) -> None:
    """Mark moved vectors for re-indexing: the vector index is partitioned by project."""
    for seqs, marks in _parts(memory_seqs):
        db.execute(f"UPDATE memory_embeddings SET indexed = 0 WHERE item_seq IN ({marks})", seqs)
    for names, marks in _parts(document_ids):
        db.execute(f"UPDATE chunk_embeddings SET indexed = 0 WHERE item_seq IN "
                   f"(SELECT seq FROM chunks WHERE document_id IN ({marks}))", names)


def _parts(keys: Sequence[Any]) -> Iterator[tuple[Sequence[Any], str]]:
    """``keys`` in parts of 500 (well under SQLite's limit on bound parameters), each with its ``?,?,…``."""
    for start in range(0, len(keys), 500):
        part = keys[start:start + 500]
        yield part, ",".join("?" * len(part))
