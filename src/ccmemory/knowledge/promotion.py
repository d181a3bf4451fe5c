"""Promotion: a discovery memory written out as a knowledge file.

``promote`` writes ``.claude/knowledge/discoveries/<slug>.md`` with front matter
(``promoted_from``, ``promoted_at``) and one H3 section holding the memory, and
marks the memory ``promoted`` in its metadata; it never overwrites a file.
``auto_promote`` does that for every discovery referenced 3+ times in the last 7
days (each search hit is a reference; times are kept in ``memory_references``).
Searches are what add references, so the MCP server and ``ccmemory search`` check
right after a search that returned a discovery (:func:`after_search`); an hourly
check would only find the same discoveries later.

Automatic promotion writes files on its own after ordinary searches, so it is
opt-in: the user's ``promotion.auto_discoveries`` setting (``ccmemory config set
promotion.auto_discoveries true``), in ccmemory's own ``config.json`` and never in
the project's settings, which a cloned repository controls; ``ccmemory promote``
by hand always works. A file is written only inside the project's knowledge
directory, itself inside the project (:func:`ccmemory.safe_files.create_new`): a
``discoveries`` link to anywhere else, even elsewhere in the project, is refused.
"""

from __future__ import annotations

import logging
import os
import re
import time
from dataclasses import dataclass
from typing import Any

from .. import clock, excerpts, memories, safe_files
from ..db import Database
from ..errors import NotFoundError
from .settings import ProjectSettings

MIN_REFERENCES = 3
WINDOW_DAYS = 7
FOLDER = "discoveries"

log = logging.getLogger(__name__)


@dataclass
class Promotion:
    memory_id: str
    action: str  # promoted, already, exists
    path: str  # relative to the project root
    message: str


def slug_of(text: str, limit: int = 60) -> str:
    """A file name from the first line of a memory: ``Entry points: src/index.ts`` -> ``entry-points-src-index-ts``."""
    first = next((line for line in text.splitlines() if line.strip()), "discovery")
    words = re.sub(r"[^a-z0-9]+", "-", first.lower()).strip("-")
    return (words[:limit].rstrip("-") or "discovery")


def title_of(text: str) -> str:
    first = next((line.strip() for line in text.splitlines() if line.strip()), "Discovery")
    first = first.lstrip("#").strip()
    return excerpts.one_line(first, 80)


def _document(memory: memories.Memory, at: str) -> str:
    title = title_of(memory.content)
    body = memory.content.strip()
    first, _, rest = body.partition("\n")
    if first.lstrip("#").strip() == title:
        body = rest.strip() or first
    keywords = [tag for tag in memory.tags if tag]
    lines = ["---", f"promoted_from: {memory.id}", f"promoted_at: {at}", f"category: {memory.category}", "---", "",
             "# Discoveries", "", f"### {title}"]
    if keywords:
        lines.append(f"<!-- keywords: {', '.join(keywords)} -->")
    lines += [body, ""]
    return "\n".join(lines)


def promote(db: Database, memory_id: str, settings: ProjectSettings, project_id: int) -> Promotion:
    """Write one memory to the knowledge tree (never overwriting) and mark it promoted."""
    try:
        memory = memories.get(db, memory_id, project_id=project_id)
    except NotFoundError:
        raise NotFoundError(f"Entry not found: {memory_id}") from None
    info = memory.metadata.get("promotion")  # type-checked: a pulled row may hold anything there
    if isinstance(info, dict) and info.get("promoted") is True:
        path = info.get("path")
        where = path if isinstance(path, str) else ""
        return Promotion(memory.id, "already", where, f"Entry already promoted to {where or 'the knowledge folder'}")
    path = os.path.join(settings.knowledge_dir, FOLDER, f"{slug_of(memory.content)}.md")
    shown = os.path.relpath(path, settings.root)
    existing = Promotion(memory.id, "exists", shown,
                         f"Skipping existing: {shown} (not overwritten; edit it, or rename it and promote again)")
    if os.path.lexists(path):
        return existing
    at = clock.now()
    knowledge = safe_files.make_dirs(settings.knowledge_dir, settings.root)
    try:
        safe_files.create_new(path, _document(memory, at).encode("utf-8"), root=knowledge)
    except FileExistsError:
        return existing
    except safe_files.UnsafeFileError as exc:
        if exc.reason != safe_files.OUTSIDE:
            raise
        raise safe_files.UnsafeFileError(
            f"Not promoted: {shown} resolves outside the knowledge folder {os.path.relpath(knowledge, settings.root)} "
            "(a symbolic link?); promotion writes only inside the project's knowledge folder. Replace the link "
            "with a folder.", exc.reason) from None
    metadata = {**memory.metadata, "promotion": {"promoted": True, "promoted_at": at, "path": shown}}
    memories.rewrite(db, memory.id, memory.content, project_id=project_id, metadata=metadata)
    return Promotion(memory.id, "promoted", shown, f"Promoted {memory.id} to {shown}")


def due(db: Database, project_id: int, *, now: float | None = None) -> list[str]:
    """Ids of the project's unpromoted discoveries referenced 3+ times in the last 7 days."""
    since = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime((now or time.time()) - WINDOW_DAYS * 86400))
    rows = db.rows(
        "SELECT m.id FROM memories m JOIN memory_references r ON r.memory_seq = m.seq "
        "WHERE m.project_id = ? AND m.category = 'discovery' AND m.is_deleted = 0 AND r.at >= ? "
        "AND COALESCE(json_extract(m.metadata, '$.promotion.promoted'), 0) = 0 "
        "GROUP BY m.seq HAVING COUNT(*) >= ? ORDER BY m.seq",
        (project_id, since, MIN_REFERENCES),
    )
    return [row["id"] for row in rows]


def auto_promote(db: Database, project_id: int, settings: ProjectSettings) -> list[Promotion]:
    """Promote every discovery that is due; a file already there is skipped with its warning."""
    return [promote(db, memory_id, settings, project_id) for memory_id in due(db, project_id)]


def enabled() -> bool:
    """Whether the user turned automatic promotion on (``promotion.auto_discoveries`` in ccmemory's config.json)."""
    from .. import config

    return bool(config.load().get("promotion", "auto_discoveries"))


def after_search(db: Database, project_id: int, project_dir: str, hits: list[Any]) -> list[Promotion]:
    """Promote what became due when a search returned a discovery, if the user opted in; never raises
    (the search must answer)."""
    if not any(getattr(hit.memory, "category", None) == "discovery" for hit in hits):
        return []
    try:
        if not enabled():
            return []
        from ..projects import project_root
        from .settings import load

        settings = load(project_root(project_dir))
        if not os.path.isdir(settings.knowledge_dir):
            return []
        return auto_promote(db, project_id, settings)
    except Exception:
        log.warning("Automatic promotion of discoveries failed", exc_info=True)
        return []


def describe(promotions: list[Promotion]) -> list[dict[str, Any]]:
    return [promotion.__dict__ for promotion in promotions]
