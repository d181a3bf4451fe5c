"""The viewer's JSON API: each handler reads its arguments and calls the core functions the CLI and MCP call.

Every handler takes a :class:`Call` and returns something JSON can encode.
Everything below ``/api/projects/{project}`` is scoped to that project: a
memory, session or docmem node of another project is "not found" here, the
same answer as an id that does not exist. User-wide memories (:mod:`ccmemory.scopes`)
belong to every project; a list or search with ``scope=all`` shows every project's,
each labelled with its project (``origin``); their details open in their own project.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Mapping

from .. import (budget, config as settings, consolidation, embeddings, memories, parameters, projects, retention, scopes,
               search, sessions, storage)
from ..db import Database
from ..docmem import expand, view
from ..docmem.nodes import Docmem
from ..documents import list_documents
from ..errors import NotFoundError, ValidationError
from ..files import commands as file_commands
from ..files import paths as file_paths
from ..files import store as file_store
from ..memories import INCLUSION, Memory
from ..vocabulary import CATEGORIES, MEMORY_SCOPES, SEARCH_SCOPES, SECTORS, TIERS, UI_SOURCE
from .viewer import Viewer

PAGE_SIZE = 50
MAX_PAGE_SIZE = 200
LIST_PREVIEW_CHARS = 400
SESSION_PAGE = 20
DEFAULT_EXPAND_TOKENS = 2_000
MAX_EXPAND_TOKENS = 50_000
_CURSOR_SEPARATOR = "~"


@dataclass
class Call:
    """One API request as a handler sees it."""

    viewer: Viewer
    db: Database
    path: Mapping[str, Any]
    query: Mapping[str, str]
    body: dict[str, Any] = field(default_factory=dict)

    @property
    def project_id(self) -> int:
        """The project named in the URL, checked to exist."""
        try:
            project_id = int(self.path["project"])
        except ValueError:
            raise ValidationError(f"A project id is a whole number, got {self.path['project']!r}") from None
        projects.get(self.db, project_id)
        return project_id

    def memory(self, key: str = "memory") -> Memory:
        """The memory named in the URL (or the body field ``key``), only if it belongs to this project (or to
        every project: a user-wide one)."""
        memory_id = self.path.get(key) or self.body.get(key)
        if not isinstance(memory_id, str) or not memory_id.strip():
            raise ValidationError(f"Field {key!r} must be a memory id (text)")
        try:
            memory = memories.get(self.db, memory_id.strip(), project_id=self.project_id)
        except NotFoundError:
            memory = None
        if memory is None or not scopes.visible(memory, "project", self.project_id):
            raise NotFoundError(f"No memory with id {memory_id!r} in this project; it may have been hard-deleted. "
                                "Reload the list to see the current memories.")
        return memory


def _only_fields(body: Mapping[str, Any], allowed: tuple[str, ...]) -> None:
    unknown = sorted(set(body) - set(allowed))
    if unknown:
        raise ValidationError(f"Unknown field(s) {', '.join(map(repr, unknown))}; this request takes: "
                              f"{', '.join(allowed)}")


def _summary(memory: Memory, origin: str = "") -> dict[str, Any]:
    """A memory for a list: everything but long content, which is cut; ``origin`` as :func:`ccmemory.scopes.label`."""
    data = {**memory.to_dict(), "seq": memory.seq, "origin": origin}
    if len(memory.content) > LIST_PREVIEW_CHARS:
        data["content"] = memory.content[:LIST_PREVIEW_CHARS]
        data["content_truncated"] = True
    return data


def _cursor(text: str | None) -> tuple[str, int] | None:
    if not text:
        return None
    created_at, _, seq = text.rpartition(_CURSOR_SEPARATOR)
    if not created_at or not seq.isdigit():
        raise ValidationError(f"Argument 'cursor' must be the next_cursor of a previous page, got {text!r}")
    return created_at, int(seq)


# ---------------------------------------------------------------- projects, sessions, storage

def list_projects(call: Call) -> dict[str, Any]:
    """Every project, plus the values the page's filters offer."""
    return {"projects": projects.list_all(call.db), "sectors": list(SECTORS), "tiers": list(TIERS),
            "categories": list(CATEGORIES), "search_modes": list(search.MODES)}


def project_storage(call: Call) -> dict[str, Any]:
    """The project and the bytes the data directory takes: cheap (file sizes only), shown in the page's header."""
    return {"project": projects.get(call.db, call.project_id),
            "storage": storage.usage(os.path.dirname(call.viewer.db_path))}


