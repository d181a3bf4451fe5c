"""Which local memories came from teammates through the server, and who shared them when.

Read by search (the label on a hit, and the ``team`` switch that leaves teammates' memories out)
from ``sync_memories``, which the sync round fills (:mod:`ccmemory.team.sync`). My own memories
synced from my other machines are mine: they carry no label and the switch keeps them.
"""

from __future__ import annotations

from typing import Any, Sequence

from ..db import Database


def teammates(db: Database, memory_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """For each of ``memory_ids`` that a teammate shared: ``{"by": role, "at": time shared}``."""
    if not memory_ids:
        return {}
    marks = ",".join("?" * len(memory_ids))
    rows = db.rows(f"SELECT memory_id, owner, shared_at FROM sync_memories WHERE mine = 0 AND memory_id IN ({marks})",
                   tuple(memory_ids))
    return {row["memory_id"]: {"by": row["owner"], "at": row["shared_at"]} for row in rows}


def describe(label: dict[str, Any] | None) -> str:
    """``shared by alice 2026-11-22`` for a label, "" for none."""
    return f"shared by {label['by']} {str(label['at'])[:10]}" if label else ""
