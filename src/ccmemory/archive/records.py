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

The file is untrusted (a teammate's commit, a download, a file a cloned repository
ships), so import is confined and every field is checked (:mod:`.fields`):

* Where records go is the user's choice, never the file's: into one project
  (``into_project``: every record lands there, whatever project it names), or, for a
  restore of one's own backup (``all_projects``), into the projects it names that are
  projects on this machine (an existing directory that is its own project root);
  records naming any other path are skipped and reported (:class:`Skipped`).
* User-wide memory files (``project`` null, shown to every project) are written only
  with ``user_files``, and never over a user-wide file already here with other text
  (that one is kept, and the record is reported as a conflict). So are user-wide memories
  (``"scope": "user"``, :mod:`ccmemory.scopes`): without ``user_files`` such a record is
  skipped, and no record changes a user-wide memory already here, nor links to one (a
  relationship or a session's usage); with it, a project's memory still never supersedes one.
* Values are checked as the tools check them (types, enums, lengths, finite numbers
  in range, times no later than now plus a small skew), the memory-file limits hold
  (size, :data:`~ccmemory.files.commands.MAX_FILES_PER_SCOPE` per scope), and a
  session's ``transcript_path`` (a local file of the machine that wrote it) is neither
  exported nor imported.

Import never changes or moves a row of another project. A record whose id is
already taken here by another project's row (a session, memory, document or
docmem node) is added under a new id, derived from its own id and its project's
path (so importing the same file again finds it and stays idempotent), and the
records of the same file that refer to it follow it; its outcome is
:data:`ADDED_NEW_ID`. Links (relationships, session usage, placements) join only
rows of one project that this import writes to; others are refused and reported.

