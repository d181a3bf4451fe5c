"""How much disk the data directory takes, by kind of file."""

from __future__ import annotations

import os
from typing import Any

from . import paths


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
