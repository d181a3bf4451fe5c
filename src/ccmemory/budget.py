"""The storage budget: what fills the database, by project and kind, and keeping it under its limits.

Two settings (``storage.budget_mb``, every project together, and ``storage.project_budget_mb``,
one project's share) bound the database file. A project's bytes are an estimate: the file's size
shared out in proportion to what each project stores (text, metadata, vectors, document chunks),
so indexes and free pages are charged to whoever stores most. Kinds: ``observations`` (captured
tool calls), ``summaries`` (session summaries), ``curated`` (everything added by a person, Claude,
an import or the knowledge index), ``documents`` (reference document chunks), ``vectors``.

Over budget (:func:`enforce`; after a consolidation pass, which comes first), memories go
for good, oldest and least salient first: soft-deleted ones past ``gc``'s grace period, then captured
observations by salience (in steps of 0.1), oldest first. Never dropped automatically: anything
not captured (curated memories, knowledge entries, session summaries), memory files and
documents (other tables), anything reinforced, and user-wide memories. Then VACUUM.
"""

from __future__ import annotations

from typing import Any

from . import config as settings, retention, storage
from .db import Database
from .vocabulary import CAPTURE_SOURCE, SUMMARY_SOURCE

MB = 1_000_000
#: Bytes a vector costs beyond its stored int8 values: its sign bits in the vector index and the rows' overhead.
VECTOR_OVERHEAD = 56
KINDS = ("observations", "summaries", "curated", "documents", "vectors")

_RAW = "length(m.content) + length(m.metadata) + length(m.files) + length(m.tags)"


def limits(loaded: settings.Config) -> tuple[int, int]:
    """The budget in bytes: every project together, and one project."""
    return loaded.get("storage", "budget_mb") * MB, loaded.get("storage", "project_budget_mb") * MB


def _stored(db: Database) -> dict[int, dict[str, int]]:
    """Bytes each project stores, by kind (before the file's overhead is shared out)."""
    found: dict[int, dict[str, int]] = {}

    def add(project: int, kind: str, amount: Any) -> None:
        found.setdefault(project, dict.fromkeys(KINDS, 0))[kind] += int(amount or 0)

    for row in db.rows(f"SELECT m.project_id AS project, CASE m.source WHEN ? THEN 'observations' WHEN ? THEN "
                       f"'summaries' ELSE 'curated' END AS kind, SUM({_RAW}) AS bytes FROM memories m GROUP BY 1, 2",
                       (CAPTURE_SOURCE, SUMMARY_SOURCE)):
        add(row["project"], row["kind"], row["bytes"])
    for row in db.rows("SELECT m.project_id AS project, SUM(length(e.vector) + ?) AS bytes FROM memory_embeddings e "
                       "JOIN memories m ON m.seq = e.item_seq GROUP BY 1", (VECTOR_OVERHEAD,)):
        add(row["project"], "vectors", row["bytes"])
    for row in db.rows("SELECT d.project_id AS project, SUM(length(c.content) + length(c.heading)) AS bytes "
                       "FROM chunks c JOIN documents d ON d.id = c.document_id GROUP BY 1"):
        add(row["project"], "documents", row["bytes"])
    for row in db.rows("SELECT d.project_id AS project, SUM(length(e.vector) + ?) AS bytes FROM chunk_embeddings e "
                       "JOIN chunks c ON c.seq = e.item_seq JOIN documents d ON d.id = c.document_id GROUP BY 1",
                       (VECTOR_OVERHEAD,)):
        add(row["project"], "vectors", row["bytes"])
    return found


def usage(db: Database, loaded: settings.Config | None = None) -> dict[str, Any]:
    """The budget and what fills it: the file, the undo log of the latest consolidation, each project by kind."""
    loaded = loaded or settings.load()
    total_budget, project_budget = limits(loaded)
    size = storage.database_bytes(db.path)
    stored = _stored(db)
    raw = sum(sum(kinds.values()) for kinds in stored.values())
    scale = size / raw if raw else 0.0
    paths = {r["id"]: r["path"] for r in db.rows("SELECT id, path FROM projects")}
    projects = sorted(({"id": project, "path": paths.get(project, "?"),
                        "bytes": round(sum(kinds.values()) * scale),
                        "by_kind": {kind: round(amount * scale) for kind, amount in kinds.items()}}
                       for project, kinds in stored.items()), key=lambda p: -p["bytes"])
    return {"database_bytes": size, "budget_bytes": total_budget, "project_budget_bytes": project_budget,
            "undo_log_bytes": int(db.scalar("SELECT COALESCE(SUM(length(data)), 0) FROM consolidation_undo") or 0),
            "over": size > total_budget or any(p["bytes"] > project_budget for p in projects),
            "projects": projects}


