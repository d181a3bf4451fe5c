"""The memory tools: search, get, list, timeline, add, reinforce, de-emphasize, delete, supersede.

Each tool reads its checked arguments, calls one core function and renders text
with :mod:`ccmemory.mcp.format`; the CLI calls the same core functions, with the
same defaults (named in :mod:`ccmemory.memories` and :mod:`ccmemory.search`).
"""

from typing import Annotated, Any

from .. import background, memories, scopes, search, sessions, staleness
from ..errors import ToolError
from ..knowledge import promotion
from ..parameters import Param
from ..vocabulary import MCP_SOURCE, MEMORY_SCOPES, SEARCH_SCOPES, SECTORS
from . import format
from .registry import Annotations, ToolContext, reads, tool

#: The most hits one memory_search answers with (the CLI's --limit goes to search.MAX_LIMIT): an index stays short.
MAX_SEARCH_LIMIT = 50
MAX_GET_IDS = 20
MAX_LIST_LIMIT = 200
MAX_OFFSET = 10**9
#: The most memories a timeline shows on each side through MCP (the core allows memories.MAX_TIMELINE_DEPTH).
MAX_TIMELINE_DEPTH = 50

MemoryId = Annotated[str, Param("Memory id (full, or a unique 8+ character prefix)")]
Sector = Annotated[str | None, Param(choices=SECTORS)]
Amount = Param(low=0, high=1)
Scope = Annotated[str, Param("project: this project and your user-wide memories; user: only the user-wide ones; "
                             "all: every project, each hit labelled with its project", choices=SEARCH_SCOPES)]


def _context_maps(ctx: ToolContext, found: list[memories.Memory], *, every_project: bool = False
                  ) -> tuple[dict[str, str], dict[str, dict[str, Any]], dict[str, int]]:
    """Superseded-by ids, sessions and related counts of a batch of memories.

    Sessions of another project (a user-wide memory written there) only when every project was asked for.
    """
    ids = [m.id for m in found]
    superseded = memories.superseded_by(ctx.db, [m.id for m in found if m.is_superseded])
    session_rows = sessions.get_sessions(ctx.db, list(dict.fromkeys(
        m.session_id for m in found if m.session_id and (every_project or m.project_id == ctx.project_id))))
    return superseded, session_rows, memories.related_counts(ctx.db, ids)


def _origins(ctx: ToolContext, found: list[memories.Memory]) -> dict[str, str]:
    """Where each memory comes from, seen from this project: "user-wide", another project's name and path, or ""."""
    labels = scopes.project_labels(ctx.db, {m.project_id for m in found if m.project_id != ctx.project_id})
    return {m.id: scopes.label(m, ctx.project_id, labels) for m in found}


@tool(reads("Search memories"),
      "Search this project's memories and your user-wide ones (past work, decisions, preferences, how-tos); "
      "scope=all searches every project (\"how did I solve this in the other repo?\"). Returns a compact index: "
      "id, date, sector, score, salience, session, snippet and the token cost of each full text; user-wide and "
      "other projects' hits say so. Then fetch what you need with memory_get, or see what happened around a hit "
      "with memory_timeline. Superseded memories are hidden unless include_superseded is true.")
def memory_search(
    ctx: ToolContext,
    query: Annotated[str, Param("What to look for, in natural language or keywords", as_sent=True)],
    limit: Annotated[int, Param("Max hits", low=1, high=MAX_SEARCH_LIMIT)] = search.DEFAULT_LIMIT,
    sector: Sector = None,
    mode: Annotated[str, Param(choices=search.MODES)] = search.DEFAULT_MODE,
    include_superseded: Annotated[bool, Param("Also show replaced memories")] = False,
    scope: Scope = "project",
    team: Annotated[bool, Param("Include memories teammates shared through the team server")] = True,
) -> str:
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
        ctx.db, query, project_id=ctx.project_id, scope=scope, mode=mode, limit=limit,
        sector=sector, include_superseded=include_superseded, session_id=ctx.session_id, embedder=embedder,
        team=team,
    )
    promotion.after_search(ctx.db, ctx.project_id, ctx.project_dir, result.hits)
    return format.search_results(str(query), result.mode_used, result.hits, [*warnings, *result.warnings])


