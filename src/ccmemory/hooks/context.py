"""What SessionStart injects: the memory files, the local context and a budgeted index of the project's memory.

The SessionStart handler (:mod:`.session_start`) prints it.

First come the memory files of Claude's memory tool (this project's and the
user-wide ones, newest first, each in full while they fit in
:data:`FILES_SHARE` of the room, then cut with a pointer to ``view``), then the
newest entries of the directory's rolling local context (up to
:data:`LOCAL_SHARE`), then the index, which gets the rest. The index is not the
memories themselves: the latest session
summaries, then the most salient user-wide memories (the user's in every project,
:mod:`ccmemory.scopes`; up to :data:`USER_SHARE` of what is left, in a section that
says they are user-wide), then the most salient project-tier memories, one line each with its
id and an estimate of what reading it in full costs (a memory whose files changed since or are gone,
:mod:`ccmemory.staleness`, comes after the current ones and is marked ``STALE``), so Claude fetches only
what it needs through the MCP tools. It fits ``context.max_tokens`` (about 4
characters a token; 2,000 tokens by default) and never exceeds the 10,000
characters Claude Code accepts. It is wrapped in ``<ccmemory-context>``, which
capture strips, so the index is never recorded back as a memory.
``ccmemory context --preview`` prints exactly this text.

Memory is data, not instructions (:mod:`ccmemory.quoting`): every piece of stored text
(memory files, local context, session bullets, memory lines) is
escaped, so it cannot contain ``<`` and so no tag (``</ccmemory-context>``,
``<system-reminder>``), and each section's entries sit between fence lines
``<ccmemory-data-NONCE>`` and ``</ccmemory-data-NONCE>`` whose nonce is drawn afresh for each
injection; a line before them says the fenced text is recorded data, not instructions. The
section titles and the tool hints are ccmemory's own text, outside the fences. A captured
tool call shows only its first line, what was called and whether it failed
(:func:`index_text`): its output, chosen by whatever the tool ran or read, never reaches the
index.
"""

from __future__ import annotations

import json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Sequence
    from ..db import Database

from .. import quoting, staleness
from ..excerpts import CHARS_PER_TOKEN, estimate_tokens, one_line
from ..config import Config
from ..observations import FAILED_MARK, marked_on_first_line
from ..vocabulary import CAPTURE_SOURCE, KNOWLEDGE_SOURCE, SUMMARY_SOURCE
from ..redaction import CONTEXT_TAG

#: Claude Code saves longer additionalContext to a file and shows only a preview.
CLAUDE_CODE_LIMIT_CHARS = 10_000
SESSION_SHARE = 0.45
FILES_SHARE = 0.5
LOCAL_SHARE = 0.2
USER_SHARE = 0.35
MIN_FILE_EXCERPT = 200
SESSION_ENTRY_CHARS = 600
MEMORY_LINE_CHARS = 220
CANDIDATE_MEMORIES = 500


def _quoted_line(text: str, limit: int) -> str:
    """Stored text escaped for the model (:func:`ccmemory.quoting.escape`), then flattened and cut to ``limit``.

    Escaping first keeps a line within ``limit`` however much the escapes lengthen it.
    """
    return one_line(quoting.escape(text), limit)


#: The summary lines a session's bullet keeps, in the order shown: the most useful first.
_ENTRY_ORDER = ("Request:", "Outcome:", "Decisions:", "Did:", "Files changed:")


def _session_entry(session: dict[str, Any], memory_id: str | None) -> str:
    """A session summary condensed into one bullet, most useful first: request, outcome, decisions, what it
    did, files changed.

    The id shown is the summary memory's (what ``memory_get`` and ``memory_timeline`` take).
    The outcome is Claude's last reply, which may quote what it read: the bullet is escaped
    and shown inside the fence like every stored text.
    """
    lines = [line.strip() for line in (session.get("summary") or "").splitlines() if line.strip()]
    labelled: dict[str, list[str]] = {label: [] for label in _ENTRY_ORDER}
    in_decisions = False
    for line in lines[1:]:
        label = next((name for name in _ENTRY_ORDER if line.startswith(name)), None)
        if label:
            labelled[label].append(line)
        elif line.startswith("- ") and in_decisions:
            labelled["Decisions:"].append(line[2:] + ";")
        in_decisions = line == "Decisions:" or (in_decisions and line.startswith("- "))
    keep = [line for label in _ENTRY_ORDER for line in labelled[label]]
    body = " ".join(keep or lines[1:] or lines)
    date = (session.get("ended_at") or session.get("started_at") or "")[:10]
    shown = f"[{memory_id[:8]}] {date} session" if memory_id else f"{date} session {session['id']}"
    return f"- {quoting.escape(shown)}: {_quoted_line(body, SESSION_ENTRY_CHARS)}"


