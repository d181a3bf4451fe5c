"""The text the MCP tools return: a compact index first, full records on request.

Progressive disclosure: a search or list hit costs about 50-100 tokens (id,
date, sector, score, salience, superseded mark, session, related count, a
snippet and the token cost of the full text); ``memory_get`` returns the full
records; ``memory_timeline`` shows the neighbourhood of one memory.

Stored text is data, not instructions (:mod:`ccmemory.quoting`): in every answer that
shows memories or document sections, they come after a line saying so, escaped, between
fence lines whose nonce is drawn for that answer, so no stored text can close the fence or
write a tag. The answer's own header (counts, the query, what to call next) stays outside.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from .. import clock, knowledge, quoting, staleness
from ..excerpts import counted, estimate_tokens, one_line
from ..memories import Memory
from ..sessions import gist, preview
from ..team import labels

SNIPPET_CHARS = 160
SESSION_SNIPPET_CHARS = 140
TIMELINE_SNIPPET_CHARS = 200
CHUNK_SNIPPET_CHARS = 300
#: What the fenced part of an answer is, for the line that says it is data.
STORED = "what ccmemory stored (tool calls, replies, files, web pages, imports)"
DOCUMENTS = "sections of documents ccmemory stored (files, web pages)"


def index_entry(
    position: int,
    memory: Memory,
    *,
    score: float | None = None,
    weak: bool = False,
    superseded_by: str | None = None,
    session: Mapping[str, Any] | None = None,
    related: int = 0,
    origin: str = "",
    shared: Mapping[str, Any] | None = None,
    stale: Sequence[Mapping[str, Any]] = (),
) -> str:
    """One hit of a search or list: enough to decide whether to fetch it; ``origin`` says where it comes from
    when not from this project (``user-wide``, ``project NAME (PATH)``); ``stale``, the files it recorded
    that changed since or are gone (:func:`ccmemory.staleness.check`)."""
    head = [f"[{position}] {memory.id}", clock.minute(memory.created_at), memory.sector]
    if origin:
        head.insert(1, origin)
    where = knowledge.reference(memory)
    if where:
        head.insert(1, where)
    if score is not None:
        head.append(f"score {score:.2f}" + (" (weak match)" if weak else ""))
    head += [f"salience {memory.salience:.2f}", f"~{estimate_tokens(memory.content)} tok"]
    lines = ["  ".join(head)]
    if memory.is_superseded:
        lines.append(f"    SUPERSEDED by {superseded_by or 'a newer memory'}")
    if stale:
        lines.append("    STALE: " + "; ".join(staleness.describe(dict(entry)) for entry in stale))
    context = []
    if session:
        summary = gist(session.get("summary"), SESSION_SNIPPET_CHARS)
        context.append(f"session {clock.minute(session.get('started_at'))}" + (f": {summary}" if summary else ""))
    if related:
        context.append(f"{related} related")
    if shared:
        context.append(labels.describe(dict(shared)))
    if context:
        lines.append("    " + " · ".join(context))
    lines.append("    " + preview(memory.content, memory.source, SNIPPET_CHARS))
    return "\n".join(lines)


def search_results(query: str, mode: str, hits: Sequence[Any], warnings: Iterable[str] = ()) -> str:
    """The index of ``memory_search`` hits (``ccmemory.search.SearchHit``), each labelled with its origin."""
    notes = [f"Note: {warning}" for warning in warnings]
    if not hits:
        return "\n".join([*notes, f'No memories found for "{one_line(query, 80)}".'])
    entries = [
        index_entry(i, hit.memory, score=hit.score, weak=hit.weak, superseded_by=hit.superseded_by,
                    session=hit.session, related=hit.related_count, origin=hit.origin, shared=hit.shared,
                    stale=hit.stale)
        for i, hit in enumerate(hits, 1)
    ]
    header = (f'{counted(len(hits), "memory")} for "{one_line(query, 80)}" ({mode}). '
              "Full text: memory_get(ids); context: memory_timeline(anchor_id).")
    return "\n".join([*notes, header, quoting.quote("\n".join(entries), STORED)])


def memory_list(
    memories: Sequence[Memory],
    *,
    superseded: Mapping[str, str],
    sessions: Mapping[str, Mapping[str, Any]],
    related: Mapping[str, int],
    offset: int,
    what: str,
    origins: Mapping[str, str] | None = None,
) -> str:
    """The index of ``memory_list``: newest first."""
    if not memories:
        return f"No memories{what}." if offset == 0 else f"No memories{what} after the first {offset}."
    entries = [
        index_entry(offset + i, memory, superseded_by=superseded.get(memory.id),
                    session=sessions.get(memory.session_id or ""), related=related.get(memory.id, 0),
                    origin=(origins or {}).get(memory.id, ""))
        for i, memory in enumerate(memories, 1)
    ]
    header = f"{counted(len(memories), 'memory')}{what}, newest first. Full text: memory_get(ids)."
    return "\n".join([header, quoting.quote("\n".join(entries), STORED)])


def memory_record(
    memory: Memory,
    *,
    superseded_by: str | None,
    session: Mapping[str, Any] | None,
    related: int,
    origin: str = "",
    stale: Sequence[Mapping[str, Any]] = (),
) -> str:
    """One full memory for ``memory_get``; ``origin`` and ``stale`` as in :func:`index_entry`."""
    facts = [
        f"created {clock.minute(memory.created_at)}",
        f"sector {memory.sector}",
        f"tier {memory.tier}",
        f"category {memory.category}",
        f"salience {memory.salience:.2f}",
        f"importance {memory.importance:.2f}",
        f"referenced {memory.reference_count}x",
    ]
    if related:
        facts.append(f"{related} related")
    where = knowledge.reference(memory)
    if where:
        facts.insert(0, f"knowledge {where}")
    if origin:
        facts.insert(0, origin)
    lines = [f"=== {memory.id} ===", " · ".join(facts)]
    if memory.tags:
        lines.append("tags: " + ", ".join(memory.tags))
    if memory.files:
        lines.append("files: " + ", ".join(memory.files))
    if session:
        summary = gist(session.get("summary"), 300)
        lines.append(f"session {session['id']} ({clock.minute(session.get('started_at'))})" + (f": {summary}" if summary else ""))
    if memory.is_superseded:
        lines.append(f"SUPERSEDED on {clock.minute(memory.valid_until)} by {superseded_by or 'a newer memory'}")
    if stale:
        lines.append("STALE: " + "; ".join(staleness.describe(dict(entry)) for entry in stale))
    if memory.is_deleted:
        lines.append(f"DELETED on {clock.minute(memory.deleted_at)} (soft; `ccmemory restore {memory.id}` brings it back)")
    lines.append(memory.content)
    return "\n".join(lines)


def memory_records(records: Sequence[str], missing: Sequence[str]) -> str:
    """Full records (quoted as stored data), then the ids that matched nothing."""
    parts = [quoting.quote("\n\n".join(records), STORED)] if records else []
    if missing:
        parts.append(f"Not found: {', '.join(missing)}. Find ids with memory_search or memory_list.")
    return "\n\n".join(parts)


def shown_id(value: str) -> str:
    """A stored id shown outside the quoted block, escaped and on one line: ids are checked where they come in
    (:mod:`ccmemory.record_ids`), but a store may hold one an older version's import let in."""
    return quoting.escape(one_line(value, 200))


