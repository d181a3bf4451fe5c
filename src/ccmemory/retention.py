"""Garbage collection (``ccmemory gc``): retention by age, tier and sector, purge of soft deletes, VACUUM.

What goes, by default:

* **expired** memories: older than ``older_than_days`` (90), in the ``session`` tier (observations
  that SessionEnd did not promote), any sector unless ``sectors`` narrows it. Project-tier
  memories (decisions, summaries, anything promoted or added by hand) never expire unless the
  ``project`` tier is asked for;
* **purged** memories: soft-deleted more than ``deleted_after_days`` (30) ago;

then ``VACUUM`` gives the space back to the file system, so deleted text leaves the database
file too. A memory that a removed memory superseded is shown again (the supersede rule of
:func:`ccmemory.memories.delete`). ``dry_run`` counts and changes nothing.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

from . import memories
from .db import Database
from .errors import ValidationError
from .vocabulary import SECTORS, TIERS

DEFAULT_OLDER_THAN_DAYS = 90
DEFAULT_DELETED_AFTER_DAYS = 30
DEFAULT_TIERS = ("session",)
_BATCH = 500


@dataclass
class GcReport:
    """What a collection removed (or, in a dry run, would remove)."""

    dry_run: bool
    expired: int = 0
    purged: int = 0
    by_sector: dict[str, int] = field(default_factory=dict)
    bytes_before: int = 0
    bytes_after: int = 0

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def cutoff(days: float) -> str:
    """The ISO timestamp ``days`` ago, in the store's format (sortable as text)."""
    moment = time.time() - days * 86400
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(moment)) + ".%03dZ" % (int(moment * 1000) % 1000)


def _file_bytes(path: str) -> int:
    return sum(os.path.getsize(p) for p in (path, f"{path}-wal") if os.path.exists(p))


def _doomed(db: Database, *, project_id: int | None, older_than_days: float, tiers: Sequence[str],
            sectors: Sequence[str] | None, deleted_after_days: float) -> tuple[list[dict[str, Any]], int]:
    """Rows to remove (seq, id, sector, why) and how many of them are expired (the rest are purged)."""
    scope, params = ("AND project_id = ?", [project_id]) if project_id is not None else ("", [])
    tier_marks = ",".join("?" * len(tiers))
    sector_clause, sector_params = "", []  # type: str, list[Any]
    if sectors:
        sector_clause = f"AND sector IN ({','.join('?' * len(sectors))})"
        sector_params = list(sectors)
    expired = db.rows(
        f"SELECT seq, id, sector FROM memories WHERE is_deleted = 0 AND created_at < ? AND tier IN ({tier_marks}) "
        f"{sector_clause} {scope} ORDER BY seq",
        (cutoff(older_than_days), *tiers, *sector_params, *params),
    )
    purged = db.rows(
        f"SELECT seq, id, sector FROM memories WHERE is_deleted = 1 AND COALESCE(deleted_at, updated_at) < ? "
        f"{scope} ORDER BY seq",
        (cutoff(deleted_after_days), *params),
    )
    return expired + purged, len(expired)


def collect(
    db: Database,
    *,
    project_id: int | None,
    older_than_days: float = DEFAULT_OLDER_THAN_DAYS,
    tiers: Sequence[str] = DEFAULT_TIERS,
    sectors: Sequence[str] | None = None,
    deleted_after_days: float = DEFAULT_DELETED_AFTER_DAYS,
    vacuum: bool = True,
    dry_run: bool = False,
) -> GcReport:
    """Remove expired and long-deleted memories of one project (None: every project), then VACUUM."""
    for value, what in ((older_than_days, "older_than_days"), (deleted_after_days, "deleted_after_days")):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise ValidationError(f"{what} must be a number of days, 0 or more; got {value!r}")
    for tier in tiers:
        if tier not in TIERS:
            raise ValidationError(f"Unknown tier {tier!r}; use one of: {', '.join(TIERS)}")
    for sector in sectors or ():
        if sector not in SECTORS:
            raise ValidationError(f"Unknown sector {sector!r}; use one of: {', '.join(SECTORS)}")
    report = GcReport(dry_run=dry_run, bytes_before=_file_bytes(db.path))
    doomed, expired = _doomed(db, project_id=project_id, older_than_days=older_than_days, tiers=tiers,
                              sectors=sectors, deleted_after_days=deleted_after_days)
    report.expired, report.purged = expired, len(doomed) - expired
    for row in doomed:
        report.by_sector[row["sector"]] = report.by_sector.get(row["sector"], 0) + 1
    if dry_run:
        report.bytes_after = report.bytes_before
        return report
    drop(db, [row["id"] for row in doomed])
    if vacuum:
        compact(db)
    report.bytes_after = _file_bytes(db.path)
    return report


def drop(db: Database, memory_ids: Sequence[str]) -> None:
    """Delete memories for good, in short transactions; what one of them superseded is shown again.

    The latest consolidation pass's undo log goes too: undoing it after this would bring back a store that
    never existed (what it merged or folded without what went here).
    """
    if memory_ids:
        with db.transaction():
            db.execute("DELETE FROM consolidation_undo")
    for start in range(0, len(memory_ids), _BATCH):
        batch = list(memory_ids[start:start + _BATCH])
        marks = ",".join("?" * len(batch))
        db.give_way()
        with db.transaction():
            replaced = [r["target_id"] for r in db.rows(
                f"SELECT target_id FROM memory_relationships WHERE relationship_type = 'SUPERSEDES' "
                f"AND source_id IN ({marks})", tuple(batch))]
            db.execute(f"DELETE FROM memories WHERE id IN ({marks})", tuple(batch))
            memories.refresh_superseded(db, replaced)


def compact(db: Database) -> None:
    """Merge the keyword index's segments (deletions stay there as markers until then), then VACUUM: give freed
    pages back to the file system, so removed text leaves the file too."""
    with db.transaction():
        db.execute("INSERT INTO memories_fts(memories_fts) VALUES ('optimize')")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.execute("VACUUM")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
