"""Captures the database could not take, kept in ``<data dir>/spill/`` until a later capture stores them.

The capture child stores its observation in one short transaction. When the database cannot be
written at that moment (its write lock stayed taken past the retries of :mod:`ccmemory.db` during a
long import, a migration or a VACUUM; the file cannot be opened for writing; see
:func:`ccmemory.db.unavailable`), the observation is written here instead of being lost:

- exactly what the store would hold, redacted first by the functions :func:`ccmemory.memories.add`
  runs (:func:`~ccmemory.redaction.redact` on the text, the tool and each file,
  :func:`~ccmemory.redaction.redact_fields` on the metadata), so nothing unredacted touches the disk;
- with what storing it needs: the project root, the session, the call's ``tool_use_id`` (the
  dedupe key), and ``created_at``, the time the hook received the call;
- as ``spill/<nanoseconds>-<random>.json`` (0600, in a 0700 folder refused when it is a symlink or
  another user's), written under a temporary name and renamed, so a half-written file never counts;
- bounded: at most :data:`MAX_FILES` files and :data:`MAX_BYTES` bytes wait; beyond that the new
  observation is dropped (:class:`SpillError`, which the hook logs).

The next capture child that stores its own observation calls :func:`drain`: up to
:data:`DRAIN_PER_RUN` spilled captures, oldest first, each in its own transaction, deduplicated by
``tool_use_id`` as :func:`ccmemory.observations.store` always is. A file is first claimed (renamed to
``<name>.<pid>``, so two captures draining at once never store one twice) and removed only once
its transaction committed; a claim whose process died is given back. A file that cannot be read
or stored is moved to ``spill/bad/`` with the reason returned to the caller, never retried.

A capture stored into a session that has ended since is late: the capture hook then settles and
promotes that session as its end would have (:func:`ccmemory.lifecycle.after_late_capture`).

Standard library only and cheap to import; nothing here logs: the capture hook logs what
:func:`save` raises and what :func:`drain` returns.
"""

from __future__ import annotations

import json
import os
import time

from . import paths
from .errors import CCMemoryError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .db import Database
    from .observations import Observation

SPILL_DIR = "spill"
BAD_DIR = "bad"
SUFFIX = ".json"
#: What may wait at most; beyond, a new capture is dropped (and logged).
MAX_FILES = 1_000
MAX_BYTES = 50_000_000
#: One spilled capture is read at most this big (an observation is at most ~10,000 characters of text).
MAX_RECORD_BYTES = 2_000_000
#: Spilled captures one capture child stores after its own.
DRAIN_PER_RUN = 50
#: ``spill/bad/`` keeps at most this many files; more are deleted instead (the log says so).
MAX_BAD_FILES = 100
#: A temporary file older than this was left by a process that died while writing it.
STALE_TEMPORARY_SECONDS = 3600
FORMAT = 1

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_BINARY = getattr(os, "O_BINARY", 0)


class SpillError(CCMemoryError):
    """A capture could not be kept in the spill folder (full, unsafe, or the disk refused)."""


def folder(db_path: str | None = None) -> str:
    """The spill folder: beside the database (``db_path``, else the data dir's), so finding it costs no look-up."""
    return os.path.join(os.path.dirname(db_path or paths.db_path()), SPILL_DIR)


def _private_folder(path: str) -> str:
    """``path`` as a 0700 folder of this user's, made if missing; SpillError when something else is there."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    if not paths.own_folder(path):
        raise SpillError(f"{path} is a symlink, not a folder, or another user's; ccmemory keeps no capture there. "
                         "Remove it: ccmemory makes its own.")
    if hasattr(os, "getuid"):
        os.chmod(path, 0o700)
    return path


def count() -> int:
    """How many spilled captures wait to be stored (0 when there is no spill folder)."""
    try:
        return sum(1 for name in os.listdir(folder()) if _waiting(name))
    except OSError:
        return 0


def _waiting(name: str) -> bool:
    """A spilled capture, claimed or not (a temporary file, ``bad/`` and stray names are not)."""
    return not name.startswith(".") and (name.endswith(SUFFIX) or _claimer(name) is not None)


def _claimer(name: str) -> int | None:
    """The pid in a claimed file's name ``<name>.json.<pid>``, else None."""
    head, _, pid = name.rpartition(".")
    return int(pid) if head.endswith(SUFFIX) and pid.isdigit() else None


def save(observation: Observation, *, root: str, session_id: str, tool_use_id: str | None,
         created_at: str | None) -> str:
    """Keep ``observation`` (redacted first) for a later capture to store; returns the file written.

    Raises SpillError when the spill folder is full, unsafe, or cannot be written.
    """
    from . import clock
    from .redaction import redact, redact_fields

    record = {
        "format": FORMAT, "root": root, "session_id": session_id, "tool_use_id": tool_use_id,
        "created_at": created_at or clock.now(), "tool": redact(observation.tool),
        "content": redact(observation.content), "files": [redact(name) for name in observation.files],
        "category": observation.category, "salience": observation.salience,
        "metadata": redact_fields(observation.metadata),
    }
    # ASCII JSON: text with a lone surrogate (a payload may carry one) is written and read back unchanged.
    data = json.dumps(record, separators=(",", ":")).encode("ascii")
    try:
        where = folder()
        paths.ensure_private_dir(os.path.dirname(where))
        where = _private_folder(where)
        files, size = _usage(where)
        if files >= MAX_FILES or size + len(data) > MAX_BYTES:
            raise SpillError(f"the spill folder {where} is full ({files} captures, {size / 1e6:.1f} MB; at most "
                             f"{MAX_FILES} and {MAX_BYTES / 1e6:.0f} MB), so this capture is dropped; the next capture "
                             "that reaches the database stores those waiting")
        return _write(where, data)
    except OSError as exc:
        raise SpillError(f"could not write to the spill folder: {exc}") from exc


