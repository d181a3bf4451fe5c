"""One process at a time: the lock file every part of ccmemory takes, and whether a process is alive.

A lock is a file created exclusively, content and all in one step (a reader never finds it half
written), holding its owner's pid, start time and whatever status the owner reports, so whoever
finds it busy can say who holds it and what it is doing. A lock whose process is gone, or older
than its ``stale_after``, or whose record gives no believable start time, is taken over, so neither a
crash nor a lock file a repository commits leaves anything locked for good; a holder removes the file
only while it is still its own (a run that was taken over leaves its successor's lock alone). Callers
pick how to meet a busy lock: give up at once (:class:`Busy`, what indexing, discovery and the runtime
build do) or wait up to ``wait`` seconds (a schema upgrade).

Lock files are read and written without following a symlink, and read at most
:data:`MAX_LOCK_BYTES`: some live in a project's ``.claude/memory``.

A run that finds the lock busy can ask the holder for one more round (:func:`in_rounds`): the
holder may already have read past what the newcomer wanted done, and waiting for it would block
(a ``git commit``, the end of a session).

Standard library only and cheap to import: a schema upgrade, which the hooks may run, takes a lock,
and the capture hook's bookkeeping asks :func:`alive`.
"""

from __future__ import annotations

import errno
import json
import math
import os
import sys
import time
from contextlib import contextmanager

from . import safe_files
from .errors import ValidationError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Iterator, TypeVar

    T = TypeVar("T")

#: A holder older than this is taken for hung and its lock taken over (unless the caller says otherwise).
STALE_SECONDS = 15 * 60
MAX_LOCK_BYTES = 64 * 1024
#: How far a holder's start may lie ahead of this machine's clock (a clock set back since) before the lock is stale.
MAX_CLOCK_SKEW_SECONDS = 600
_POLL_SECONDS = 0.02


def alive(pid: object) -> bool:
    """Whether process ``pid`` runs. A zombie (finished, not yet reaped by its parent) does not.

    Linux says so in ``/proc/<pid>/stat`` (state ``Z``); elsewhere signal 0 tells whether the pid
    exists. Windows has no signal 0 (``os.kill`` would deliver Ctrl+C), so there the process is
    asked for its exit code.
    """
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    if sys.platform == "win32":
        return _alive_on_windows(pid)
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            state = handle.read().rsplit(b")", 1)[1].split()[:1]
        return state not in ([b"Z"], [b"X"])
    except (OSError, IndexError):
        pass  # no /proc (macOS, BSD), or the process just ended: signal 0 settles it
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # it exists, and belongs to someone else
        return True
    return True


def _alive_on_windows(pid: int) -> bool:
    """A process that still runs reports the exit code STILL_ACTIVE; an unknown answer counts as running."""
    import ctypes
    from ctypes import wintypes

    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined]
    handle = kernel32.OpenProcess(0x1000, False, pid)  # PROCESS_QUERY_LIMITED_INFORMATION
    if not handle:
        return ctypes.get_last_error() != 87  # type: ignore[attr-defined]  # ERROR_INVALID_PARAMETER: no such pid
    try:
        code = wintypes.DWORD()
        if not kernel32.GetExitCodeProcess(handle, ctypes.byref(code)):
            return True
        return code.value == 259  # STILL_ACTIVE
    finally:
        kernel32.CloseHandle(handle)


class Busy(Exception):
    """Another run holds the lock; ``holder`` is what it wrote (pid, started, status)."""

    def __init__(self, path: str, holder: dict[str, Any]) -> None:
        super().__init__(f"{path} is held by pid {holder.get('pid')} since {holder.get('started')}")
        self.path = path
        self.holder = holder


def read(path: str) -> dict[str, Any] | None:
    """What the holder of a lock wrote, or None when there is no lock; {} when it cannot be read."""
    if not os.path.lexists(path):
        return None
    try:
        data = json.loads(safe_files.read_regular(path, MAX_LOCK_BYTES, follow=False))
        if isinstance(data, int) and not isinstance(data, bool):
            # A bare pid: how the MCP launcher wrote its build lock before it took this one; aged by the file.
            return {"pid": data, "started_epoch": os.lstat(path).st_mtime}
        return data if isinstance(data, dict) else {}
    except safe_files.UnsafeFileError as exc:
        return None if exc.code == errno.ENOENT else {}
    except (OSError, ValueError, RecursionError, ValidationError):
        return {}


