"""The memory tools: search, get, list, timeline, add, reinforce, de-emphasize, delete, supersede.

Each handler reads its arguments, calls one core function and renders text
with :mod:`ccmemory.mcp.format`; the CLI calls the same core functions.
"""

from __future__ import annotations

from typing import Any

from .. import memories, search, sessions
from ..knowledge import promotion
from ..migrations import SECTORS
from . import arguments, background, format
from .registry import Annotations, Tool, ToolContext, ToolError, reads

DEFAULT_SEARCH_LIMIT = 5
MAX_SEARCH_LIMIT = 50
MAX_GET_IDS = 20
MAX_LIST_LIMIT = 200

_ID = {"type": "string", "description": "Memory id (full, or a unique 8+ character prefix)"}


def _context_maps(ctx: ToolContext, found: list[memories.Memory]) -> tuple[dict[str, str], dict[str, dict[str, Any]],
                                                                          dict[str, int]]:
    """Superseded-by ids, sessions and related counts of a batch of memories."""
    ids = [m.id for m in found]
    superseded = memories.superseded_by(ctx.db, [m.id for m in found if m.is_superseded])
    session_rows = sessions.get_sessions(ctx.db, list(dict.fromkeys(m.session_id for m in found if m.session_id)))
    return superseded, session_rows, memories.related_counts(ctx.db, ids)


def memory_search(ctx: ToolContext, args: dict[str, Any]) -> str:
    query: Any = args.get("query")  # search checks it, with the message Claude sees
    mode = arguments.choice(args, "mode", search.MODES, "hybrid")
    limit = arguments.integer(args, "limit", DEFAULT_SEARCH_LIMIT, low=1, high=MAX_SEARCH_LIMIT)
    warnings: list[str] = []
    embedder = None
    if mode != "keyword":
        worker = background.of(ctx)
        embedder, problem = worker.wait_for_model()
        worker.wake()
        if problem:
            warnings.append(problem)
            mode = "keyword"
    result = search.search_with_info(
        ctx.db, query, project_id=ctx.project_id, mode=mode, limit=limit,
        sector=arguments.choice(args, "sector", SECTORS),
        include_superseded=arguments.flag(args, "include_superseded"),
        session_id=ctx.session_id, embedder=embedder,
    )
    promotion.after_search(ctx.db, ctx.project_id, ctx.project_dir, result.hits)
    return format.search_results(str(query), result.mode_used, result.hits, [*warnings, *result.warnings])


def memory_get(ctx: ToolContext, args: dict[str, Any]) -> str:
    ids = arguments.strings(args, "ids", required=True, most=MAX_GET_IDS)
    found, missing = memories.get_many(ctx.db, ids, project_id=ctx.project_id)
    if not found:
        reasons = [memories.why_not_found(ctx.db, memory_id, project_id=ctx.project_id) for memory_id in missing]
        if all(reason.startswith("No memory") for reason in reasons):
            raise ToolError(f"No memory matches {', '.join(missing)}. Find ids with memory_search or memory_list.")
        raise ToolError(" ".join(reasons))
    if ctx.session_id:
        memories.record_usage(ctx.db, ctx.session_id, [m.id for m in found], "recalled")
    superseded, session_rows, related = _context_maps(ctx, found)
    records = [
        format.memory_record(m, superseded_by=superseded.get(m.id), session=session_rows.get(m.session_id or ""),
                             related=related.get(m.id, 0))
        for m in found
    ]
    return format.memory_records(records, missing)


def memory_list(ctx: ToolContext, args: dict[str, Any]) -> str:
    category = arguments.text(args, "category")
    sector = arguments.choice(args, "sector", SECTORS)
    offset = arguments.integer(args, "offset", 0, low=0, high=10**9)
    found = memories.list_memories(
        ctx.db, project_id=ctx.project_id, category=category, sector=sector,
        limit=arguments.integer(args, "limit", memories.DEFAULT_LIST_LIMIT, low=1, high=MAX_LIST_LIMIT),
        offset=offset,
    )
    what = "".join(f" in {kind} {value!r}" for kind, value in (("category", category), ("sector", sector)) if value)
    superseded, session_rows, related = _context_maps(ctx, found)
    return format.memory_list(found, superseded=superseded, sessions=session_rows, related=related,
                              offset=offset, what=what)