Memory files are keyed by scope and path, not by id: ``project`` is null for the
user-wide files every project shares; they go with an export of every project, and
with a ``--project`` export only when asked (:attr:`Scope.user_files`). A user-wide
memory is exported with the project it was written in (its ``project``) and ``"scope":
"user"`` (a project's memory carries no ``scope``); a ``--project`` export leaves it out unless asked.

Another module adds a kind of record with :func:`register`. Export writes the
types in registration order and import reads them in file order, so a type
whose rows refer to another's (a memory to its session) registers after it.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator

from .. import memories, projects
from ..db import Database
from ..docmem import virtual
from ..docmem.nodes import MAX_NODE_CHARS, check_context, node_hash, token_count
from ..documents import MAX_DOCUMENT_BYTES
from ..errors import ValidationError
from ..files import commands as file_commands, paths as file_paths, store as file_store
from ..migrations import observation_fields_from_text
from ..record_ids import MAX_CHARS as MAX_ID_CHARS, is_record_id
from ..vocabulary import IMPORT_SOURCE, MEMORY_SCOPES, SECTORS, TIERS
from ..redaction import redact, redact_fields
from ..vocabulary import CAPTURE_SOURCE
from . import fields

ADDED, UPDATED, UNCHANGED = "added", "updated", "unchanged"
#: A record added under a new id because another project here holds its own.
ADDED_NEW_ID = "added under a new id"
#: A session no record of the file holds, added because its memories name it.
ADDED_FOR_MEMORIES = "added for the memories naming it"
#: The table holding each kind of id a record may carry or refer to.
_ID_TABLES = {"session": "sessions", "memory": "memories", "document": "documents", "docmem_node": "docmem_nodes"}
#: The kind of id inside a virtual docmem node id (``memory:<id>``, ``section:<document id>:<ordinal>``).
_VIRTUAL_KINDS = {"session": "session", "memory": "memory", "doc": "document", "section": "document",
                  "chunk": "document"}
RELATIONSHIP_TYPES = ("SUPERSEDES", "RELATES_TO", "CONTRADICTS", "DERIVED_FROM")
#: A memory's ``source`` names the writer (capture, summary, knowledge, mcp, …): a short lowercase word.
_MAX_SOURCE_CHARS = 32
#: Largest sibling order a docmem node or placement may carry (real ones stay near the sibling count).
_MAX_ORDER = 1e12
#: Most chunks one imported document may carry.
_MAX_CHUNKS = 100_000


class Skipped(ValidationError):
    """A record left out by the import's confinement (not the file's fault): reported, not a failure."""


@dataclass(frozen=True)
class Scope:
    """What an export covers: some projects (None: all), rows changed since a time (None: all), and
    whether the user-wide memory files go along (None: only with every project)."""

    project_ids: tuple[int, ...] | None = None
    since: str | None = None
    user_files: bool | None = None

    @property
    def with_user_files(self) -> bool:
        return self.project_ids is None if self.user_files is None else self.user_files

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
    """What loading a record needs: the database, where records may go, the redaction, the ids given anew.

    ``into_project`` puts every record into that project; else ``all_projects`` lets records go to
    the projects they name that are projects on this machine; with neither, no project record loads.
    ``user_files`` lets user-wide memory files in (never over a different one already here).
    """

    db: Database
    redact: Callable[[str], str]
    into_project: int | None = None
    all_projects: bool = False
    user_files: bool = False
    redacted: int = 0
    #: The latest time a record may carry (now plus the allowed clock skew).
    latest: str = field(default_factory=fields.latest_time)
    #: Projects where this import added or changed something, and the user-wide files and memories it wrote.
    touched: set[int] = field(default_factory=set)
    user_files_written: list[str] = field(default_factory=list)
    user_memories_written: list[str] = field(default_factory=list)
    #: (kind, id in the file) -> the new id it got here, for every record given a new id.
    new_ids: dict[tuple[str, str], str] = field(default_factory=dict)
    #: (kind, id in the file) -> new id, for the records stored under a new id (what the report lists).
    renamed: dict[tuple[str, str], str] = field(default_factory=dict)
    #: The projects this import writes to: the one it goes into, or those the file names.
    written: set[int] = field(default_factory=set)
    #: Sessions this import added because memories name them (:func:`_memory_session`), by local id.
    sessions_for_memories: set[str] = field(default_factory=set)
    _projects: dict[str, int] = field(default_factory=dict)
    _refused: dict[str, Skipped] = field(default_factory=dict)
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
            self.check_project_path(path)
            found = projects.project_id(self.db, path, create=False)
            if found is None:
                raise ValidationError(f"its project {path!r} has no project record before it")
            self._projects[path] = found
            self.written.add(found)
        return self._projects[path]

    def known_identity(self, path: str, key: str) -> bool:
        """Map the file's project ``path`` to the project of this machine with the same portable identity, if any.

        The same repository has other paths on other machines: a project already known here by its
        identity (:mod:`ccmemory.identity`) exists on this machine, so ``all_projects`` may write it.
        """
        found = self.db.scalar("SELECT id FROM projects WHERE identity = ?", (key,))
        if found is None:
            return False
        self._projects[path] = found
        self.written.add(found)
        return True

    def check_project_path(self, path: str) -> None:
        """Refuse (:class:`Skipped`) a project path the user did not let this import write to.

        Only with ``all_projects``, and only a project of this machine: an absolute path that
        is a directory, its own real path and its own project root (what ccmemory would call
        the project of a session started there). A file cannot plant memories for a path that
        does not exist yet, or for a folder inside another project.
        """
        refused = self._refused.get(path)
        if refused is not None:
            raise refused
        try:
            self._check_project_path(path)
        except Skipped as exc:
            self._refused[path] = exc
            raise

    def _check_project_path(self, path: str) -> None:
        if not self.all_projects:
            raise Skipped(f"it names the project {path[:200]!r}; pass --into-project DIR to put it into a project, "
                          "or --all-projects to restore the projects the file names")
        if len(path) > fields.MAX_SHORT_CHARS or "\0" in path or not os.path.isabs(path) \
                or not os.path.isdir(path) or os.path.realpath(path) != path or projects.project_root(path) != path:
            raise Skipped(f"its project {path[:200]!r} is not a project directory on this machine; nothing was "
                          "written for it (--into-project DIR puts records into a project of your choice)")

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
    """An id from the file: an id's characters (:func:`record_ids.is_record_id`), with nothing to redact in it."""
    if not is_record_id(value):
        raise ValidationError(f"its {what.replace('_', ' ')} id {str(value)[:80]!r} is not an id (letters, digits "
                              "and . _ : @ + = / - only)")
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
        ctx.touched.add(row["project_id"])
        return ADDED
    if version is None or _version(row[version]) <= _version(existing[version]):
        return UNCHANGED
    changed = {column: value for column, value in row.items() if existing[column] != value}
    if not changed:
        return UNCHANGED
    ctx.db.execute(f"UPDATE {table} SET {', '.join(f'{c} = ?' for c in changed)} WHERE {key} = ?",
                   (*changed.values(), row[key]))
    ctx.touched.add(row["project_id"])
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
    for row in db.rows(f"SELECT path, name, created_at, identity FROM projects WHERE {where} ORDER BY path", params):
        if row["identity"] is None:
            del row["identity"]
        yield row


def _load_project(ctx: ImportContext, record: dict[str, Any]) -> str:
    if ctx.into_project is not None:
        return UNCHANGED
    path = fields.text(record, "path", blank=False)
    key = fields.text(record, "identity", required=False)
    if key and ctx.all_projects and ctx.known_identity(path, key):
        return UNCHANGED
    ctx.check_project_path(path)
    if projects.project_id(ctx.db, path, create=False) is not None:
        ctx.project_id(path)
        return UNCHANGED
    if ctx.clean(path) != path:
        raise ValidationError("its path would be redacted (it looks like a secret)")
    name = fields.text(record, "name", required=False) or os.path.basename(path) or path
    created = fields.time(record, "created_at", ctx.latest)
    project = projects.project_id(ctx.db, path)
    ctx.db.execute("UPDATE projects SET name = ?, created_at = ? WHERE id = ?", (ctx.clean(name), created, project))
    ctx.touched.add(ctx.project_id(path))
    return ADDED


# -- sessions -----------------------------------------------------------------------------------------------------

def _export_sessions(db: Database, scope: Scope) -> Iterator[dict[str, Any]]:
    in_projects, params = scope.projects("s.project_id")
    changed, since = scope.changed("COALESCE(s.ended_at, s.started_at)")
    if scope.since is not None:  # sessions of the memories exported, so their links hold
        changed = f"({changed} OR s.id IN (SELECT session_id FROM memories WHERE updated_at >= ?))"
        since = [*since, scope.since]
    for row in db.rows(
        "SELECT s.id, p.path AS project, s.started_at, s.ended_at, s.summary, s.metadata "
        f"FROM sessions s JOIN projects p ON p.id = s.project_id WHERE {in_projects} AND {changed} "
        "ORDER BY s.started_at, s.id", [*params, *since],
    ):
        row["metadata"] = _json(row["metadata"], {})
        yield row


def _load_session(ctx: ImportContext, record: dict[str, Any]) -> str:
    """A session; its ``transcript_path`` (a file of the machine that wrote it) is never taken from a file."""
    project = ctx.project_id(record.get("project"))
    row = {
        "id": ctx.local_id("session", record.get("id"), project), "project_id": project,
        "started_at": fields.time(record, "started_at", ctx.latest),
        "ended_at": fields.time(record, "ended_at", ctx.latest, required=False),
        "summary": fields.text(record, "summary", max_chars=fields.MAX_SUMMARY_CHARS, required=False),
        "metadata": _dump(ctx.clean(fields.json_object(record, "metadata"))),
    }
    ctx.clean_row(row, ("id", "metadata"))
    return ctx.outcome("session", record.get("id"), upsert(ctx, "sessions", "id", row, "ended_at"))


# -- memories -----------------------------------------------------------------------------------------------------

_MEMORY_FIELDS = ("id", "session_id", "content", "sector", "tier", "category", "tags", "files", "importance",
                  "salience", "reference_count", "last_accessed", "created_at", "updated_at", "valid_until",
                  "is_deleted", "deleted_at", "source", "dedupe_key", "metadata", "scope")


def _export_memories(db: Database, scope: Scope) -> Iterator[dict[str, Any]]:
    for record in project_rows(db, scope, "memories", _MEMORY_FIELDS, "updated_at", "t.seq"):
        if record["scope"] == "project":
            del record["scope"]  # the default: a project's memory is written as before scopes
        elif not scope.with_user_files:
            continue
        record["tags"] = _json(record["tags"], [])
        record["files"] = _json(record["files"], [])
        record["metadata"] = _json(record["metadata"], {})
        record["is_deleted"] = bool(record["is_deleted"])
        yield record


def _load_memory(ctx: ImportContext, record: dict[str, Any]) -> str:
    """A memory, every field checked as :func:`ccmemory.memories.add` checks it (salience at most
    :data:`~ccmemory.memories.MAX_SALIENCE`, content at most :data:`~ccmemory.memories.MAX_CONTENT_CHARS`)."""
    project = ctx.project_id(record.get("project"))
    memory_scope = fields.choice(record, "scope", MEMORY_SCOPES, default="project")
    memory_id = ctx.local_id("memory", record.get("id"), project)
    if (memory_scope == "user" or ctx.db.scalar("SELECT 1 FROM memories WHERE id = ? AND scope = 'user'",
                                                (memory_id,))) and not ctx.user_files:
        raise Skipped("it is a user-wide memory, shown to every project; not imported "
                      "(pass --include-user-files to import user-wide memories)")
    content = fields.text(record, "content", max_chars=memories.MAX_CONTENT_CHARS, blank=False)
    content = ctx.clean(content)[:memories.MAX_CONTENT_CHARS]
    if not content.strip():
        raise ValidationError("nothing of its content is left once private spans are removed")
    category = fields.text(record, "category", max_chars=100, required=False)
    importance = fields.number(record, "importance", 0.0, 1.0, default=memories.DEFAULT_SALIENCE)
    source = fields.text(record, "source", max_chars=_MAX_SOURCE_CHARS, required=False) or IMPORT_SOURCE
    if not source.replace("_", "").replace("-", "").isalnum() or not source.isascii() or source != source.lower():
        raise ValidationError(f"its source {source!r} is not a lowercase word")
    row = {
        "id": memory_id, "project_id": project,
        "session_id": record.get("session_id") or None, "content": content,
        "sector": fields.choice(record, "sector", SECTORS, default=memories.classify_sector(content)),
        "tier": "project" if memory_scope == "user" else fields.choice(record, "tier", TIERS, default="project"),
        "category": memories.normalize_category(category),
        "tags": _dump(ctx.clean(fields.strings(record, "tags"))),
        "files": _dump(ctx.clean(fields.strings(record, "files"))),
        "importance": importance,
        "salience": min(fields.number(record, "salience", 0.0, 1.0, default=importance), memories.MAX_SALIENCE),
        "reference_count": fields.whole(record, "reference_count", default=0),
        "last_accessed": fields.time(record, "last_accessed", ctx.latest, required=False),
        "created_at": fields.time(record, "created_at", ctx.latest),
        "updated_at": fields.time(record, "updated_at", ctx.latest),
        "valid_until": fields.time(record, "valid_until", ctx.latest, required=False),
        "is_deleted": int(fields.flag(record, "is_deleted")),
        "deleted_at": fields.time(record, "deleted_at", ctx.latest, required=False),
        "source": source,
        "dedupe_key": fields.text(record, "dedupe_key", max_chars=MAX_ID_CHARS, required=False),
        "metadata": _dump(ctx.clean(fields.json_object(record, "metadata"))),
        "scope": memory_scope,
    }
    if row["session_id"] is not None:
        row["session_id"] = ctx.local_id("session", row["session_id"], project)
    if source == CAPTURE_SOURCE:  # an export written before schema 12 lacks the observation's metadata
        row["metadata"] = _dump(observation_fields_from_text(content, row["category"], row["tags"],
                                                             json.loads(row["metadata"])))
    ctx.clean_row(row, ("id", "session_id", "content", "tags", "files", "metadata", "scope"))
    opened = row["session_id"] is not None and _memory_session(ctx, row["session_id"], project, row["created_at"])
    outcome = upsert(ctx, "memories", "id", row, "updated_at")
    if opened and outcome == UNCHANGED:  # the copy here (imported before sessions were added) stays as it is
        ctx.db.execute("DELETE FROM sessions WHERE id = ?", (row["session_id"],))
    elif opened:
        ctx.sessions_for_memories.add(row["session_id"])
    if memory_scope == "user" and outcome != UNCHANGED:
        ctx.user_memories_written.append(memory_id)
    return ctx.outcome("memory", record.get("id"), outcome)


# -- relationships and session usage (links) ------------------------------------------------------------------------------

def _link_type(name: str, table: str, columns: tuple[str, ...], owner: str, order: str,
               ends: tuple[tuple[str, str], ...], typed: tuple[str, tuple[str, ...]]) -> RecordType:
    """A row that links two others and has no id of its own: in scope through ``owner``, inserted unless present.

    ``owner`` joins the row (``x``) to what gives it a project (``o``). ``ends`` names the
    columns holding the linked ids and their kinds: both must be rows here of one project
    this import writes to (ids given anew in this import are followed), and a user-wide
    memory at either end needs ``user_files`` (:func:`_check_user_wide_ends`). ``typed`` names
    the column holding the link's type and the types allowed.
    """

    def export(db: Database, scope: Scope) -> Iterator[dict[str, Any]]:
        in_projects, params = scope.projects("o.project_id")
        changed, since = scope.changed("x.created_at")
        yield from db.rows(f"SELECT {', '.join('x.' + column for column in columns)} FROM {table} x JOIN {owner} "
                           f"WHERE {in_projects} AND {changed} ORDER BY {order}", [*params, *since])

    def load(ctx: ImportContext, record: dict[str, Any]) -> str:
        row: dict[str, Any] = {column: record.get(column) for column in columns}
        row[typed[0]] = fields.choice(record, typed[0], typed[1])
        row["created_at"] = fields.time(record, "created_at", ctx.latest)
        owners = set()
        for column, kind in ends:
            row[column] = ctx.reference(kind, row[column])
            found = ctx.owner(kind, row[column])
            if found is None:
                raise ValidationError(f"its {kind} {row[column]!r} is not in the store")
            owners.add(found)
        if len(owners) != 1 or not owners <= ctx.written:
            raise ValidationError("it links rows of another project than the ones this import writes to")
        _check_user_wide_ends(ctx, row, ends)
        ctx.clean_row(row, tuple(column for column, _ in ends))
        ctx.db.execute(f"INSERT OR IGNORE INTO {table}({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                       tuple(row.values()))
        if not ctx.db.changes():
            return UNCHANGED
        ctx.touched.update(owners)
        return ADDED

    return RecordType(name, export, load)


def _check_user_wide_ends(ctx: ImportContext, row: dict[str, Any], ends: tuple[tuple[str, str], ...]) -> None:
    """Refuse (:class:`Skipped`) a link that would change what every project sees of a user-wide memory.

    A user-wide memory belongs to the project it was written in, so a link to it passes the project
    check; yet a SUPERSEDES link hides it from every project once its supersessions are refreshed
    (a restore, a sync), and any relationship marks it "related" everywhere. So a link with a
    user-wide memory at either end (a session's usage too) loads only with ``user_files``, like the
    memory itself, and even then a memory of one project never supersedes a user-wide one.
    """
    user_wide = [column for column, kind in ends if kind == "memory"
                 and ctx.db.scalar("SELECT 1 FROM memories WHERE id = ? AND scope = 'user'", (row[column],))]
    if not user_wide:
        return
    if not ctx.user_files:
        raise Skipped(f"it links the user-wide memory {row[user_wide[0]][:80]}, shown to every project; not imported "
                      "(pass --include-user-files to import links to user-wide memories)")
    if row.get("relationship_type") == "SUPERSEDES" and "target_id" in user_wide and "source_id" not in user_wide:
        raise Skipped(f"it has a project's memory supersede the user-wide memory {row['target_id'][:80]}, which "
                      "would hide it from every project; not imported (only a user-wide memory supersedes one)")


_USAGE_LINK = _link_type("session_memory", "session_memories", ("session_id", "memory_id", "usage_type", "created_at"),
                         "sessions o ON o.id = x.session_id", "x.session_id, x.memory_id, x.usage_type",
                         (("session_id", "session"), ("memory_id", "memory")),
                         ("usage_type", memories.USAGE_TYPES))


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
    """A document and its chunks: at most :data:`~ccmemory.documents.MAX_DOCUMENT_BYTES` of text, as ingest allows."""
    project = ctx.project_id(record.get("project"))
    row = {
        "id": ctx.local_id("document", record.get("id"), project), "project_id": project,
        "title": fields.text(record, "title"),
        "source_path": fields.text(record, "source_path", required=False),
        "source_url": fields.text(record, "source_url", required=False),
        "content_hash": fields.text(record, "content_hash", max_chars=MAX_ID_CHARS),
        "created_at": fields.time(record, "created_at", ctx.latest),
        "updated_at": fields.time(record, "updated_at", ctx.latest),
        "metadata": _dump(ctx.clean(fields.json_object(record, "metadata"))),
    }
    chunks = _chunks(record.get("chunks"))
    ctx.clean_row(row, ("id", "content_hash", "metadata"))
    outcome = ctx.outcome("document", record.get("id"), upsert(ctx, "documents", "id", row, "updated_at"))
    if outcome != UNCHANGED:
        ctx.db.execute("DELETE FROM chunks WHERE document_id = ?", (row["id"],))
        for ordinal, heading, content in chunks:
            ctx.db.execute("INSERT INTO chunks(document_id, ordinal, heading, content) VALUES (?, ?, ?, ?)",
                           (row["id"], ordinal, ctx.clean(heading), ctx.clean(content)))
    return outcome


def _chunks(value: Any) -> list[tuple[int, str, str]]:
    """A document's chunks as (ordinal, heading, content), checked: distinct ordinals, bounded text."""
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > _MAX_CHUNKS or not all(isinstance(c, dict) for c in value):
        raise ValidationError(f"its chunks must be a list of at most {_MAX_CHUNKS:,} objects")
    chunks = [(fields.whole(chunk, "ordinal"), fields.text(chunk, "heading", required=False) or "",
               fields.text(chunk, "content", max_chars=MAX_DOCUMENT_BYTES)) for chunk in value]
    if len({ordinal for ordinal, _, _ in chunks}) != len(chunks):
        raise ValidationError("two of its chunks have the same ordinal")
    size = sum(len(content.encode("utf-8", "surrogatepass")) for _, _, content in chunks)
    if size > MAX_DOCUMENT_BYTES:
        raise ValidationError(f"its chunks hold {size:,} bytes of text, more than a document's {MAX_DOCUMENT_BYTES:,}")
    return chunks


# -- docmem trees -------------------------------------------------------------------------------------------------

_NODE_FIELDS = ("id", "parent_id", "order_value", "content", "token_count", "context_type", "context_name",
                "context_value", "readonly", "hash", "created_at", "updated_at")


def _export_nodes(db: Database, scope: Scope) -> Iterator[dict[str, Any]]:
    for record in project_rows(db, scope, "docmem_nodes", _NODE_FIELDS, "updated_at", "t.created_at, t.id"):
        record["readonly"] = bool(record["readonly"])
        yield record


def _load_node(ctx: ImportContext, record: dict[str, Any]) -> str:
    """A docmem node, checked as docmem checks its nodes; its token count is counted here, not taken."""
    row: dict[str, Any] = {name: record.get(name) for name in _NODE_FIELDS}
    project = row["project_id"] = ctx.project_id(record.get("project"))
    if ":" in str(row["id"]):
        raise ValidationError(f"{str(row['id'])[:80]!r} is a virtual node's id; only docmem nodes are imported")
    row["id"] = ctx.local_id("docmem_node", row["id"], project)
    if row["parent_id"] is not None:
        row["parent_id"] = ctx.node_reference(row["parent_id"], project)
    row["content"] = fields.text(record, "content", max_chars=MAX_NODE_CHARS, required=False) or ""
    row["order_value"] = fields.number(record, "order_value", -_MAX_ORDER, _MAX_ORDER)
    row["readonly"] = int(fields.flag(record, "readonly"))
    row["hash"] = fields.text(record, "hash", max_chars=MAX_ID_CHARS, required=False)
    row["created_at"] = fields.time(record, "created_at", ctx.latest)
    row["updated_at"] = fields.time(record, "updated_at", ctx.latest)
    contexts = ("context_type", "context_name", "context_value")
    row.update((name, fields.text(record, name, max_chars=100, required=False) or "") for name in contexts)
    ctx.clean_row(row, ("id", "parent_id", "hash"))
    check_context(*(row[name] for name in contexts))
    row["token_count"] = token_count(row["content"])
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
    node_id = ctx.node_reference(record.get("node_id"), project)
    if not virtual.is_virtual(node_id) or virtual.get(ctx.db, project, node_id) is None:
        raise ValidationError(f"its node {node_id[:80]!r} is not captured memory of this project")
    row = {"node_id": node_id, "project_id": project,
           "parent_id": ctx.node_reference(record.get("parent_id"), project),
           "order_value": fields.number(record, "order_value", -_MAX_ORDER, _MAX_ORDER),
           "updated_at": fields.time(record, "updated_at", ctx.latest)}
    ctx.clean_row(row, ("node_id", "parent_id"))
    return upsert(ctx, "docmem_placements", "node_id", row, "updated_at")


# -- memory files (Claude's memory tool) --------------------------------------------------------------------------

def _export_memory_files(db: Database, scope: Scope) -> Iterator[dict[str, Any]]:
    """Project files of the exported projects, and (when the scope says so) the user-wide files (``project``
    null) every project shares."""
    in_projects, params = scope.projects("f.project_id")
    changed, since = scope.changed("f.updated_at")
    user_files = "OR f.project_id IS NULL" if scope.with_user_files else ""
    for row in db.rows(
        "SELECT p.path AS project, f.path, f.content, f.version, f.created_at, f.updated_at FROM memory_files f "
        f"LEFT JOIN projects p ON p.id = f.project_id WHERE (({in_projects}) AND f.project_id IS NOT NULL {user_files}) "
        f"AND {changed} "
        "ORDER BY f.project_id IS NOT NULL, p.path, f.path", [*params, *since],
    ):
        row["path"] = file_paths.display(row["project"] is None, row["path"])
        yield row


def _memory_session(ctx: ImportContext, session_id: str, project: int, created_at: str) -> bool:
    """Make sure the session a memory names exists; True when it is added now.

    A file written by hand or by a converter (a chat turned into memories) may name sessions without a
    session record: the session is added, started when its earliest memory was, so the memories stay one
    conversation (the turns read in context, the replies, the timeline). A session record later in the
    file updates it, as a newer copy does.
    """
    if session_id in ctx.sessions_for_memories:
        ctx.db.execute("UPDATE sessions SET started_at = ? WHERE id = ? AND started_at > ?",
                       (created_at, session_id, created_at))
        return False
    if ctx.db.scalar("SELECT 1 FROM sessions WHERE id = ?", (session_id,)):
        return False
    ctx.db.execute("INSERT INTO sessions(id, project_id, started_at) VALUES (?, ?, ?)", (session_id, project, created_at))
    return True


def _load_memory_file(ctx: ImportContext, record: dict[str, Any]) -> str:
    """A file is keyed by its scope and path; its path is checked like the tool's, its text redacted and bounded.

    A user-wide file (shown to every project) loads only when the import lets user files in, and
    never replaces a user-wide file already here with other text: that one is the user's own, so
    it is kept and the record is reported (:class:`Skipped`). A project file follows the usual rule
    (a newer copy updates it). Neither scope grows past the tool's file limit.
    """
    location = file_paths.parse_file(record.get("path"))
    if ctx.clean(location.path) != location.path:
        raise ValidationError("its path would be redacted (it looks like a secret)")
    if location.user != (record.get("project") is None):
        raise ValidationError(f"{location.path} and its project {str(record.get('project'))[:200]!r} disagree "
                              "on the scope")
    if location.user and not ctx.user_files:
        raise Skipped(f"{location.path} is a user-wide memory file, shown to every project; not imported "
                      "(pass --include-user-files to import user-wide files)")
    scope = None if location.user else ctx.project_id(record.get("project"))
    content = fields.text(record, "content", max_chars=None)
    file_commands.check_size(location, content)
    content = ctx.clean(content)
    file_commands.check_size(location, content)  # redaction may lengthen it
    created = fields.time(record, "created_at", ctx.latest)
    updated = fields.time(record, "updated_at", ctx.latest)
    version = fields.whole(record, "version", low=1, default=1)
    existing = file_store.get(ctx.db, scope, location.rel)
    if existing is None:
        if file_store.count(ctx.db, scope) >= file_commands.MAX_FILES_PER_SCOPE:
            raise ValidationError(f"{location.path} would make its scope hold more than "
                                  f"{file_commands.MAX_FILES_PER_SCOPE:,} files, the most one scope holds")
        ctx.db.execute("INSERT INTO memory_files(project_id, path, content, version, created_at, updated_at) "
                       "VALUES (?, ?, ?, ?, ?, ?)", (scope, location.rel, content, version, created, updated))
        outcome = ADDED
    elif content == existing.content:
        return UNCHANGED
    elif location.user:
        raise Skipped(f"{location.path} is already here with other text; your copy is kept and the file's is "
                      "not imported")
    elif _version(updated) > _version(existing.updated_at):
        ctx.db.execute("UPDATE memory_files SET content = ?, version = version + 1, updated_at = ? WHERE id = ?",
                       (content, updated, existing.id))
        outcome = UPDATED
    else:
        return UNCHANGED
    if scope is None:
        ctx.user_files_written.append(location.path)
    else:
        ctx.touched.add(scope)
    file_store.log(ctx.db, project_id=scope, session_id=None, source=IMPORT_SOURCE, command="import",
                   path=location.path, new_path=None, ok=True, detail=f"{outcome}, {len(content.encode())} bytes")
    return outcome


register(RecordType("project", _export_projects, _load_project))
register(RecordType("session", _export_sessions, _load_session))
register(RecordType("memory", _export_memories, _load_memory))
register(_link_type("relationship", "memory_relationships", ("source_id", "target_id", "relationship_type", "created_at"),
                    "memories o ON o.id = x.source_id",
                    "x.created_at, x.source_id, x.target_id, x.relationship_type",
                    (("source_id", "memory"), ("target_id", "memory")),
                    ("relationship_type", RELATIONSHIP_TYPES)))
register(RecordType("session_memory", _export_session_memories, _load_session_memory))
register(RecordType("document", _export_documents, _load_document))
register(RecordType("docmem_node", _export_nodes, _load_node))
register(RecordType("docmem_placement", _export_placements, _load_placement))
register(RecordType("memory_file", _export_memory_files, _load_memory_file))