def _write(path: str, data: dict[str, Any]) -> str:
    """Write ``data`` to a new temporary file beside ``path`` (with the same extension); returns its name."""
    stem, extension = os.path.splitext(path)
    temporary = f"{stem}.{os.urandom(16).hex()}.tmp{extension}"
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


def is_stale(holder: dict[str, Any], stale_after: float = STALE_SECONDS) -> bool:
    """Whether a lock's holder is gone (dead pid, unreadable lock), has held it ``stale_after`` seconds, or
    wrote no believable start time.

    Some locks live in a project's ``.claude/memory``, where a repository can commit one: with pid 1
    (always alive) and a start time that never ages (``1e300``, NaN, text) it would hold the lock for
    good. So a start that is not a finite number, or lies more than :data:`MAX_CLOCK_SKEW_SECONDS` ahead
    of this machine's clock, counts as stale, as a missing one always did.
    """
    started = holder.get("started_epoch")
    if isinstance(started, bool) or not isinstance(started, (int, float)):
        return True
    try:
        age = time.time() - float(started)
    except OverflowError:  # a whole number too large for a float
        return True
    if not math.isfinite(age) or age < -MAX_CLOCK_SKEW_SECONDS:
        return True
    return not alive(holder.get("pid")) or age >= stale_after


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


def _release(path: str, token: str) -> None:
    if (read(path) or {}).get("token") == token:  # else taken over as stale meanwhile: the file is the new holder's
        _remove(path)


@contextmanager
def held(path: str, *, wait: float = 0.0, stale_after: float = STALE_SECONDS, **status: Any) -> Iterator[str]:
    """Hold the lock at ``path`` for the block; ``status`` is written into it for whoever finds it busy.

    Raises :class:`Busy` when a live run holds it, after waiting up to ``wait`` seconds for that run
    to let go. Its folder is made if missing: callers pass one they own.
    """
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    token = os.urandom(16).hex()
    deadline = time.monotonic() + wait
    attempts = 0
    while not _create(path, {"pid": os.getpid(), "started": time.strftime("%Y-%m-%dT%H:%M:%S"),
                             "started_epoch": time.time(), "token": token, **status}):
        attempts += 1
        holder = read(path)
        if holder is not None and not is_stale(holder, stale_after):
            if time.monotonic() >= deadline:
                raise Busy(path, holder)
            time.sleep(_POLL_SECONDS)
        elif attempts >= 2 and time.monotonic() >= deadline:
            raise Busy(path, holder or {})
        else:
            _remove(path)  # stale: its process is gone or it is far too old
    try:
        yield path
    finally:
        _release(path, token)


def request_path(path: str) -> str:
    """Where a run that found ``path`` busy asks for one more round: ``index.lock`` -> ``index.again.lock``.

    It ends like the lock, so whatever keeps lock files out of git (the ``.gitignore`` init writes
    into ``.claude/memory``) keeps it out too.
    """
    stem, extension = os.path.splitext(path)
    return f"{stem}.again{extension}"


def ask_for_another_round(path: str) -> None:
    """Ask the run holding ``path`` for one more round (:func:`in_rounds`): it runs again for what came since."""
    with safe_files.open_text_for_writing(request_path(path)) as handle:
        handle.write(str(os.getpid()))


def _requested(path: str) -> bool:
    return os.path.exists(request_path(path))


def in_rounds(path: str, work: Callable[[], T], *, ask_holder: bool = False, stale_after: float = STALE_SECONDS,
              **status: Any) -> list[T]:
    """Run ``work`` under the lock at ``path``, and again for each request made while it ran; its results.

    Raises :class:`Busy` when a live run holds the lock. With ``ask_holder``
    that run has first been asked for one more round, so what made this call
    (a commit's changes) is done once it is done; nothing waits for it.

    No request is lost: a requester asks first and then tries the lock once
    more, and a holder looks for requests after releasing the lock too, so one
    of the two sees the other. An exception from ``work`` ends the rounds (and
    leaves any request for the next run).
    """
    try:
        return _rounds(path, work, stale_after, status)
    except Busy:
        if not ask_holder:
            raise
        ask_for_another_round(path)
        return _rounds(path, work, stale_after, status)


def _rounds(path: str, work: Callable[[], T], stale_after: float, status: dict[str, Any]) -> list[T]:
    results: list[T] = []
    while not results or _requested(path):
        try:
            with held(path, stale_after=stale_after, **status):
                while not results or _requested(path):
                    _remove(request_path(path))  # before doing anything: what came before the request is seen
                    results.append(work())
        except Busy:
            if not results:
                raise
            break  # a newer run got the lock after this one released it, and does everything after the request
    return results
