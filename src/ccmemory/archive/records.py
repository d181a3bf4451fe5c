"""One :class:`RecordType` per kind of row: how it is exported and how it is imported.

A record is a JSON object: ``"type"``, then the row's fields. References use
stable keys, a project by its path and everything else by its id, so a file
moves between machines and stores. Integer row ids and derived data (FTS,
embeddings, the ``needs_embedding`` flag) are never exported: import rebuilds
them, and the imported rows are embedded later like any new row. Every type
exports its rows in a fixed order, so the same store always gives the same file.

Import is idempotent by id and keeps the original times: an absent row is
added as it was; a present one is updated only when the record is newer (its
``updated_at``, or a session's end); otherwise it is left alone. Every text
field is redacted on the way in (strings inside tags, files and metadata too).

Import never changes or moves a row of another project. A record whose id is
already taken here by another project's row (a session, memory, document or
docmem node) is added under a new id, derived from its own id and its project's
path (so importing the same file again finds it and stays idempotent), and the
records of the same file that refer to it follow it; its outcome is
:data:`ADDED_NEW_ID`. Links (relationships, session usage, placements) join only
rows of one project that this import writes to; others are refused and reported.

Memory files are keyed by scope and path, not by id: ``project`` is null for the
user-wide files every project shares, and those go with every export.

Another module adds a kind of record with :func:`register`. Export writes the
types in registration order and import reads them in file order, so a type
whose rows refer to another's (a memory to its session) registers after it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator

from ..db import Database
from ..docmem import virtual
from ..docmem.nodes import node_hash
from ..errors import ValidationError
from ..files import commands as file_commands, paths as file_paths, store as file_store
from ..redaction import redact, redact_fields

ADDED, UPDATED, UNCHANGED = "added", "updated", "unchanged"
#: A record added under a new id because another project here holds its own.
ADDED_NEW_ID = "added under a new id"
#: Longest id an import accepts (memory and document ids are 36 characters, docmem ids at most 64).
MAX_ID_CHARS = 200

#: The table holding each kind of id a record may carry or refer to.
_ID_TABLES = {"session": "sessions", "memory": "memories", "document": "documents", "docmem_node": "docmem_nodes"}
#: The kind of id inside a virtual docmem node id (``memory:<id>``, ``section:<document id>:<ordinal>``).
_VIRTUAL_KINDS = {"session": "session", "memory": "memory", "doc": "document", "section": "document",
                  "chunk": "document"}


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
    """What loading a record needs: the database, the project mapping, the redaction, the ids given anew."""

    db: Database
    redact: Callable[[str], str]
    into_project: int | None = None
    redacted: int = 0
    #: (kind, id in the file) -> the new id it got here, for every record given a new id.
    new_ids: dict[tuple[str, str], str] = field(default_factory=dict)
    #: (kind, id in the file) -> new id, for the records stored under a new id (what the report lists).
    renamed: dict[tuple[str, str], str] = field(default_factory=dict)
    #: The projects this import writes to: the one it goes into, or those the file names.
    written: set[int] = field(default_factory=set)
    _projects: dict[str, int] = field(default_factory=dict)
    _local: dict[tuple[str, str, int], str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.into_project is not None:
            self.written.add(self.into_project)

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
            self.written.add(found)
        return self._projects[path]

    def clean(self, value: Any) -> Any:
        """Text, or a JSON value's strings, with private spans and secrets redacted (counted); others unchanged."""
        if isinstance(value, str):
            cleaned = self.redact(value)
        elif isinstance(value, (dict, list)):
            cleaned = redact_fields(value)
        else:
            return value
        if cleaned != value:
            self.redacted += 1
        return cleaned

    def clean_row(self, row: dict[str, Any], keep: tuple[str, ...]) -> dict[str, Any]:
        """``row`` with every text column but those in ``keep`` (ids, hashes, JSON already cleaned) redacted."""
        for name, value in row.items():
            if name not in keep and isinstance(value, str):
                row[name] = self.clean(value)
        return row

    def local_id(self, kind: str, record_id: Any, project_id: int) -> str:
        """The id a record of ``kind`` gets in ``project_id``: its own, unless another project's row holds it.

        Then it is a new id derived from the kind, the id and the project's path, so the same
        record imported again gets the same one, and every reference to it in the file follows it.
        """
        record_id = check_id(record_id, kind)
        known = self._local.get((kind, record_id, project_id))
        if known is not None:
            return known
        table = _ID_TABLES[kind]
        candidate, attempt = record_id, 0
        while True:
            owner = self.db.scalar(f"SELECT project_id FROM {table} WHERE id = ?", (candidate,))
            if owner is None or owner == project_id:
                break
            attempt += 1
            candidate = _derived_id(kind, record_id, self._project_path(project_id), attempt)
        if candidate != record_id:
            self.new_ids[(kind, record_id)] = candidate
        self._local[(kind, record_id, project_id)] = candidate
        return candidate

    def reference(self, kind: str, record_id: Any) -> str:
        """The local id a link in the file means: the record's new id if it got one, else its own."""
        record_id = check_id(record_id, kind)
        if self.into_project is not None:
            return self.local_id(kind, record_id, self.into_project)
        return self.new_ids.get((kind, record_id), record_id)

    def node_reference(self, node_id: Any, project_id: int) -> str:
        """A docmem node id (stored or virtual, like ``memory:<id>``) as it is known in ``project_id``."""
        node_id = check_id(node_id, "docmem node")
        if ":" not in node_id:
            return self.local_id("docmem_node", node_id, project_id)
        prefix, _, rest = node_id.partition(":")
        kind = _VIRTUAL_KINDS.get(prefix)
        if kind is None:
            raise ValidationError(f"{node_id!r} is no docmem node id")
        if prefix in ("section", "chunk"):
            target, separator, ordinal = rest.rpartition(":")
            if not separator or not ordinal.isdigit():
                raise ValidationError(f"{node_id!r} is no docmem node id")
            return f"{prefix}:{self.local_id(kind, target, project_id)}:{ordinal}"
        return f"{prefix}:{self.local_id(kind, rest, project_id)}"

    def owner(self, kind: str, record_id: str) -> int | None:
        """The project holding a row of ``kind`` with this id, or None when there is none."""
        return self.db.scalar(f"SELECT project_id FROM {_ID_TABLES[kind]} WHERE id = ?", (record_id,))

    def outcome(self, kind: str, record_id: Any, outcome: str) -> str:
        """:data:`ADDED_NEW_ID` for a record added under a new id, else ``outcome``."""
        if not isinstance(record_id, str) or (kind, record_id) not in self.new_ids:
            return outcome
        self.renamed[(kind, record_id)] = self.new_ids[(kind, record_id)]
        return ADDED_NEW_ID if outcome == ADDED else outcome

    def _project_path(self, project_id: int) -> str:
        return self.db.scalar("SELECT path FROM projects WHERE id = ?", (project_id,)) or str(project_id)