def timeline(result: Mapping[str, Any], superseded: Mapping[str, str]) -> str:
    """The memories around an anchor, oldest first (``>>>`` marks the anchor), then their sessions."""
    anchor: Memory = result["anchor"]
    memories = [*result["before"], anchor, *result["after"]]
    lines: list[str] = []
    for memory in memories:
        marker = ">>>" if memory.id == anchor.id else "   "
        mark = f" [SUPERSEDED by {superseded.get(memory.id, 'a newer memory')}]" if memory.is_superseded else ""
        lines.append(marker + quoting.escape(f" [{clock.minute(memory.created_at)}] {memory.id} ({memory.sector}){mark}"))
        lines.append(quoting.escape(f"    {one_line(memory.content, TIMELINE_SNIPPET_CHARS)}"))
    sessions: Mapping[str, Mapping[str, Any]] = result["sessions"]
    if sessions:
        lines += ["", "Sessions in timeline:"]
        for session_id, session in sessions.items():
            lines.append(quoting.escape(f"  - {clock.minute(session.get('started_at'))} {session_id}: "
                                        f"{gist(session.get('summary'), 300) or 'No summary yet'}"))
    header = f"Timeline: {len(result['before'])} before and {len(result['after'])} after {shown_id(anchor.id)}"
    return header + "\n" + quoting.quote_escaped("\n".join(lines), STORED)


def document_hits(query: str, hits: Sequence[Any], warnings: Iterable[str] = ()) -> str:
    """The sections ``docs_search`` found (``ccmemory.documents.DocumentHit``)."""
    notes = [f"Note: {warning}" for warning in warnings]
    if not hits:
        return "\n".join([*notes, f'No documents found for "{one_line(query, 80)}".'])
    entries = []
    for i, hit in enumerate(hits, 1):
        source = hit.document.source_path or hit.document.source_url or "inline"
        heading = f" > {quoting.escape(hit.chunk.heading)}" if hit.chunk.heading else ""
        entries.append(f"[{i}] {quoting.escape(hit.document.title)}{heading} (score {hit.score:.2f}, "
                       f"{quoting.escape(source)})\n"
                       f"    {quoting.escape(one_line(hit.chunk.content, CHUNK_SNIPPET_CHARS))}")
    header = f'{counted(len(hits), "section")} for "{one_line(query, 80)}".'
    return "\n".join([*notes, header, quoting.quote_escaped("\n".join(entries), DOCUMENTS)])