def project_stats(call: Call) -> dict[str, Any]:
    """Counts by sector and tier for the project and all projects: they read every row, so only on request."""
    project_id = call.project_id
    return {
        **project_storage(call),
        "stats": memories.stats(call.db, project_id),
        "all_projects": memories.stats(call.db),
        "pending_embeddings": embeddings.pending_count(call.db, embeddings.configured_spec().model_id),
        "budget": {**budget.usage(call.db, loaded := settings.load()),
                   "undo_log_kept_until": consolidation.undo_kept_until(call.db, loaded)},
    }


def list_sessions(call: Call) -> dict[str, Any]:
    limit = parameters.integer(call.query, "limit", SESSION_PAGE, low=1, high=MAX_PAGE_SIZE)
    offset = parameters.integer(call.query, "offset", 0, low=0, high=10**9)
    found = sessions.recent(call.db, call.project_id, limit=limit + 1, offset=offset)
    counts = sessions.memory_counts(call.db, [s["id"] for s in found[:limit]])
    return {
        "sessions": [{**s, "memories": counts.get(s["id"], 0)} for s in found[:limit]],
        "next_offset": offset + limit if len(found) > limit else None,
    }


# ---------------------------------------------------------------- memories

def list_memories(call: Call) -> dict[str, Any]:
    query = call.query
    limit = parameters.integer(query, "limit", PAGE_SIZE, low=1, high=MAX_PAGE_SIZE)
    project_id = call.project_id
    filters: dict[str, Any] = {
        "project_id": project_id,
        "scope": parameters.choice(query, "scope", SEARCH_SCOPES, "project"),
        "sector": parameters.choice(query, "sector", SECTORS),
        "tier": parameters.choice(query, "tier", TIERS),
        "category": parameters.text(query, "category"),
        "session_id": parameters.text(query, "session"),
        "deleted": parameters.choice(query, "deleted", INCLUSION, "exclude"),
        "superseded": parameters.choice(query, "superseded", INCLUSION, "include"),
    }
    found = memories.list_memories(call.db, **filters, limit=limit + 1, before=_cursor(query.get("cursor")))
    page = found[:limit]
    total = memories.count_memories(call.db, **filters)
    labels = scopes.project_labels(call.db, {m.project_id for m in page if m.project_id != project_id})
    return {
        "memories": [_summary(m, scopes.label(m, project_id, labels)) for m in page],
        "next_cursor": f"{page[-1].created_at}{_CURSOR_SEPARATOR}{page[-1].seq}" if len(found) > limit else None,
        "total": total,
        "total_is_lower_bound": total >= memories.COUNT_CAP,
    }


def search_memories(call: Call) -> dict[str, Any]:
    query = call.query
    mode = parameters.choice(query, "mode", search.MODES, search.DEFAULT_MODE)
    warnings: list[str] = []
    embedder = None
    if mode != "keyword":
        embedder, problem = call.viewer.embedder(call.db)
        if problem:
            warnings.append(problem)
            mode = "keyword"
    result = search.search_with_info(
        call.db, query.get("q", ""), project_id=call.project_id, mode=mode,
        scope=parameters.choice(query, "scope", SEARCH_SCOPES, "project"),
        sector=parameters.choice(query, "sector", SECTORS),
        limit=parameters.integer(query, "limit", 20, low=1, high=search.MAX_LIMIT),
        include_superseded=parameters.flag(query, "include_superseded"), embedder=embedder, track=False,
        team=parameters.flag(query, "team", default=True),
    )
    return {"hits": [{**hit.to_dict(), "memory": _summary(hit.memory, hit.origin)} for hit in result.hits],
            "mode_used": result.mode_used, "warnings": [*warnings, *result.warnings]}


def memory_detail(call: Call, memory: Memory | None = None) -> dict[str, Any]:
    memory = memory or call.memory()
    project_id = call.project_id
    replaced_by = memories.superseded_by(call.db, [memory.id]).get(memory.id)
    replaces = memories.replaces(call.db, memory.id)
    session = (sessions.get_sessions(call.db, [memory.session_id]).get(memory.session_id)
               if memory.session_id and memory.project_id == project_id else None)  # not another project's session
    origin = scopes.label(memory, project_id, {})
    return {"memory": {**memory.to_dict(), "seq": memory.seq, "origin": origin}, "superseded_by": replaced_by,
            "supersedes": replaces,
            "session": session,
            "related_count": memories.related_counts(call.db, [memory.id]).get(memory.id, 0)}