def check_id(value: Any, what: str) -> str:
    """An id from the file: non-empty text of at most :data:`MAX_ID_CHARS`, with nothing to redact in it."""
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_ID_CHARS:
        raise ValidationError(f"its {what.replace('_', ' ')} id {str(value)[:80]!r} is not an id")
    if redact(value) != value:
        raise ValidationError(f"its {what.replace('_', ' ')} id would be redacted (it looks like a secret)")
    return value


def _derived_id(kind: str, record_id: str, project_path: str, attempt: int) -> str:
    """A new id for ``record_id`` in a project: stable for the same inputs, shaped like the ids of its kind."""
    digest = hashlib.sha256("\0".join((kind, project_path, record_id, str(attempt)))
                            .encode("utf-8", "surrogatepass")).hexdigest()
    if kind == "docmem_node":  # readable: a named root stays recognizable
        return f"{record_id[:50]}-{digest[:8]}"
    variant = "89ab"[int(digest[16], 16) % 4]
    return f"{digest[:8]}-{digest[8:12]}-4{digest[13:16]}-{variant}{digest[17:20]}-{digest[20:32]}"


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
    fire the triggers that drop a row's embedding. ``row`` has a ``project_id``:
    a row of another project under the same key is never changed (ValidationError).
    """
    existing = ctx.db.one(f"SELECT {', '.join(row)} FROM {table} WHERE {key} = ?", (row[key],))
    if existing is not None and existing["project_id"] != row["project_id"]:
        raise ValidationError(f"its id {row[key]!r} belongs to another project here")
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
        ctx.project_id(path)
        return UNCHANGED
    if ctx.clean(path) != path:
        raise ValidationError("its path would be redacted (it looks like a secret)")
    ctx.db.execute("INSERT INTO projects(path, name, created_at) VALUES (?, ?, ?)",
                   (path, ctx.clean(record.get("name") or path), ctx.clean(record["created_at"])))
    ctx.project_id(path)
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
    project = ctx.project_id(record.get("project"))
    row = {
        "id": ctx.local_id("session", record["id"], project), "project_id": project,
        "started_at": record["started_at"], "ended_at": record.get("ended_at"),
        "summary": record.get("summary"), "transcript_path": record.get("transcript_path"),
        "metadata": _dump(ctx.clean(record.get("metadata") or {})),
    }
    ctx.clean_row(row, ("id", "metadata"))
    return ctx.outcome("session", record["id"], upsert(ctx, "sessions", "id", row, "ended_at"))


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
    project = row["project_id"] = ctx.project_id(record.get("project"))
    row["id"] = ctx.local_id("memory", record.get("id"), project)
    for name, shape in (("tags", list), ("files", list), ("metadata", dict)):
        value = row[name] or shape()
        if not isinstance(value, shape) or (shape is list and not all(isinstance(v, str) for v in value)):
            raise ValidationError(f"its {name} must be {'a list of strings' if shape is list else 'an object'}")
        row[name] = _dump(ctx.clean(value))
    row["is_deleted"] = int(bool(row["is_deleted"]))
    row["reference_count"] = row["reference_count"] or 0
    row["source"] = row["source"] or "import"
    if row["session_id"]:
        row["session_id"] = ctx.local_id("session", row["session_id"], project)
        if not ctx.db.scalar("SELECT 1 FROM sessions WHERE id = ? AND project_id = ?", (row["session_id"], project)):
            row["session_id"] = row["dedupe_key"] = None
    ctx.clean_row(row, ("id", "session_id", "tags", "files", "metadata"))
    return ctx.outcome("memory", record.get("id"), upsert(ctx, "memories", "id", row, "updated_at"))


# -- relationships and session usage (links) ------------------------------------------------------------------------------

def _link_type(name: str, table: str, columns: tuple[str, ...], owner: str, order: str,
               ends: tuple[tuple[str, str], ...]) -> RecordType:
    """A row that links two others and has no id of its own: in scope through ``owner``, inserted unless present.

    ``owner`` joins the row (``x``) to what gives it a project (``o``). ``ends`` names the
    columns holding the linked ids and their kinds: both must be rows here of one project
    this import writes to (ids given anew in this import are followed).
    """

    def export(db: Database, scope: Scope) -> Iterator[dict[str, Any]]:
        in_projects, params = scope.projects("o.project_id")
        changed, since = scope.changed("x.created_at")
        yield from db.rows(f"SELECT {', '.join('x.' + column for column in columns)} FROM {table} x JOIN {owner} "
                           f"WHERE {in_projects} AND {changed} ORDER BY {order}", [*params, *since])

    def load(ctx: ImportContext, record: dict[str, Any]) -> str:
        row = {column: record[column] for column in columns}
        owners = set()
        for column, kind in ends:
            row[column] = ctx.reference(kind, row[column])
            found = ctx.owner(kind, row[column])
            if found is None:
                raise ValidationError(f"its {kind} {row[column]!r} is not in the store")
            owners.add(found)
        if len(owners) != 1 or not owners <= ctx.written:
            raise ValidationError("it links rows of another project than the ones this import writes to")
        ctx.clean_row(row, tuple(column for column, _ in ends))
        ctx.db.execute(f"INSERT OR IGNORE INTO {table}({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                       tuple(row.values()))
        return ADDED if ctx.db.changes() else UNCHANGED

    return RecordType(name, export, load)


_USAGE_LINK = _link_type("session_memory", "session_memories", ("session_id", "memory_id", "usage_type", "created_at"),
                         "sessions o ON o.id = x.session_id", "x.session_id, x.memory_id, x.usage_type",
                         (("session_id", "session"), ("memory_id", "memory")))


def _export_session_memories(db: Database, scope: Scope) -> Iterator[dict[str, Any]]:
    """Session usage links; a memory's 'created' link is derived from its ``session_id`` (no row holds it).

    The derived link carries the memory's ``created_at`` and goes with the memory (``--since``
    applies to its ``updated_at``), so archives keep the shape they always had.
    """
    in_projects, params = scope.projects("o.project_id")
    stored_changed, stored_since = scope.changed("x.created_at")
    derived_changed, derived_since = scope.changed("m.updated_at")
    yield from db.rows(
        "SELECT session_id, memory_id, usage_type, created_at FROM ("
        "SELECT x.session_id, x.memory_id, x.usage_type, x.created_at FROM session_memories x "
        f"JOIN sessions o ON o.id = x.session_id WHERE {in_projects} AND {stored_changed} "
        "AND NOT (x.usage_type = 'created' AND EXISTS (SELECT 1 FROM memories d "
        "WHERE d.id = x.memory_id AND d.session_id = x.session_id)) "
        "UNION ALL SELECT m.session_id, m.id, 'created', m.created_at FROM memories m "
        f"JOIN sessions o ON o.id = m.session_id WHERE {in_projects} AND {derived_changed}"
        ") ORDER BY session_id, memory_id, usage_type",
        [*params, *stored_since, *params, *derived_since],
    )


def _load_session_memory(ctx: ImportContext, record: dict[str, Any]) -> str:
    """A usage link; 'created' in the memory's own session is already said by the memory's ``session_id``."""
    if record.get("usage_type") == "created":
        session = ctx.reference("session", record.get("session_id"))
        memory = ctx.reference("memory", record.get("memory_id"))
        if ctx.db.scalar("SELECT 1 FROM memories WHERE id = ? AND session_id = ?", (memory, session)):
            return UNCHANGED
    return _USAGE_LINK.load(ctx, record)


# -- documents ----------------------------------------------------------------------------------------------------

_DOCUMENT_FIELDS = ("id", "title", "source_path", "source_url", "content_hash", "created_at", "updated_at", "metadata")


def _export_documents(db: Database, scope: Scope) -> Iterator[dict[str, Any]]:
    for record in project_rows(db, scope, "documents", _DOCUMENT_FIELDS, "updated_at", "t.created_at, t.id"):
        record["metadata"] = _json(record["metadata"], {})
        record["chunks"] = db.rows("SELECT ordinal, heading, content FROM chunks WHERE document_id = ? "
                                   "ORDER BY ordinal", (record["id"],))
        yield record


def _load_document(ctx: ImportContext, record: dict[str, Any]) -> str:
    project = ctx.project_id(record.get("project"))
    row = {
        "id": ctx.local_id("document", record["id"], project), "project_id": project, "title": record["title"],
        "source_path": record.get("source_path"), "source_url": record.get("source_url"),
        "content_hash": record["content_hash"], "created_at": record["created_at"],
        "updated_at": record["updated_at"], "metadata": _dump(ctx.clean(record.get("metadata") or {})),
    }
    ctx.clean_row(row, ("id", "content_hash", "metadata"))
    outcome = ctx.outcome("document", record["id"], upsert(ctx, "documents", "id", row, "updated_at"))
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
    project = row["project_id"] = ctx.project_id(record.get("project"))
    if ":" in str(row["id"]):
        raise ValidationError(f"{row['id']!r} is a virtual node's id; only docmem nodes are imported")
    row["id"] = ctx.local_id("docmem_node", row["id"], project)
    if row["parent_id"] is not None:
        row["parent_id"] = ctx.node_reference(row["parent_id"], project)
    row["content"] = row["content"] or ""
    row["readonly"] = int(bool(row["readonly"]))
    for name in ("context_type", "context_name", "context_value"):
        row[name] = row[name] or ""
    ctx.clean_row(row, ("id", "parent_id", "hash"))
    hashed = ("parent_id", "context_type", "context_name", "context_value", "content")
    as_exported = [record.get("parent_id"), *(record.get(name) or "" for name in hashed[1:])]
    if not row["hash"] or [row[name] for name in hashed] != as_exported:  # a new parent id, or text redacted
        row["hash"] = node_hash(row["parent_id"], (row["context_type"], row["context_name"], row["context_value"]),
                                row["content"], row["order_value"])
    return ctx.outcome("docmem_node", record.get("id"), upsert(ctx, "docmem_nodes", "id", row, "updated_at"))


def _export_placements(db: Database, scope: Scope) -> Iterator[dict[str, Any]]:
    yield from project_rows(db, scope, "docmem_placements", ("node_id", "parent_id", "order_value", "updated_at"),
                            "updated_at", "t.node_id")


def _load_placement(ctx: ImportContext, record: dict[str, Any]) -> str:
    """A summary's placement of a virtual node: both must be this project's (ids given anew followed)."""
    project = ctx.project_id(record.get("project"))
    node_id = ctx.node_reference(record["node_id"], project)
    if not virtual.is_virtual(node_id) or virtual.get(ctx.db, project, node_id) is None:
        raise ValidationError(f"its node {record['node_id']!r} is not captured memory of this project")
    row = {"node_id": node_id, "project_id": project, "parent_id": ctx.node_reference(record["parent_id"], project),
           "order_value": record["order_value"], "updated_at": record["updated_at"]}
    ctx.clean_row(row, ("node_id", "parent_id"))
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
    if ctx.clean(location.path) != location.path:
        raise ValidationError("its path would be redacted (it looks like a secret)")
    if location.user != (record.get("project") is None):
        raise ValidationError(f"{location.path} and its project {record.get('project')!r} disagree on the scope")
    scope = None if location.user else ctx.project_id(record.get("project"))
    content = ctx.clean(record["content"])
    file_commands.check_size(location, content)
    existing = file_store.get(ctx.db, scope, location.rel)
    if existing is None:
        ctx.db.execute("INSERT INTO memory_files(project_id, path, content, version, created_at, updated_at) "
                       "VALUES (?, ?, ?, ?, ?, ?)", (scope, location.rel, content, int(record.get("version") or 1),
                                                     ctx.clean(record["created_at"]), ctx.clean(record["updated_at"])))
        outcome = ADDED
    elif _version(record["updated_at"]) > _version(existing.updated_at) and content != existing.content:
        ctx.db.execute("UPDATE memory_files SET content = ?, version = version + 1, updated_at = ? WHERE id = ?",
                       (content, ctx.clean(record["updated_at"]), existing.id))
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
                    "x.created_at, x.source_id, x.target_id, x.relationship_type",
                    (("source_id", "memory"), ("target_id", "memory"))))
register(RecordType("session_memory", _export_session_memories, _load_session_memory))
register(RecordType("document", _export_documents, _load_document))
register(RecordType("docmem_node", _export_nodes, _load_node))
register(RecordType("docmem_placement", _export_placements, _load_placement))
register(RecordType("memory_file", _export_memory_files, _load_memory_file))