def _usage(where: str) -> tuple[int, int]:
    """Spilled captures waiting in ``where``, and their bytes."""
    files = size = 0
    for name in os.listdir(where):
        if _waiting(name):
            try:
                size += os.lstat(os.path.join(where, name)).st_size
            except OSError:  # stored meanwhile
                continue
            files += 1
    return files, size


def _write(where: str, data: bytes) -> str:
    """``data`` as a new private file in ``where``, whole or not at all."""
    temporary = os.path.join(where, f".{os.urandom(8).hex()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _BINARY, 0o600)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        target = os.path.join(where, f"{time.time_ns():020d}-{os.urandom(6).hex()}{SUFFIX}")
        os.rename(temporary, target)
    except BaseException:
        paths.remove_quietly(temporary)
        raise
    return target


def drain(db: Database, limit: int = DRAIN_PER_RUN) -> tuple[list[str], list[str]]:
    """Store up to ``limit`` spilled captures, oldest first; returns the session of each capture stored (the
    caller finishes those already over, :func:`ccmemory.lifecycle.after_late_capture`) and what went wrong.

    Costs one failed ``os.listdir`` when nothing was ever spilled. Stops, keeping the rest, when the
    database cannot be written again.
    """
    where = folder(db.path)
    try:
        names = os.listdir(where)
    except OSError:
        return [], []
    if not paths.own_folder(where):
        return [], [f"{where} is a symlink or another user's folder; the captures in it are not read. Remove it."]
    problems: list[str] = []
    given_back = _abandoned(where, names, problems)
    waiting = sorted([name for name in names if name.endswith(SUFFIX) and not name.startswith(".")] + given_back)
    stored: list[str] = []
    for name in waiting[:limit]:
        original = os.path.join(where, name)
        claimed = f"{original}.{os.getpid()}"
        try:
            os.rename(original, claimed)
        except OSError:  # another capture claimed it
            continue
        try:
            record = _read(claimed)
        except (OSError, ValueError) as exc:
            problems.append(_set_aside(where, claimed, name, f"could not be read ({exc})"))
            continue
        try:
            _store(db, record)
        except Exception as exc:
            from .db import unavailable

            if unavailable(exc):
                _give_back(claimed, original)
                problems.append(f"the database could not be written again ({exc}); "
                                "the spilled captures left wait for the next capture")
                break
            problems.append(_set_aside(where, claimed, name, f"could not be stored ({type(exc).__name__}: {exc})"))
            continue
        paths.remove_quietly(claimed)
        stored.append(record["session_id"])
    return stored, problems


def _abandoned(where: str, names: list[str], problems: list[str]) -> list[str]:
    """Claims whose process died (given back under their own name, to be drained again) and stale temporary
    files (removed); returns the names given back."""
    from .locks import alive

    returned = []
    for name in names:
        pid = _claimer(name)
        path = os.path.join(where, name)
        if pid is not None and not alive(pid):
            original = name[:name.rfind(".")]
            if _give_back(path, os.path.join(where, original)):
                returned.append(original)
        elif name.startswith(".") and name.endswith(".tmp"):
            try:
                if time.time() - os.lstat(path).st_mtime > STALE_TEMPORARY_SECONDS:
                    paths.remove_quietly(path)
            except OSError:
                continue
    if returned:
        problems.append(f"{len(returned)} spilled capture(s) claimed by a capture that died are stored again")
    return returned


def _give_back(claimed: str, original: str) -> bool:
    try:
        os.rename(claimed, original)
        return True
    except OSError:
        return False


def _read(path: str) -> dict[str, Any]:
    """A spilled capture, checked; ValueError when it is not one."""
    from .safe_files import read_regular

    record = json.loads(read_regular(path, MAX_RECORD_BYTES, follow=False).decode("utf-8"))
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        raise ValueError(f"not a spilled capture of format {FORMAT}")
    expected: dict[str, tuple[type, ...]] = {
        "root": (str,), "session_id": (str,), "tool_use_id": (str, type(None)), "created_at": (str,),
        "tool": (str,), "content": (str,), "files": (list,), "category": (str,), "salience": (int, float),
        "metadata": (dict,),
    }
    for key, types in expected.items():
        if not isinstance(record.get(key), types) or isinstance(record.get(key), bool):
            raise ValueError(f"its {key!r} is missing or of the wrong type")
    if not record["session_id"] or not all(isinstance(name, str) for name in record["files"]):
        raise ValueError("it names no session, or a file that is not text")
    return record


def _store(db: Database, record: dict[str, Any]) -> None:
    from . import projects
    from .observations import Observation, store

    observation = Observation(record["tool"], record["content"], record["files"], record["category"],
                              float(record["salience"]), record["metadata"])
    project = projects.project_id(db, record["root"])
    store(db, observation, project_id=project, session_id=record["session_id"],
          tool_use_id=record["tool_use_id"], created_at=record["created_at"])


def _set_aside(where: str, claimed: str, name: str, why: str) -> str:
    """Move a spilled capture that cannot be stored to ``bad/`` (deleted when that is full); what happened."""
    bad = os.path.join(where, BAD_DIR)
    try:
        _private_folder(bad)
        if len(os.listdir(bad)) < MAX_BAD_FILES:
            os.rename(claimed, os.path.join(bad, name))
            return f"the spilled capture {name} {why}; moved to {bad}"
    except (OSError, SpillError):
        pass
    paths.remove_quietly(claimed)
    return f"the spilled capture {name} {why}; deleted ({bad} is full or cannot be used)"