def add_memory(call: Call) -> dict[str, Any]:
    _only_fields(call.body, ("content", "sector", "category", "tags", "importance", "scope"))
    content: Any = call.body.get("content")  # memories.add checks it
    memory = memories.add(
        call.db, project_id=call.project_id, content=content,
        scope=parameters.choice(call.body, "scope", MEMORY_SCOPES, "project"),
        sector=parameters.choice(call.body, "sector", SECTORS), category=parameters.text(call.body, "category"),
        tags=parameters.strings(call.body, "tags"),
        importance=parameters.number(call.body, "importance", memories.DEFAULT_SALIENCE), source=UI_SOURCE,
    )
    call.viewer.background.wake()
    return memory_detail(call, memory)


def edit_memory(call: Call) -> dict[str, Any]:
    _only_fields(call.body, ("content", "tags", "sector"))
    if not call.body:
        raise ValidationError("Nothing to change: send at least one of content, tags, sector")
    memory = call.memory()
    content = call.body.get("content", memory.content)
    tags = parameters.strings(call.body, "tags") if "tags" in call.body else None
    memories.rewrite(call.db, memory.id, content, project_id=memory.project_id, tags=tags,
                     sector=parameters.choice(call.body, "sector", SECTORS))
    call.viewer.background.wake()
    return memory_detail(call, memories.get(call.db, memory.id, project_id=memory.project_id))


def reinforce(call: Call) -> dict[str, Any]:
    _only_fields(call.body, ("amount",))
    amount = parameters.number(call.body, "amount", memories.DEFAULT_REINFORCE_AMOUNT)
    memory = memories.reinforce(call.db, call.memory().id, amount, project_id=call.project_id)
    return memory_detail(call, memory)


def deemphasize(call: Call) -> dict[str, Any]:
    _only_fields(call.body, ("amount",))
    amount = parameters.number(call.body, "amount", memories.DEFAULT_DEEMPHASIZE_AMOUNT)
    memory = memories.deemphasize(call.db, call.memory().id, amount, project_id=call.project_id)
    return memory_detail(call, memory)


def supersede(call: Call) -> dict[str, Any]:
    """Replace a memory by another of this project (``new_id``) or by a new one written from ``content``."""
    _only_fields(call.body, ("new_id", "content"))
    old = call.memory()
    if ("new_id" in call.body) == ("content" in call.body):
        raise ValidationError("Send either 'new_id' (an existing memory of this project) or 'content' "
                              "(the text of the replacing memory), not both")
    if "new_id" in call.body:
        new = call.memory("new_id")
    else:
        new = memories.add(call.db, project_id=old.project_id, content=call.body["content"], sector=old.sector,
                           tier=old.tier, category=old.category, tags=old.tags, importance=old.importance,
                           source=UI_SOURCE)
        call.viewer.background.wake()
    old, new = memories.supersede(call.db, old.id, new.id, project_id=old.project_id)
    return {"old": memory_detail(call, old), "new": memory_detail(call, new)}


def delete_memory(call: Call) -> dict[str, Any]:
    hard = parameters.flag(call.query, "hard")
    return memories.delete(call.db, call.memory().id, project_id=call.project_id, hard=hard)


def restore_memory(call: Call) -> dict[str, Any]:
    return memory_detail(call, memories.restore(call.db, call.memory().id, project_id=call.project_id))


# ---------------------------------------------------------------- docmem and CLAUDE.md

def docmem_roots(call: Call) -> dict[str, Any]:
    store = Docmem(call.db, call.project_id)
    return {
        "roots": [_node(node) for node in store.roots(limit=MAX_PAGE_SIZE)],
        "documents": [{"id": f"doc:{d.id}", "title": d.title, "created_at": d.created_at}
                      for d in list_documents(call.db, call.project_id)],
    }


def _node(node: Any) -> dict[str, Any]:
    return {"id": node.id, "parent_id": node.parent_id, "content": node.content, "token_count": node.token_count,
            "context": list(node.context), "readonly": node.readonly, "kind": node.kind,
            "created_at": node.created_at, "updated_at": node.updated_at}


def docmem_node(call: Call) -> dict[str, Any]:
    store = Docmem(call.db, call.project_id)
    node = store.get(call.path["node"])
    limit = parameters.integer(call.query, "limit", MAX_PAGE_SIZE, low=1, high=1000)
    children = store.children(node.id)
    return {"node": _node(node), "path": [_node(n) for n in store.ancestors(node.id)],
            "children": [_node(n) for n in children[:limit]], "children_total": len(children)}