def memory_timeline(ctx: ToolContext, args: dict[str, Any]) -> str:
    result = memories.timeline(
        ctx.db, arguments.text(args, "anchor_id", required=True), project_id=ctx.project_id,
        before=arguments.integer(args, "depth_before", 5, low=0, high=50),
        after=arguments.integer(args, "depth_after", 5, low=0, high=50),
    )
    shown = [result["anchor"], *result["before"], *result["after"]]
    return format.timeline(result, memories.superseded_by(ctx.db, [m.id for m in shown if m.is_superseded]))


def memory_add(ctx: ToolContext, args: dict[str, Any]) -> str:
    content: Any = args.get("content")  # memories.add checks it, with the message Claude sees
    memory = memories.add(
        ctx.db, project_id=ctx.project_id, content=content,
        sector=arguments.choice(args, "sector", SECTORS),
        category=arguments.text(args, "category"),
        tags=arguments.strings(args, "tags"),
        importance=arguments.number(args, "importance", memories.DEFAULT_SALIENCE),
        session_id=ctx.session_id, source="mcp", created_at=arguments.text(args, "created_at"),
    )
    background.of(ctx).wake()
    return (f"Memory created: {memory.id} (sector: {memory.sector}, category: {memory.category}, "
            f"salience: {memory.salience:.2f})")


def memory_reinforce(ctx: ToolContext, args: dict[str, Any]) -> str:
    memory_id = arguments.text(args, "memory_id", required=True)
    before = memories.get(ctx.db, memory_id, project_id=ctx.project_id).salience
    memory = memories.reinforce(ctx.db, memory_id, arguments.number(args, "amount", 0.1),
                                project_id=ctx.project_id, session_id=ctx.session_id)
    return f"Memory reinforced: {memory.id} (salience {before:.2f} -> {memory.salience:.2f})"


def memory_deemphasize(ctx: ToolContext, args: dict[str, Any]) -> str:
    memory_id = arguments.text(args, "memory_id", required=True)
    before = memories.get(ctx.db, memory_id, project_id=ctx.project_id).salience
    memory = memories.deemphasize(ctx.db, memory_id, arguments.number(args, "amount", 0.2),
                                  project_id=ctx.project_id)
    return f"Memory de-emphasized: {memory.id} (salience {before:.2f} -> {memory.salience:.2f})"


def memory_delete(ctx: ToolContext, args: dict[str, Any]) -> str:
    memory_id = arguments.text(args, "memory_id", required=True)
    result = memories.delete(ctx.db, memory_id, project_id=ctx.project_id, hard=arguments.flag(args, "hard"))
    if not result["deleted"]:
        if result["reason"] == "already deleted":
            raise ToolError(f"Memory {result['id']} is already deleted; nothing changed (`ccmemory restore "
                            f"{result['id']}` brings it back; hard=true removes it for good).")
        if result["reason"] != "Entry not found":
            raise ToolError(f"{result['reason']} Nothing was deleted.")
        raise ToolError(f"Entry not found: no memory with id {memory_id!r}, nothing was deleted. "
                        "Find ids with memory_search or memory_list.")
    if result["hard"]:
        return f"Memory permanently deleted: {result['id']}"
    return (f"Memory soft-deleted: {result['id']} (hidden from search; can be restored with "
            f"`ccmemory restore {result['id']}`)")


def memory_status(ctx: ToolContext, args: dict[str, Any]) -> str:
    from .. import config, status

    return status.render(status.status(ctx.db, ctx.project_id, config.load()), ctx.project_dir)


def memory_supersede(ctx: ToolContext, args: dict[str, Any]) -> str:
    old, new = memories.supersede(ctx.db, arguments.text(args, "old_memory_id", required=True),
                                  arguments.text(args, "new_memory_id", required=True), project_id=ctx.project_id)
    return (f"Memory {old.id} superseded by {new.id}. Search now hides the old one "
            "(include_superseded=true shows it); timelines keep it as history.")