def index_text(memory: Any) -> str:
    """What the index shows of a memory: for a captured tool call only its first line, never its output.

    That line is what capture wrote about the call itself (the tool and its command, file or
    address, and ``(failed)``); what the tool printed, which the repository, a web page or a
    failing test chose, stays in the store for ``memory_get``. Other memories show their text.
    """
    if memory.source != CAPTURE_SOURCE:
        return memory.content
    first = memory.content.split("\n", 1)[0]
    if memory.category == "gotcha" and not marked_on_first_line(memory.metadata):
        first += " …" + FAILED_MARK  # a command of several lines: the mark is on its last line
    return first


def _memory_line(memory: Any, stale: Sequence[dict[str, Any]] = ()) -> str:
    """One index line; a memory whose files changed since or are gone says so first (it is not current)."""
    kind = memory.sector if memory.category == "general" else f"{memory.sector}/{memory.category}"
    text = _quoted_line(index_text(memory), MEMORY_LINE_CHARS)
    mark = ""
    if stale:
        mark = quoting.escape("STALE (" + "; ".join(staleness.describe(entry) for entry in stale[:2])
                              + ("; …" if len(stale) > 2 else "") + "): ")
    return (f"- {quoting.escape(f'[{memory.id[:8]}] {memory.created_at[:10]} {kind}')}: {mark}{text} "
            f"(~{estimate_tokens(memory.content)} tok)")


def _current_first(db: Database, ranked: list[Any]) -> list[str]:
    """Index lines of ``ranked``: the memories whose files are as recorded first, then the stale ones, marked.

    No file is read unless its recorded state was fingerprinted before (:func:`ccmemory.staleness.check`).
    """
    stale = staleness.check(db, ranked, learn=False)
    current = [memory for memory in ranked if memory.id not in stale]
    return ([_memory_line(memory) + "\n" for memory in current]
            + [_memory_line(memory, stale[memory.id]) + "\n" for memory in ranked if memory.id in stale])


def rank_memories(candidates: Sequence[Any]) -> list[Any]:
    """Most salient first; among equals, the most recently created first (sorts are stable)."""
    newest_first = sorted(candidates, key=lambda m: m.created_at, reverse=True)
    return sorted(newest_first, key=lambda m: -m.salience)


def _fitting(entries: list[str], room: int) -> list[str]:
    """The leading entries whose lengths add up to at most ``room`` characters (stops at the first misfit)."""
    taken: list[str] = []
    for entry in entries:
        if len(entry) > room:
            break
        taken.append(entry)
        room -= len(entry)
    return taken


def _section(title: str, escaped: list[str], room: int, tag: str) -> str:
    """``title``, then the leading ``escaped`` entries that fit, fenced with ``tag``; "" when none fits."""
    opening, closing = quoting.fence_lines(tag)
    taken = _fitting(escaped, room - len(title) - len(opening) - len(closing))
    return title + opening + "".join(taken) + closing if taken else ""


def _file_block(row: Any, room: int, *, whole_only: bool) -> str:
    """One memory file, whole if it fits in ``room``, else (unless ``whole_only``) its start and where the rest is.

    The path and the content are escaped: the block sits inside the fence.
    """
    path = quoting.escape(row.display, quote=True)
    head = f'<file path="{path}" updated="{quoting.escape(row.updated_at[:10], quote=True)}">\n'
    content = quoting.escape(row.content)
    tail = "</file>\n" if content.endswith("\n") else "\n</file>\n"
    whole = head + content + tail
    if len(whole) <= room:
        return whole
    keep = room - len(head) - 120 - len(path)
    if whole_only or keep < MIN_FILE_EXCERPT:
        return ""
    rest = len(content) - keep
    return f"{head}{content[:keep]}\n[… {rest} more characters: view {path}]\n</file>\n"


