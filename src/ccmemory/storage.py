"""How much disk the data directory takes, by kind of file, and how fast the database grows."""

from __future__ import annotations

import os
import time
from typing import Any

from . import paths
from .db import Database

GROWTH_DAYS = 7


def _kind(name: str) -> str:
    if name.startswith(paths.DB_FILENAME):
        return "backups" if name.endswith(".bak") else "database"
    if name.endswith(".log") or ".log." in name:
        return "logs"
    return "other"


def usage(data_dir: str | None = None) -> dict[str, Any]:
    """Bytes used under the data directory: database (with its WAL and shared memory), backups, logs, other.

    Model caches and environments kept elsewhere are not counted; the walk
    does not follow symbolic links.
    """
    root = data_dir or paths.data_dir()
    totals = {"database": 0, "backups": 0, "logs": 0, "other": 0}
    files = 0
    for folder, _dirs, names in os.walk(root):
        for name in names:
            try:
                size = os.lstat(os.path.join(folder, name)).st_size
            except OSError:  # removed while we walked
                continue
            totals[_kind(name)] += size
            files += 1
    return {"data_dir": root, "total_bytes": sum(totals.values()), "files": files,
            **{f"{kind}_bytes": size for kind, size in totals.items()}}


def database_bytes(path: str) -> int:
    """The database file plus its write-ahead log (committed data lives there until a checkpoint)."""
    return sum(os.path.getsize(path + suffix) for suffix in ("", "-wal") if os.path.exists(path + suffix))


def size_report(db: Database, days: int = GROWTH_DAYS) -> dict[str, Any]:
    """Bytes on disk, bytes per stored memory, and the memories (and their share of bytes) of the last ``days``.

    The growth estimate charges each recent memory the store's average size, vectors and indexes included.
    """
    size = database_bytes(db.path)
    stored = db.scalar("SELECT COUNT(*) FROM memories") or 0
    since = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(time.time() - days * 86400))
    recent = db.scalar("SELECT COUNT(*) FROM memories WHERE created_at >= ?", (since,)) or 0
    per_memory = size / stored if stored else 0.0
    return {"database_bytes": size, "bytes_per_memory": round(per_memory), "growth_days": days,
            "memories_added": recent, "growth_bytes": round(recent * per_memory)}