TOOLS = [
    Tool(
        "memory_search",
        "Search this project's memories (past work, decisions, preferences, how-tos). Returns a compact index: "
        "id, date, sector, score, salience, session, snippet and the token cost of each full text. Then fetch "
        "what you need with memory_get, or see what happened around a hit with memory_timeline. Superseded "
        "memories are hidden unless include_superseded is true.",
        {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to look for, in natural language or keywords"},
                "limit": {"type": "integer", "description": "Max hits (default 5)"},
                "sector": {"type": "string", "enum": list(SECTORS)},
                "mode": {"type": "string", "enum": list(search.MODES), "description": "Default hybrid"},
                "include_superseded": {"type": "boolean", "description": "Also show replaced memories"},
            },
            "required": ["query"],
        },
        memory_search,
        reads("Search memories"),
    ),
    Tool(
        "memory_get",
        "Full text and details of memories by id (a batch of up to 20), e.g. the hits of memory_search worth "
        "reading.",
        {
            "type": "object",
            "properties": {"ids": {"type": "array", "items": {"type": "string"}, "description": "Memory ids"}},
            "required": ["ids"],
        },
        memory_get,
        reads("Read memories by id"),
    ),
    Tool(
        "memory_list",
        "Browse this project's memories newest first, optionally by category (architecture, component, domain, "
        "pattern, gotcha, discovery, general) or sector. Same compact index as memory_search.",
        {
            "type": "object",
            "properties": {
                "category": {"type": "string"},
                "sector": {"type": "string", "enum": list(SECTORS)},
                "limit": {"type": "integer", "description": "Default 50"},
                "offset": {"type": "integer", "description": "Skip this many (paging)"},
            },
        },
        memory_list,
        reads("List memories"),
    ),
    Tool(
        "memory_timeline",
        "The memories just before and after one memory, with their sessions' summaries: what led to it and "
        "what followed. Use after memory_search.",
        {
            "type": "object",
            "properties": {
                "anchor_id": _ID,
                "depth_before": {"type": "integer", "description": "Default 5"},
                "depth_after": {"type": "integer", "description": "Default 5"},
            },
            "required": ["anchor_id"],
        },
        memory_timeline,
        reads("Memory timeline"),
    ),
    Tool(
        "memory_add",
        "Remember something for future sessions: a decision, a gotcha, a preference, a procedure. The sector is "
        "guessed when not given.",
        {
            "type": "object",
            "properties": {
                "content": {"type": "string", "description": "The memory, self-contained (max 10,000 chars)"},
                "sector": {"type": "string", "enum": list(SECTORS)},
                "category": {"type": "string", "description": "architecture, component, domain, pattern, gotcha, "
                                                              "discovery or general"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "importance": {"type": "number", "description": "0-1 (default 0.5)"},
                "created_at": {"type": "string", "description": "When it happened, ISO 8601 (default now)"},
            },
            "required": ["content"],
        },
        memory_add,
        Annotations("Add a memory", read_only=False),
    ),
    Tool(
        "memory_reinforce",
        "Raise a memory's salience because it proved useful; repeated reinforcement has diminishing returns.",
        {
            "type": "object",
            "properties": {"memory_id": _ID, "amount": {"type": "number", "description": "0-1 (default 0.1)"}},
            "required": ["memory_id"],
        },
        memory_reinforce,
        Annotations("Reinforce a memory", read_only=False),
    ),
    Tool(
        "memory_deemphasize",
        "Lower a memory's salience because it is less relevant or partly wrong.",
        {
            "type": "object",
            "properties": {"memory_id": _ID, "amount": {"type": "number", "description": "0-1 (default 0.2)"}},
            "required": ["memory_id"],
        },
        memory_deemphasize,
        Annotations("De-emphasize a memory", read_only=False),
    ),
    Tool(
        "memory_delete",
        "Delete a memory: soft by default (restorable), or permanently with hard=true. To replace outdated "
        "information prefer memory_supersede, which keeps history.",
        {
            "type": "object",
            "properties": {"memory_id": _ID, "hard": {"type": "boolean", "description": "Default false"}},
            "required": ["memory_id"],
        },
        memory_delete,
        Annotations("Delete a memory", read_only=False, destructive=True, idempotent=True),
    ),
    Tool(
        "memory_supersede",
        "Mark an old memory as replaced by a newer one (add the new one first). Search then hides the old one; "
        "history keeps it.",
        {
            "type": "object",
            "properties": {"old_memory_id": _ID, "new_memory_id": _ID},
            "required": ["old_memory_id", "new_memory_id"],
        },
        memory_supersede,
        Annotations("Supersede a memory", read_only=False, idempotent=True),
    ),
    Tool(
        "memory_status",
        "This project's memory at a glance: counts by tier and sector, sessions, documents, pending embeddings, "
        "the database, and the settings in effect (capture on/off, summary mode, session-start budget) with "
        "where each comes from.",
        {"type": "object", "properties": {}},
        memory_status,
        reads("Memory status"),
    ),
]