@tool(reads("Read memories by id"),
      f"Full text and details of memories by id (a batch of up to {MAX_GET_IDS}), e.g. the hits of memory_search "
      "worth reading. Ids of other projects (found with scope=all) need scope=all here too.")
def memory_get(ctx: ToolContext, ids: Annotated[list[str], Param("Memory ids", most=MAX_GET_IDS)],
               scope: Annotated[str, Param("project: this project's and user-wide memories; all: any project's",
                                           choices=("project", "all"))] = "project") -> str:
    every_project = scope == "all"
    reach = None if every_project else ctx.project_id
    found, missing = memories.get_many(ctx.db, ids, project_id=reach)
    if not found:
        reasons = [memories.why_not_found(ctx.db, memory_id, project_id=reach) for memory_id in missing]
        if all(reason.startswith("No memory") for reason in reasons):
            raise ToolError(f"No memory matches {', '.join(missing)}. Find ids with memory_search or memory_list.")
        raise ToolError(" ".join(reasons))
    if ctx.session_id:
        memories.record_usage(ctx.db, ctx.session_id, [m.id for m in found], "recalled")
    superseded, session_rows, related = _context_maps(ctx, found, every_project=every_project)
    origins = _origins(ctx, found)
    stale = staleness.check(ctx.db, found)
    records = [
        format.memory_record(m, superseded_by=superseded.get(m.id), session=session_rows.get(m.session_id or ""),
                             related=related.get(m.id, 0), origin=origins[m.id], stale=stale.get(m.id, []))
        for m in found
    ]
    return format.memory_records(records, missing)


@tool(reads("List memories"),
      "Browse this project's memories and your user-wide ones newest first (scope: user for only those, all for "
      "every project), optionally by category (architecture, component, domain, pattern, gotcha, discovery, "
      "general) or sector. Same compact index as memory_search.")
def memory_list(
    ctx: ToolContext,
    category: str | None = None,
    sector: Sector = None,
    limit: Annotated[int, Param(low=1, high=MAX_LIST_LIMIT)] = memories.DEFAULT_LIST_LIMIT,
    offset: Annotated[int, Param("How many to skip, for paging", low=0, high=MAX_OFFSET)] = 0,
    scope: Scope = "project",
) -> str:
    found = memories.list_memories(ctx.db, project_id=ctx.project_id, scope=scope, category=category, sector=sector,
                                   limit=limit, offset=offset)
    what = "".join(f" in {kind} {value!r}" for kind, value in (("category", category), ("sector", sector)) if value)
    superseded, session_rows, related = _context_maps(ctx, found, every_project=scope == "all")
    return format.memory_list(found, superseded=superseded, sessions=session_rows, related=related,
                              offset=offset, what=what, origins=_origins(ctx, found))


Depth = Annotated[int, Param(low=0, high=MAX_TIMELINE_DEPTH)]


@tool(reads("Memory timeline"),
      "The memories just before and after one memory, with their sessions' summaries: what led to it and "
      "what followed. Use after memory_search.")
def memory_timeline(ctx: ToolContext, anchor_id: MemoryId, depth_before: Depth = memories.DEFAULT_TIMELINE_DEPTH,
                    depth_after: Depth = memories.DEFAULT_TIMELINE_DEPTH) -> str:
    result = memories.timeline(ctx.db, anchor_id, project_id=ctx.project_id, before=depth_before, after=depth_after)
    shown = [result["anchor"], *result["before"], *result["after"]]
    return format.timeline(result, memories.superseded_by(ctx.db, [m.id for m in shown if m.is_superseded]))


@tool(Annotations("Add a memory", read_only=False),
      "Remember something for future sessions: a decision, a gotcha, a preference, a procedure. The sector is "
      "guessed when not given. scope=user stores it for every project (a preference or convention of the user's "
      "that is not about this project, e.g. \"I always use uv, never pip\"); only when the user says it applies "
      "everywhere.")