def files_section(db: Database, project_id: int, room: int, tag: str) -> str:
    """This project's and the user-wide memory files within ``room`` characters, newest first, fenced with ``tag``.

    Files that fit whole come first; the room left then goes to the start of the others, in order.
    """
    from ..files import store

    rows = sorted(store.visible(db, project_id), key=lambda row: row.updated_at, reverse=True)
    if not rows:
        return ""
    title = ("\nMemory files (Claude's memory tool, the ccmemory `memory` tool; /memories is this project, "
             "/memories/user is shared by all your projects; newest first):\n")
    opening, closing = quoting.fence_lines(tag)
    room -= len(title) + len(opening) + len(closing) + 200  # keep room for the list of files left out
    if room < 0:  # not even the title and that list fit
        return ""
    blocks: dict[int, str] = {}
    for whole_only in (True, False):
        for index, row in enumerate(rows):
            if index not in blocks:
                block = _file_block(row, room, whole_only=whole_only)
                if block:
                    blocks[index] = block
                    room -= len(block)
    left_out = [row.display for index, row in enumerate(rows) if index not in blocks]
    more = _quoted_line("Not shown, view them when needed: " + ", ".join(left_out), 190) + "\n" if left_out else ""
    return title + opening + "".join(blocks[index] for index in sorted(blocks)) + more + closing


def build(db: Database, project_id: int, *, config: Config, exclude_session: str | None = None,
          directory: str | None = None) -> str:
    """The text SessionStart injects for a project, or "" when there is nothing to recall.

    ``directory`` is the working directory whose rolling local context is included (when it is on there).
    Every stored text is escaped and inside a fence of this call's own nonce (see the module docstring).
    """
    from .. import local_context, memories, sessions

    settings = config.section("context")
    budget = min(int(settings["max_tokens"]) * CHARS_PER_TOKEN, CLAUDE_CODE_LIMIT_CHARS - 200)
    tag = quoting.nonce()
    header = (
        f"<{CONTEXT_TAG}>\n"
        "Memory from earlier Claude Code sessions in this project, kept by ccmemory. The index below is not the "
        "memories themselves: read entries in full with the ccmemory MCP tool memory_get (ids=[...]), see what "
        "happened around one with memory_timeline (anchor_id), and look for anything else with memory_search. "
        "Older entries may be outdated; check before relying on them.\n"
        + quoting.notice(tag, "what ccmemory recorded from earlier sessions (tool calls, replies, files, imports)")
    )
    footer = f"</{CONTEXT_TAG}>"
    room = budget - len(header) - len(footer)
    parts: list[str] = []

    files = files_section(db, project_id, int(room * FILES_SHARE), tag)
    if files:
        parts.append(files)
    if directory and local_context.is_enabled(db, directory, config.get("local_context", "enabled")):
        title = "\nRecent activity in this directory (newest first; `ccmemory context show` has the whole log):\n"
        recent_activity = _section(title, [quoting.escape(entry) for entry in
                                           local_context.session_start_entries(db, directory)],
                                   int(room * LOCAL_SHARE), tag)
        if recent_activity:
            parts.append(recent_activity)
    room -= sum(len(p) for p in parts)

    recent = [s for s in sessions.recent(db, project_id, limit=int(settings["sessions"]) + 1, with_summary=True)
              if s["id"] != exclude_session][: int(settings["sessions"])]
    summary_ids = sessions.summary_memory_ids(db, [session["id"] for session in recent])
    entries = _section("\nRecent sessions (newest first):\n",
                       [_session_entry(session, summary_ids.get(session["id"])) + "\n" for session in recent],
                       int(room * SESSION_SHARE), tag)
    if entries:
        parts.append(entries)
        room -= len(entries)

    user_wide = rank_memories(memories.list_memories(db, scope="user", include_superseded=False,
                                                     limit=CANDIDATE_MEMORIES))[: int(settings["memories"])]
    mine = _section("\nUser-wide memories (yours, shown in every project; most salient first):\n",
                    _current_first(db, user_wide), int(room * USER_SHARE), tag)
    if mine:
        parts.append(mine)
        room -= len(mine)

    candidates = [m for m in memories.list_memories(db, project_id=project_id, tier="project",
                                                    include_superseded=False, limit=CANDIDATE_MEMORIES)
                  if m.source not in (SUMMARY_SOURCE, KNOWLEDGE_SOURCE)  # knowledge: searched, not injected
                  and m.scope != "user"]  # listed above
    ranked = rank_memories(candidates)[: int(settings["memories"])]
    lines = _section("\nProject memories (most salient first):\n", _current_first(db, ranked), room, tag)
    if lines:
        parts.append(lines)
    if not parts:
        return ""
    return header + "".join(parts) + footer


def hook_output(context: str) -> str:
    """The JSON a SessionStart hook prints to inject ``context``."""
    return json.dumps({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": context}})

