"""One run at a time per project: a lock file under ``.claude/memory/`` (indexing from the git hook, discovery).

The file is created exclusively and holds the owner's pid and start time; a
lock whose process is gone, or older than :data:`STALE_SECONDS`, is taken over,
so a crash never leaves a project locked for good.
"""

from __future__ import annotations

import json
import os
import time
from contextlib import contextmanager
from typing import Any, Iterator

STALE_SECONDS = 15 * 60


class Busy(Exception):
    """Another run holds the lock; ``holder`` is what it wrote (pid, started, status)."""

    def __init__(self, path: str, holder: dict[str, Any]) -> None:
        super().__init__(f"{path} is held by pid {holder.get('pid')} since {holder.get('started')}")
        self.path = path
        self.holder = holder


def _alive(pid: Any) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by someone else
        return True
    return True


def read(path: str) -> dict[str, Any] | None:
    """What the holder of a lock wrote, or None when there is no lock."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
        return data if isinstance(data, dict) else {}
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {}


def update(path: str, **status: Any) -> None:
    """Record progress in a lock this process holds (shown to whoever finds it busy)."""
    data = read(path) or {}
    data.update(status)
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(data, handle)


@contextmanager
def held(path: str, **status: Any) -> Iterator[str]:
    """Hold the lock at ``path`` for the block; raises :class:`Busy` when a live run holds it."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    for _ in range(2):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            holder = read(path) or {}
            started = holder.get("started_epoch", 0)
            if _alive(holder.get("pid")) and time.time() - float(started or 0) < STALE_SECONDS:
                raise Busy(path, holder) from None
            try:
                os.remove(path)  # stale: its process is gone or it is far too old
            except FileNotFoundError:
                pass
            continue
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump({"pid": os.getpid(), "started": time.strftime("%Y-%m-%dT%H:%M:%S"),
                       "started_epoch": time.time(), **status}, handle)
        break
    else:
        raise Busy(path, read(path) or {})
    try:
        yield path
    finally:
        try:
            os.remove(path)
        except FileNotFoundError:
            pass