def _candidates(db: Database, project_id: int | None, scale: float) -> list[tuple[str, int, float]]:
    """What may go, in the order it goes: (id, project, estimated bytes of the file it frees)."""
    where, params = ("AND m.project_id = ?", (project_id,)) if project_id is not None else ("", ())
    grace = retention.cutoff(retention.DEFAULT_DELETED_AFTER_DAYS)
    rows = db.rows(
        f"SELECT m.id, m.project_id, {_RAW} + COALESCE(length(e.vector) + ?, 0) AS bytes, "
        "CASE WHEN m.is_deleted = 1 THEN 0 ELSE 1 END AS live, round(m.salience, 1) AS band, m.created_at "
        "FROM memories m LEFT JOIN memory_embeddings e ON e.item_seq = m.seq "
        f"WHERE m.scope = 'project' AND ((m.is_deleted = 1 AND COALESCE(m.deleted_at, m.updated_at) < ?) OR "
        f"(m.source = ? AND m.is_deleted = 0 AND m.salience <= m.importance + 1e-9 AND NOT EXISTS "
        f"(SELECT 1 FROM session_memories sm WHERE sm.memory_id = m.id AND sm.usage_type = 'reinforced'))) {where} "
        "ORDER BY live, band, m.created_at, m.seq",
        (VECTOR_OVERHEAD, grace, CAPTURE_SOURCE, *params))
    return [(row["id"], row["project_id"], row["bytes"] * scale) for row in rows]


def _live_bytes(db: Database) -> int:
    """Bytes of the file's pages in use (free pages left by deletions excluded), after a checkpoint."""
    db.rows("PRAGMA wal_checkpoint(TRUNCATE)")
    pages = db.scalar("PRAGMA page_count") - db.scalar("PRAGMA freelist_count")
    return int(pages * db.scalar("PRAGMA page_size"))


def enforce(db: Database, loaded: settings.Config | None = None, *, dry_run: bool = False,
            rounds: int = 3) -> dict[str, Any]:
    """Drop what may go until every project and the whole store are within budget (see the module docstring).

    A project's bytes are an estimate, so a round that leaves the store over budget is followed by another
    (at most ``rounds``).
    """
    loaded = loaded or settings.load()
    first = usage(db, loaded)
    report: dict[str, Any] = {"dry_run": dry_run, "dropped": 0, "by_project": {},
                              "bytes_before": first["database_bytes"], "bytes_after": first["database_bytes"]}
    for _round in range(rounds):
        doomed = _doomed(db, loaded)
        if not doomed:
            break
        report["dropped"] += len(doomed)
        for owner in doomed.values():
            report["by_project"][str(owner)] = report["by_project"].get(str(owner), 0) + 1
        if dry_run:
            break
        retention.drop(db, list(doomed))
        retention.compact(db)
    report["bytes_after"] = storage.database_bytes(db.path)
    return report


def _doomed(db: Database, loaded: settings.Config) -> dict[str, int]:
    """What goes to bring the store within budget: memory id -> its project."""
    now = usage(db, loaded)
    if not now["over"]:
        return {}
    live = _live_bytes(db)
    stored = sum(sum(kinds.values()) for kinds in _stored(db).values())
    scale = live / stored if stored else 0.0
    doomed: dict[str, int] = {}
    freed = 0.0

    def take(candidates: list[tuple[str, int, float]], excess: float) -> None:
        nonlocal freed
        for memory_id, owner, size in candidates:
            if excess <= 0:
                return
            if memory_id not in doomed:
                doomed[memory_id] = owner
                excess -= size
                freed += size

    for project in now["projects"]:
        share = project["bytes"] * live / max(now["database_bytes"], 1)
        if share > now["project_budget_bytes"]:
            take(_candidates(db, project["id"], scale), share - now["project_budget_bytes"])
    if live - freed > now["budget_bytes"]:
        take(_candidates(db, None, scale), live - freed - now["budget_bytes"])
    return doomed
