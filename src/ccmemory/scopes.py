"""Scopes: which memories a project sees, and the memories proposed for the user's scope.

A memory's ``scope`` is ``project`` (the default: only its project sees it) or ``user`` (a
preference, a convention, a personal gotcha: stored once, seen from every project). Its
``project_id`` stays the project it was written in, so every per-project query keeps its index
and a merge of projects carries it along. What a search or a list covers
(:data:`~ccmemory.vocabulary.SEARCH_SCOPES`):

* ``project``: this project's memories and every user-wide one (what a session works with);
* ``user``: the user-wide memories alone;
* ``all``: every project's memories, each hit labelled with its project.

By id, a project reaches its own memories and the user-wide ones (:func:`ccmemory.memories.resolve_id`);
another project's memory is "not found", as before scopes, except to a read that asks for ``all``.

At SessionEnd, a curated memory of the session (added with ``ccmemory add``, ``memory_add`` or the
viewer) that has a near-identical copy in another project is *proposed* for the user's scope
(:func:`propose`): a mark in the metadata of each copy, listed by ``memory_status``, ``ccmemory
stats`` and ``ccmemory scope``. Nothing moves until the user says so (``ccmemory scope ID user``).

Standard library only: SessionStart and SessionEnd use it.
"""

from __future__ import annotations

import json
import re

from .vocabulary import MANUAL_SOURCE, MCP_SOURCE, SEARCH_SCOPES, UI_SOURCE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .db import Database

#: Who writes the memories that may be proposed: people and Claude on purpose, not capture or summaries.
CURATED_SOURCES = (MANUAL_SOURCE, MCP_SOURCE, UI_SOURCE)
#: The metadata key of a proposal, and the one a declined proposal leaves.
PROPOSED = "user_scope_proposed"
DECLINED = "user_scope_declined"
#: Share of distinct words two texts must have in common (of all the words of both) to count as near-identical.
SIMILARITY = 0.8
#: Bounds of the SessionEnd check (1.5 s for every SessionEnd hook): memories looked at, words asked, candidates read.
MAX_CHECKED = 20
QUERY_WORDS = 6
MAX_CANDIDATES = 20
#: The fewest distinct words a memory needs to be compared (shorter ones match too much by chance).
MIN_WORDS = 4
#: The most memories and copies a proposal lists.
MAX_LISTED = 10


def check(scope: Any, allowed: tuple[str, ...] = SEARCH_SCOPES) -> str:
    """``scope`` if it is one of ``allowed``, else a ValidationError naming them."""
    if scope not in allowed:
        from .errors import ValidationError

        raise ValidationError(f"Unknown scope {scope!r}; use one of: {', '.join(allowed)}")
    return str(scope)


def condition(scope: str, project_id: int, alias: str = "") -> tuple[str, tuple[Any, ...]]:
    """The SQL condition on ``memories`` (named ``alias``) selecting what ``scope`` covers from ``project_id``."""
    column = f"{alias}." if alias else ""
    if check(scope) == "project":
        return f"({column}project_id = ? OR {column}scope = 'user')", (project_id,)
    if scope == "user":
        return f"{column}scope = 'user'", ()
    return "1", ()


def visible(memory: Any, scope: str, project_id: int) -> bool:
    """Whether ``scope`` seen from ``project_id`` covers ``memory`` (what :func:`condition` selects)."""
    if scope == "all":
        return True
    return memory.scope == "user" or (scope == "project" and memory.project_id == project_id)


def project_labels(db: Database, project_ids: Any) -> dict[int, dict[str, str]]:
    """The name and path of each project, to label what a search of every project found."""
    wanted = sorted({project for project in project_ids if project is not None})
    if not wanted:
        return {}
    rows = db.rows(f"SELECT id, name, path FROM projects WHERE id IN ({','.join('?' * len(wanted))})", tuple(wanted))
    return {row["id"]: {"name": row["name"], "path": row["path"]} for row in rows}