def docmem_expand(call: Call) -> dict[str, Any]:
    budget = parameters.integer(call.query, "tokens", DEFAULT_EXPAND_TOKENS, low=1, high=MAX_EXPAND_TOKENS)
    store = Docmem(call.db, call.project_id)
    return {"id": call.path["node"], "tokens": budget,
            "text": expand.expand_to_length(store, call.path["node"], budget)}


def claude_md(call: Call) -> dict[str, Any]:
    """The docmem views the project's CLAUDE.md shows now (written by the MCP server's docmem_view)."""
    project = projects.get(call.db, call.project_id)
    path = view.claude_md(project["path"])
    try:
        data = view.read(path)
    except view.ClaudeMdError as exc:
        return {"path": str(path), "exists": True, "error": str(exc), "sections": [], "node_ids": []}
    if data is None:
        return {"path": str(path), "exists": False, "sections": [], "node_ids": []}
    sections = view.shown_sections(data)
    store = Docmem(call.db, call.project_id)
    headings = [line[3:].strip() for text in sections for line in text.splitlines() if line.startswith("## ")]
    return {"path": str(path), "exists": True, "sections": sections,
            "node_ids": [node_id for node_id in dict.fromkeys(headings) if store.find(node_id) is not None]}


# ---------------------------------------------------------------- /memories files (Claude's memory tool)

def _file_call(call: Call) -> file_commands.Call:
    return file_commands.Call(call.project_id, None, UI_SOURCE)


def list_files(call: Call) -> dict[str, Any]:
    """This project's memory files, then the user-wide ones every project sees; sizes, not content."""
    rows = file_store.visible(call.db, call.project_id)
    return {"files": [{**{k: v for k, v in row.to_dict().items() if k != "content"}, "bytes": row.size}
                      for row in rows]}


def read_file(call: Call) -> dict[str, Any]:
    location = file_paths.parse_file(parameters.text(call.query, "path", required=True))
    row = file_store.get(call.db, file_store.scope_of(location, call.project_id), location.rel)
    if row is None:
        raise NotFoundError(f"No memory file {location.path}; the list shows the files that exist")
    return row.to_dict()


def write_file(call: Call) -> dict[str, Any]:
    """Create or replace a whole file; ``version`` (null for a new file) refuses to overwrite a newer one."""
    _only_fields(call.body, ("path", "content", "version"))
    version = call.body.get("version")
    if version is not None and (isinstance(version, bool) or not isinstance(version, int)):
        raise ValidationError(f"Field 'version' must be the file's version number or null, got {version!r}")
    content = call.body.get("content")
    if not isinstance(content, str):
        raise ValidationError("Field 'content' is required (the whole text of the file)")
    path = parameters.text(call.body, "path", required=True)
    message = file_commands.overwrite(call.db, path, content, _file_call(call), expected_version=version)
    location = file_paths.parse_file(path)
    row = file_store.get(call.db, file_store.scope_of(location, call.project_id), location.rel)
    return {"message": message, "file": row.to_dict() if row else None}


def delete_file(call: Call) -> dict[str, Any]:
    path = parameters.text(call.query, "path", required=True)
    return {"message": file_commands.execute(call.db, {"command": "delete", "path": path}, _file_call(call))}


def rename_file(call: Call) -> dict[str, Any]:
    _only_fields(call.body, ("old_path", "new_path"))
    command = {"command": "rename", "old_path": parameters.text(call.body, "old_path", required=True),
               "new_path": parameters.text(call.body, "new_path", required=True)}
    return {"message": file_commands.execute(call.db, command, _file_call(call))}


# ---------------------------------------------------------------- gc (retention)

def collect_garbage(call: Call) -> dict[str, Any]:
    """``ccmemory gc`` for this project: expire old memories of the chosen tiers, purge old soft deletes, VACUUM."""
    _only_fields(call.body, ("older_than_days", "tiers", "sectors", "deleted_after_days", "vacuum", "dry_run"))
    body = call.body
    report = retention.collect(
        call.db, project_id=call.project_id,
        older_than_days=parameters.number(body, "older_than_days", retention.DEFAULT_OLDER_THAN_DAYS, low=0,
                                         high=100_000),
        tiers=parameters.strings(body, "tiers") or retention.DEFAULT_TIERS,
        sectors=parameters.strings(body, "sectors") or None,
        deleted_after_days=parameters.number(body, "deleted_after_days", retention.DEFAULT_DELETED_AFTER_DAYS,
                                            low=0, high=100_000),
        vacuum=parameters.flag(body, "vacuum", True), dry_run=parameters.flag(body, "dry_run", True),
    )
    return report.to_dict()
