"""One run at a time per project: a lock file under ``.claude/memory/`` (indexing, discovery).

The file is created exclusively, content and all in one step (a reader never
finds it half written), and holds the owner's pid and start time; a
lock whose process is gone, or older than :data:`STALE_SECONDS`, is taken over,
so a crash never leaves a project locked for good. A holder removes the file
only while it is still its own (a run that was taken over leaves its successor's lock alone).

The folder is the real path :meth:`ProjectSettings.writable_memory_dir` checked
to be inside the project; lock files are read and written there without
following a symlink, and read at most :data:`MAX_LOCK_BYTES`.

A run that finds the lock busy can ask the holder for one more round
(:func:`in_rounds`): the holder may already have read past the files the
newcomer wanted indexed, and waiting for it would block a ``git commit``.
"""

from __future__ import annotations

import errno
import json
import os
import time
import uuid
from contextlib import contextmanager
from typing import Any, Callable, Iterator, TypeVar

from .. import safe_files
from ..errors import ValidationError
from ..safe_files import open_text_for_writing

STALE_SECONDS = 15 * 60
MAX_LOCK_BYTES = 64 * 1024

T = TypeVar("T")


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
    if not os.path.lexists(path):
        return None
    try:
        data = json.loads(safe_files.read_regular(path, MAX_LOCK_BYTES, follow=False))
        return data if isinstance(data, dict) else {}
    except safe_files.UnsafeFileError as exc:
        return None if exc.code == errno.ENOENT else {}
    except (OSError, ValueError, RecursionError, ValidationError):
        return {}


def _write(path: str, data: dict[str, Any]) -> str:
    """Write ``data`` to a new temporary file beside ``path`` (ending in ``.lock`` too); returns its name."""
    stem, extension = os.path.splitext(path)
    temporary = f"{stem}.{uuid.uuid4().hex}.tmp{extension}"
    fd = safe_files.open_fd(temporary, write=True, follow=False, flags=os.O_CREAT | os.O_EXCL)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(data, handle)
    return temporary


def update(path: str, **status: Any) -> None:
    """Record progress in a lock this process holds (shown to whoever finds it busy).

    Replaced in one step: a reader never sees a half-written lock, which it would take for a broken, stale one.
    """
    data = read(path) or {}
    data.update(status)
    os.replace(_write(path, data), path)


def _create(path: str, data: dict[str, Any]) -> bool:
    """Create the lock with its content in one step (a hard link of a written file); False when it exists."""
    temporary = _write(path, data)
    try:
        os.link(temporary, path)
        return True
    except FileExistsError:
        return False
    except OSError:  # a file system without hard links: exclusive create, then write
        try:
            fd = safe_files.open_fd(path, write=True, follow=False, flags=os.O_CREAT | os.O_EXCL)
        except safe_files.UnsafeFileError as exc:
            if exc.code == errno.EEXIST:
                return False
            raise
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle)
        return True
    finally:
        os.remove(temporary)


def is_stale(holder: dict[str, Any]) -> bool:
    """Whether a lock's holder is gone (dead pid, unreadable lock) or has held it longer than STALE_SECONDS."""
    started = holder.get("started_epoch", 0)
    try:
        age = time.time() - float(started or 0)
    except (TypeError, ValueError):
        return True
    return not _alive(holder.get("pid")) or age >= STALE_SECONDS


def _release(path: str, token: str) -> None:
    if (read(path) or {}).get("token") != token:
        return  # taken over as stale meanwhile: the file is the new holder's
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


@contextmanager
def held(path: str, **status: Any) -> Iterator[str]:
    """Hold the lock at ``path`` for the block; raises :class:`Busy` when a live run holds it.

    Its folder is made if missing: callers pass one already checked to be inside the project.
    """
    os.makedirs(os.path.dirname(path), exist_ok=True)
    token = uuid.uuid4().hex
    for _ in range(2):
        mine = {"pid": os.getpid(), "started": time.strftime("%Y-%m-%dT%H:%M:%S"), "started_epoch": time.time(),
                "token": token, **status}
        if _create(path, mine):
            break
        holder = read(path)
        if holder is not None and not is_stale(holder):
            raise Busy(path, holder)
        try:
            os.remove(path)  # stale: its process is gone or it is far too old
        except FileNotFoundError:
            pass
    else:
        raise Busy(path, read(path) or {})
    try:
        yield path
    finally:
        _release(path, token)


def request_path(path: str) -> str:
    """Where a run that found ``path`` busy asks for one more round: ``index.lock`` -> ``index.again.lock``.

    It ends in ``.lock`` so the ``.gitignore`` init writes into ``.claude/memory`` keeps it out of git.
    """
    stem, extension = os.path.splitext(path)
    return f"{stem}.again{extension}"


def _requested(path: str) -> bool:
    return os.path.exists(request_path(path))


def _clear_request(path: str) -> None:
    try:
        os.remove(request_path(path))
    except FileNotFoundError:
        pass


def in_rounds(path: str, work: Callable[[], T], *, ask_holder: bool = False, **status: Any) -> list[T]:
    """Run ``work`` under the lock at ``path``, and again for each request made while it ran; its results.

    Raises :class:`Busy` when a live run holds the lock. With ``ask_holder``
    that run has first been asked for one more round, so what made this call
    (a commit's changes) is indexed once it is done; nothing waits for it.

    No request is lost: a requester asks first and then tries the lock once
    more, and a holder looks for requests after releasing the lock too, so one
    of the two sees the other.
    """
    try:
        return _rounds(path, work, status)
    except Busy:
        if not ask_holder:
            raise
        with open_text_for_writing(request_path(path)) as handle:
            handle.write(str(os.getpid()))
        return _rounds(path, work, status)


def _rounds(path: str, work: Callable[[], T], status: dict[str, Any]) -> list[T]:
    results: list[T] = []
    while not results or _requested(path):
        try:
            with held(path, **status):
                while not results or _requested(path):
                    _clear_request(path)  # before reading anything: what came before the request is seen
                    results.append(work())
        except Busy:
            if not results:
                raise
            break  # a newer run got the lock after this one released it, and reads everything after the request
    return results