def label(memory: Any, project_id: int, labels: dict[int, dict[str, str]]) -> str:
    """Where a memory comes from, seen from ``project_id``: "user-wide", "" (this project) or its project."""
    if memory.scope == "user":
        return "user-wide"
    if memory.project_id == project_id:
        return ""
    found = labels.get(memory.project_id)
    return f"project {found['name']} ({found['path']})" if found else f"project #{memory.project_id}"


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


def _similar(left: set[str], right: set[str]) -> bool:
    return bool(left and right) and len(left & right) / len(left | right) >= SIMILARITY


def propose(db: Database, session_id: str) -> int:
    """Mark the session's curated memories that recur near-identically in another project; returns how many.

    Each copy gets the mark (``metadata.user_scope_proposed``: the projects and the ids of the
    copies), so every project concerned lists the proposal. A declined one is never proposed again.
    Only short reads and writes: the keyword index gives a few candidates per memory.
    """
    marks = ",".join("?" * len(CURATED_SOURCES))
    rows = db.rows(
        f"SELECT id, project_id, content, metadata FROM memories WHERE session_id = ? AND scope = 'project' "
        f"AND is_deleted = 0 AND valid_until IS NULL AND source IN ({marks}) ORDER BY seq LIMIT ?",
        (session_id, *CURATED_SOURCES, MAX_CHECKED))
    proposed = 0
    for row in rows:
        metadata = json.loads(row["metadata"] or "{}")
        words = _words(row["content"])
        if DECLINED in metadata or len(words) < MIN_WORDS:
            continue
        asked = sorted(words, key=lambda word: (-len(word), word))[:QUERY_WORDS]
        copies = [found for found in db.rows(
            "SELECT m.id, m.project_id, m.content, m.metadata FROM memories_fts JOIN memories m "
            "ON m.seq = memories_fts.rowid WHERE memories_fts MATCH ? AND m.project_id <> ? AND m.scope = 'project' "
            "AND m.is_deleted = 0 AND m.valid_until IS NULL ORDER BY rank LIMIT ?",
            (" OR ".join(f'"{word}"' for word in asked), row["project_id"], MAX_CANDIDATES))
            if _similar(words, _words(found["content"])) and DECLINED not in json.loads(found["metadata"] or "{}")]
        if not copies:
            continue
        group = [row, *copies][:MAX_LISTED]
        mark = json.dumps({"projects": sorted({copy["project_id"] for copy in group}),
                           "memories": [copy["id"] for copy in group]})
        with db.transaction():
            for copy in group:
                db.execute("UPDATE memories SET metadata = json_set(metadata, ?, json(?)) WHERE id = ?",
                           (f"$.{PROPOSED}", mark, copy["id"]))
        proposed += 1
    return proposed


def proposals(db: Database, project_id: int, limit: int = MAX_LISTED) -> list[dict[str, Any]]:
    """This project's memories proposed for the user's scope, newest first: id, content, the projects they recur in.

    Only curated memories can carry a proposal, so the (project, source) index finds them.
    """
    marks = ",".join("?" * len(CURATED_SOURCES))
    rows = db.rows(
        f"SELECT id, content, json_extract(metadata, ?) AS proposal FROM memories WHERE project_id = ? "
        f"AND source IN ({marks}) AND scope = 'project' AND is_deleted = 0 "
        f"AND json_extract(metadata, ?) IS NOT NULL ORDER BY created_at DESC, seq DESC LIMIT ?",
        (f"$.{PROPOSED}", project_id, *CURATED_SOURCES, f"$.{PROPOSED}", limit))
    found = []
    for row in rows:
        proposal = json.loads(row["proposal"])
        labels = project_labels(db, proposal.get("projects", []))
        found.append({"id": row["id"], "content": row["content"],
                      "projects": [labels[p]["path"] for p in proposal.get("projects", []) if p in labels],
                      "copies": [copy for copy in proposal.get("memories", []) if copy != row["id"]]})
    return found
