"""One :class:`RecordType` per kind of row: how it is exported and how it is imported.

A record is a JSON object: ``"type"``, then the row's fields. References use
stable keys, a project by its path and everything else by its id, so a file
moves between machines and stores. Integer row ids and derived data (FTS,
embeddings, the ``needs_embedding`` flag) are never exported: import rebuilds
them, and the imported rows are embedded later like any new row. Every type
exports its rows in a fixed order, so the same store always gives the same file.

Import is idempotent by id and keeps the original times: an absent row is
added as it was; a present one is updated only when the record is newer (its
``updated_at``, or a session's end); otherwise it is left alone. Text is
redacted on the way in.

Memory files are keyed by scope and path, not by id: ``project`` is null for the
user-wide files every project shares, and those go with every export.

Another module adds a kind of record with :func:`register`. Export writes the
types in registration order and import reads them in file order, so a type
whose rows refer to another's (a memory to its session) registers after it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator

from ..db import Database
from ..docmem.nodes import node_hash
from ..errors import ValidationError
from ..files import commands as file_commands, paths as file_paths, store as file_store

ADDED, UPDATED, UNCHANGED = "added", "updated", "unchanged"


@dataclass(frozen=True)
class Scope:
    """What an export covers: some projects (None: all) and rows changed since a time (None: all)."""

    project_ids: tuple[int, ...] | None = None
    since: str | None = None

    def projects(self, column: str) -> tuple[str, list[Any]]:
        """A SQL condition on a project id column, and its parameters."""
        if self.project_ids is None:
            return "1", []
        return f"{column} IN ({','.join('?' * len(self.project_ids))})", list(self.project_ids)

    def changed(self, column: str) -> tuple[str, list[Any]]:
        """A SQL condition ``column >= since`` (always true without ``since``)."""
        if self.since is None:
            return "1", []
        return f"{column} >= ?", [self.since]


@dataclass
class ImportContext:
    """What loading a record needs: the database, the project mapping, the redaction."""

    db: Database
    redact: Callable[[str], str]
    into_project: int | None = None
    redacted: int = 0
    _projects: dict[str, int] = field(default_factory=dict)

    def project_id(self, path: Any) -> int:
        """The local id of a project path from the file (or the project everything goes into)."""
        if self.into_project is not None:
            return self.into_project
        if not isinstance(path, str) or not path:
            raise ValidationError("the record names no project")
        if path not in self._projects:
            found = self.db.scalar("SELECT id FROM projects WHERE path = ?", (path,))
            if found is None:
                raise ValidationError(f"its project {path!r} has no project record before it")
            self._projects[path] = found
        return self._projects[path]

    def clean(self, text: Any) -> Any:
        """Text with private spans and secrets redacted (counted); other values unchanged."""
        if not isinstance(text, str):
            return text
        cleaned = self.redact(text)
        if cleaned != text:
            self.redacted += 1
        return cleaned


@dataclass(frozen=True)
class RecordType:
    """A kind of record: its ``type`` name, its rows for a scope, and how one is loaded.

    ``load(context, record)`` returns :data:`ADDED`, :data:`UPDATED` or
    :data:`UNCHANGED`, and raises :class:`ValidationError` (or a database
    error) when the record cannot be stored; import reports it and goes on.
    """

    name: str
    export: Callable[[Database, Scope], Iterable[dict[str, Any]]]
    load: Callable[[ImportContext, dict[str, Any]], str]


RECORD_TYPES: list[RecordType] = []


def register(record_type: RecordType) -> RecordType:
    """Add a kind of record to export and import (after the types it refers to)."""
    if any(existing.name == record_type.name for existing in RECORD_TYPES):
        raise ValueError(f"record type {record_type.name!r} is registered twice")
    RECORD_TYPES.append(record_type)
    return record_type


def by_name(name: str) -> RecordType | None:
    return next((record_type for record_type in RECORD_TYPES if record_type.name == name), None)


def _json(value: Any, default: Any) -> Any:
    return json.loads(value) if isinstance(value, str) and value else default


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _version(value: Any) -> str:
    return value if isinstance(value, str) else ""


def upsert(ctx: ImportContext, table: str, key: str, row: dict[str, Any], version: str | None) -> str:
    """Insert ``row`` if its key is absent; else update the columns that differ when the row is newer.

    Only changed columns are written, so an unchanged ``content`` does not
    fire the triggers that drop a row's embedding.
    """
    existing = ctx.db.one(f"SELECT {', '.join(row)} FROM {table} WHERE {key} = ?", (row[key],))
    if existing is None:
        ctx.db.execute(f"INSERT INTO {table}({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
                       tuple(row.values()))
        return ADDED
    if version is None or _version(row[version]) <= _version(existing[version]):
        return UNCHANGED
    changed = {column: value for column, value in row.items() if existing[column] != value}
    if not changed:
        return UNCHANGED
    ctx.db.execute(f"UPDATE {table} SET {', '.join(f'{c} = ?' for c in changed)} WHERE {key} = ?",
                   (*changed.values(), row[key]))
    return UPDATED


def project_rows(db: Database, scope: Scope, table: str, fields: tuple[str, ...], changed: str,
                 order: str) -> Iterator[dict[str, Any]]:
    """Rows of ``table`` in ``scope`` as records: the key field, its project's path as ``project``, the rest.

    ``changed`` is the column ``--since`` applies to; ``order`` fixes the export order.
    """
    in_projects, params = scope.projects("t.project_id")
    is_recent, since = scope.changed(f"t.{changed}")
    columns = ", ".join(f"t.{name}" for name in fields)
    for row in db.rows(f"SELECT {columns}, p.path AS project FROM {table} t JOIN projects p ON p.id = t.project_id "
                       f"WHERE {in_projects} AND {is_recent} ORDER BY {order}", [*params, *since]):
        record = {fields[0]: row[fields[0]], "project": row["project"]}
        record.update((name, row[name]) for name in fields[1:])
        yield record


# -- projects -----------------------------------------------------------------------------------------------------

def _export_projects(db: Database, scope: Scope) -> Iterator[dict[str, Any]]:
    where, params = scope.projects("id")
    for row in db.rows(f"SELECT path, name, created_at FROM projects WHERE {where} ORDER BY path", params):
        yield row


def _load_project(ctx: ImportContext, record: dict[str, Any]) -> str:
    if ctx.into_project is not None:
        return UNCHANGED
    path = record.get("path")
    if not isinstance(path, str) or not path:
        raise ValidationError("a project record needs a path")
    if ctx.db.scalar("SELECT 1 FROM projects WHERE path = ?", (path,)):
        return UNCHANGED
    ctx.db.execute("INSERT INTO projects(path, name, created_at) VALUES (?, ?, ?)",
                   (path, record.get("name") or path, record["created_at"]))
    return ADDED


# -- sessions -----------------------------------------------------------------------------------------------------

def _export_sessions(db: Database, scope: Scope) -> Iterator[dict[str, Any]]:
    in_projects, params = scope.projects("s.project_id")
    changed, since = scope.changed("COALESCE(s.ended_at, s.started_at)")
    if scope.since is not None:  # sessions of the memories exported, so their links hold
        changed = f"({changed} OR s.id IN (SELECT session_id FROM memories WHERE updated_at >= ?))"
        since = [*since, scope.since]
    for row in db.rows(
        "SELECT s.id, p.path AS project, s.started_at, s.ended_at, s.summary, s.transcript_path, s.metadata "
        f"FROM sessions s JOIN projects p ON p.id = s.project_id WHERE {in_projects} AND {changed} "
        "ORDER BY s.started_at, s.id", [*params, *since],
    ):
        row["metadata"] = _json(row["metadata"], {})
        yield row


def _load_session(ctx: ImportContext, record: dict[str, Any]) -> str:
    row = {
        "id": record["id"], "project_id": ctx.project_id(record.get("project")),
        "started_at": record["started_at"], "ended_at": record.get("ended_at"),
        "summary": ctx.clean(record.get("summary")), "transcript_path": record.get("transcript_path"),
        "metadata": _dump(record.get("metadata") or {}),
    }
    return upsert(ctx, "sessions", "id", row, "ended_at")


# -- memories -----------------------------------------------------------------------------------------------------

_MEMORY_FIELDS = ("id", "session_id", "content", "sector", "tier", "category", "tags", "files", "importance",
                  "salience", "reference_count", "last_accessed", "created_at", "updated_at", "valid_until",
                  "is_deleted", "deleted_at", "source", "dedupe_key", "metadata")


def _export_memories(db: Database, scope: Scope) -> Iterator[dict[str, Any]]:
    for record in project_rows(db, scope, "memories", _MEMORY_FIELDS, "updated_at", "t.seq"):
        record["tags"] = _json(record["tags"], [])
        record["files"] = _json(record["files"], [])
        record["metadata"] = _json(record["metadata"], {})
        record["is_deleted"] = bool(record["is_deleted"])
        yield record


def _load_memory(ctx: ImportContext, record: dict[str, Any]) -> str:
    row = {name: record.get(name) for name in _MEMORY_FIELDS}
    row["project_id"] = ctx.project_id(record.get("project"))
    row["content"] = ctx.clean(row["content"])
    row["tags"] = _dump(row["tags"] or [])
    row["files"] = _dump(row["files"] or [])
    row["metadata"] = _dump(row["metadata"] or {})
    row["is_deleted"] = int(bool(row["is_deleted"]))
    row["reference_count"] = row["reference_count"] or 0
    row["source"] = row["source"] or "import"
    if row["session_id"] and not ctx.db.scalar("SELECT 1 FROM sessions WHERE id = ?", (row["session_id"],)):
        row["session_id"] = row["dedupe_key"] = None
    return upsert(ctx, "memories", "id", row, "updated_at")


# -- relationships and session usage (links) ------------------------------------------------------------------------------

def _link_type(name: str, table: str, columns: tuple[str, ...], owner: str, order: str) -> RecordType:
    """A row that links two others and has no id of its own: in scope through ``owner``, inserted unless present.

    ``owner`` joins the row (``x``) to what gives it a project (``o``).
    """

    def export(db: Database, scope: Scope) -> Iterator[dict[str, Any]]:
        in_projects, params = scope.projects("o.project_id")
        changed, since = scope.changed("x.created_at")
        yield from db.rows(f"SELECT {', '.join('x.' + column for column in columns)} FROM {table} x JOIN {owner} "
                           f"WHERE {in_projects} AND {changed} ORDER BY {order}", [*params, *since])

    def load(ctx: ImportContext, record: dict[str, Any]) -> str:
        ctx.db.execute(f"INSERT OR IGNORE INTO {table}({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                       tuple(record[column] for column in columns))
        return ADDED if ctx.db.changes() else UNCHANGED

    return RecordType(name, export, load)


# -- documents ----------------------------------------------------------------------------------------------------

_DOCUMENT_FIELDS = ("id", "title", "source_path", "source_url", "content_hash", "created_at", "updated_at", "metadata")


def _export_documents(db: Database, scope: Scope) -> Iterator[dict[str, Any]]:
    for record in project_rows(db, scope, "documents", _DOCUMENT_FIELDS, "updated_at", "t.created_at, t.id"):
        record["metadata"] = _json(record["metadata"], {})
        record["chunks"] = db.rows("SELECT ordinal, heading, content FROM chunks WHERE document_id = ? "
                                   "ORDER BY ordinal", (record["id"],))
        yield record


def _load_document(ctx: ImportContext, record: dict[str, Any]) -> str:
    row = {
        "id": record["id"], "project_id": ctx.project_id(record.get("project")), "title": ctx.clean(record["title"]),
        "source_path": record.get("source_path"), "source_url": record.get("source_url"),
        "content_hash": record["content_hash"], "created_at": record["created_at"],
        "updated_at": record["updated_at"], "metadata": _dump(record.get("metadata") or {}),
    }
    outcome = upsert(ctx, "documents", "id", row, "updated_at")
    if outcome != UNCHANGED:
        ctx.db.execute("DELETE FROM chunks WHERE document_id = ?", (row["id"],))
        for chunk in record.get("chunks") or []:
            ctx.db.execute("INSERT INTO chunks(document_id, ordinal, heading, content) VALUES (?, ?, ?, ?)",
                           (row["id"], chunk["ordinal"], ctx.clean(chunk.get("heading") or ""),
                            ctx.clean(chunk["content"])))
    return outcome


# -- docmem trees -------------------------------------------------------------------------------------------------

_NODE_FIELDS = ("id", "parent_id", "order_value", "content", "token_count", "context_type", "context_name",
                "context_value", "readonly", "hash", "created_at", "updated_at")


def _export_nodes(db: Database, scope: Scope) -> Iterator[dict[str, Any]]:
    for record in project_rows(db, scope, "docmem_nodes", _NODE_FIELDS, "updated_at", "t.created_at, t.id"):
        record["readonly"] = bool(record["readonly"])
        yield record


def _load_node(ctx: ImportContext, record: dict[str, Any]) -> str:
    row = {name: record.get(name) for name in _NODE_FIELDS}
    row["project_id"] = ctx.project_id(record.get("project"))
    content = row["content"] or ""
    row["content"] = ctx.clean(content)
    if row["content"] != content:
        row["hash"] = node_hash(row["parent_id"], (row["context_type"] or "", row["context_name"] or "",
                                                   row["context_value"] or ""), row["content"], row["order_value"])
    row["readonly"] = int(bool(row["readonly"]))
    for name in ("context_type", "context_name", "context_value"):
        row[name] = row[name] or ""
    return upsert(ctx, "docmem_nodes", "id", row, "updated_at")


def _export_placements(db: Database, scope: Scope) -> Iterator[dict[str, Any]]:
    yield from project_rows(db, scope, "docmem_placements", ("node_id", "parent_id", "order_value", "updated_at"),
                            "updated_at", "t.node_id")


def _load_placement(ctx: ImportContext, record: dict[str, Any]) -> str:
    row = {"node_id": record["node_id"], "project_id": ctx.project_id(record.get("project")),
           "parent_id": record["parent_id"], "order_value": record["order_value"], "updated_at": record["updated_at"]}
    return upsert(ctx, "docmem_placements", "node_id", row, "updated_at")


# -- memory files (Claude's memory tool) --------------------------------------------------------------------------

def _export_memory_files(db: Database, scope: Scope) -> Iterator[dict[str, Any]]:
    """Project files of the exported projects, and the user-wide files (``project`` null) every project shares."""
    in_projects, params = scope.projects("f.project_id")
    changed, since = scope.changed("f.updated_at")
    for row in db.rows(
        "SELECT p.path AS project, f.path, f.content, f.version, f.created_at, f.updated_at FROM memory_files f "
        f"LEFT JOIN projects p ON p.id = f.project_id WHERE ({in_projects} OR f.project_id IS NULL) AND {changed} "
        "ORDER BY f.project_id IS NOT NULL, p.path, f.path", [*params, *since],
    ):
        row["path"] = file_paths.display(row["project"] is None, row["path"])
        yield row


def _load_memory_file(ctx: ImportContext, record: dict[str, Any]) -> str:
    """A file is keyed by its scope and path; its path is checked like the tool's, its text redacted and bounded."""
    location = file_paths.parse_file(record.get("path"))
    if location.user != (record.get("project") is None):
        raise ValidationError(f"{location.path} and its project {record.get('project')!r} disagree on the scope")
    scope = None if location.user else ctx.project_id(record.get("project"))
    content = ctx.clean(record["content"])
    file_commands.check_size(location, content)
    existing = file_store.get(ctx.db, scope, location.rel)
    if existing is None:
        ctx.db.execute("INSERT INTO memory_files(project_id, path, content, version, created_at, updated_at) "
                       "VALUES (?, ?, ?, ?, ?, ?)", (scope, location.rel, content, int(record.get("version") or 1),
                                                     record["created_at"], record["updated_at"]))
        outcome = ADDED
    elif _version(record["updated_at"]) > _version(existing.updated_at) and content != existing.content:
        ctx.db.execute("UPDATE memory_files SET content = ?, version = version + 1, updated_at = ? WHERE id = ?",
                       (content, record["updated_at"], existing.id))
        outcome = UPDATED
    else:
        return UNCHANGED
    file_store.log(ctx.db, project_id=scope, session_id=None, source="import", command="import",
                   path=location.path, new_path=None, ok=True, detail=f"{outcome}, {len(content.encode())} bytes")
    return outcome


register(RecordType("project", _export_projects, _load_project))
register(RecordType("session", _export_sessions, _load_session))
register(RecordType("memory", _export_memories, _load_memory))
register(_link_type("relationship", "memory_relationships", ("source_id", "target_id", "relationship_type", "created_at"),
                    "memories o ON o.id = x.source_id",
                    "x.created_at, x.source_id, x.target_id, x.relationship_type"))
register(_link_type("session_memory", "session_memories", ("session_id", "memory_id", "usage_type", "created_at"),
                    "sessions o ON o.id = x.session_id", "x.session_id, x.memory_id, x.usage_type"))
register(RecordType("document", _export_documents, _load_document))
register(RecordType("docmem_node", _export_nodes, _load_node))
register(RecordType("docmem_placement", _export_placements, _load_placement))
register(RecordType("memory_file", _export_memory_files, _load_memory_file))