def memory_add(
    ctx: ToolContext,
    content: Annotated[str, Param(f"The memory, self-contained (max {memories.MAX_CONTENT_CHARS:,} chars)",
                                  as_sent=True)],
    sector: Sector = None,
    category: Annotated[str | None, Param("architecture, component, domain, pattern, gotcha, discovery or "
                                            "general")] = None,
    tags: list[str] | None = None,
    importance: Annotated[float, Amount] = memories.DEFAULT_SALIENCE,
    created_at: Annotated[str | None, Param("When it happened, ISO 8601; now when not given")] = None,
    scope: Annotated[str, Param("project (this project) or user (every project of the user's)",
                                choices=MEMORY_SCOPES)] = "project",
) -> str:
    memory = memories.add(ctx.db, project_id=ctx.project_id, content=content, sector=sector, category=category,
                          tags=tags, importance=importance, session_id=ctx.session_id, source=MCP_SOURCE,
                          created_at=created_at, scope=scope)
    background.of(ctx).wake()
    where = ", user-wide: every project sees it" if memory.scope == "user" else ""
    return (f"Memory created: {memory.id} (sector: {memory.sector}, category: {memory.category}, "
            f"salience: {memory.salience:.2f}{where})")


@tool(Annotations("Reinforce a memory", read_only=False),
      "Raise a memory's salience because it proved useful; repeated reinforcement has diminishing returns.")
def memory_reinforce(ctx: ToolContext, memory_id: MemoryId,
                     amount: Annotated[float, Amount] = memories.DEFAULT_REINFORCE_AMOUNT) -> str:
    before = memories.get(ctx.db, memory_id, project_id=ctx.project_id).salience
    memory = memories.reinforce(ctx.db, memory_id, amount, project_id=ctx.project_id, session_id=ctx.session_id)
    return f"Memory reinforced: {format.shown_id(memory.id)} (salience {before:.2f} -> {memory.salience:.2f})"


@tool(Annotations("De-emphasize a memory", read_only=False),
      "Lower a memory's salience because it is less relevant or partly wrong.")
def memory_deemphasize(ctx: ToolContext, memory_id: MemoryId,
                       amount: Annotated[float, Amount] = memories.DEFAULT_DEEMPHASIZE_AMOUNT) -> str:
    before = memories.get(ctx.db, memory_id, project_id=ctx.project_id).salience
    memory = memories.deemphasize(ctx.db, memory_id, amount, project_id=ctx.project_id)
    return f"Memory de-emphasized: {format.shown_id(memory.id)} (salience {before:.2f} -> {memory.salience:.2f})"


@tool(Annotations("Delete a memory", read_only=False, destructive=True, idempotent=True),
      "Delete a memory: soft by default (restorable), or permanently with hard=true. To replace outdated "
      "information prefer memory_supersede, which keeps history.")
def memory_delete(ctx: ToolContext, memory_id: MemoryId, hard: bool = False) -> str:
    result = memories.delete(ctx.db, memory_id, project_id=ctx.project_id, hard=hard)
    result["id"] = format.shown_id(result["id"])
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


@tool(reads("Memory status"),
      "This project's memory at a glance: counts by tier and sector, sessions, documents, pending embeddings, "
      "the database, and the settings in effect (capture on/off, summary mode, session-start budget) with "
      "where each comes from.")
def memory_status(ctx: ToolContext) -> str:
    from .. import config, status

    return status.render(status.status(ctx.db, ctx.project_id, config.load()), ctx.project_dir)


@tool(Annotations("Supersede a memory", read_only=False, idempotent=True),
      "Mark an old memory as replaced by a newer one (add the new one first). Search then hides the old one; "
      "history keeps it.")
def memory_supersede(ctx: ToolContext, old_memory_id: MemoryId, new_memory_id: MemoryId) -> str:
    old, new = memories.supersede(ctx.db, old_memory_id, new_memory_id, project_id=ctx.project_id)
    return (f"Memory {format.shown_id(old.id)} superseded by {format.shown_id(new.id)}. Search now hides the old one "
            "(include_superseded=true shows it); timelines keep it as history.")


TOOLS = [memory_search, memory_get, memory_list, memory_timeline, memory_add, memory_reinforce, memory_deemphasize,
         memory_delete, memory_supersede, memory_status]
