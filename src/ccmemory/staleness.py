"""Whether the files a memory names are still as they were when it was recorded.

A memory that says "apply_discount lives in pricing.py" is only as true as pricing.py. So
capture records, beside each observation, the state of the project files it names
(:func:`record`: ``metadata["seen"]``, the path relative to the project with its size and
modification time in nanoseconds), and search and SessionStart compare it with the files as
they are now (:func:`check`):

* same size and modification time: **unchanged**;
* no regular file there any more: **gone**;
* otherwise **changed**, unless the content is provably the same: the ``file_fingerprints``
  cache holds a CRC-32 of a file's content as it was at a given size and modification time,
  learnt whenever a check finds a file unchanged; when the recorded state has one and the
  file now has the same fingerprint (a ``touch``, a checkout back and forth, a formatter that
  changed nothing), it is unchanged.

Why stat at capture and a fingerprint later: the capture hook runs on every tool call, and a
``stat`` costs microseconds while reading and hashing a file costs I/O proportional to its
size (and ``hashlib`` alone costs the hook ~10 ms to import). A file whose size and
modification time are those recorded still has the content recorded, so its fingerprint can
be taken later, off the hook path, by the first search that sees it. CRC-32 (``zlib``) detects
accidental change; a deliberate collision would only make one stale memory look current.

Nothing is deleted or rewritten: an edit of a file by a later session makes the older
memories about it stale because the file they describe is no longer there as it was, while
the edit's own observation recorded the file as the edit left it, so it stays current.

**Which function changed.** A file changes one function at a time, and a memory about
``apply_tax`` is not made wrong by an edit of ``apply_discount``. The capture hook already
records, for an Edit, the function or class it changed (``metadata["scope"]``,
:func:`ccmemory.observations.edit_scope`). So when a file a memory recorded has changed,
:func:`check` looks at the file-changing observations (:data:`FILE_CHANGING_TOOLS`) of the
same project made after the memory that recorded that file:

* the memory names (in its text or its own ``scope``) a function one of them changed: stale
  *for that function* (``function``: ``apply_discount in pricing.py changed since``), the full
  penalty;
* every one of them names a function, none of which the memory names, the file now is as the
  last of them left it, and the memory is about another function of the file (its own
  ``scope``, or its text names a function or class the file defines now, found by a bounded
  scan for ``def``/``class``/``function``/``func``/``fn`` lines, :func:`definitions`; only when
  ``learn``, so SessionStart reads no file for it): the change is accounted for and lies
  elsewhere (``elsewhere``: the functions changed; ``pricing.py changed elsewhere
  (apply_discount)``), a soft mark (:func:`only_elsewhere`; search keeps more of its score);
* otherwise (a Write, an edit without a known function, a change made outside Claude Code
  after the last edit, a memory about the whole file such as a Read, or no later observation
  at all): the file changed, as before.

The attribution uses no file content: a change made outside Claude Code between two edits of
the same file is taken for theirs.

Paths are confined to the project (:mod:`ccmemory.safe_files`): a path is resolved (symlinks
followed) and used only when its real location is inside the project's real root; a symlink
that points out of the project is never statted or read. Content is read only to fingerprint
it, bounded to :data:`MAX_FINGERPRINT_BYTES`, through :func:`ccmemory.safe_files.read_head`
with the root checked on the opened descriptor; larger files are compared by stat alone.

Standard library only and cheap to import: the capture and SessionStart hooks use it.
"""

from __future__ import annotations

import os
import stat

from .safe_files import under

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Iterable, Sequence
    from .db import Database

#: The metadata key of the recorded states: ``{relative path: [size, mtime_ns]}``.
SEEN_KEY = "seen"
#: Files whose state one memory records (the first ones it names; a search lists many more).
MAX_SEEN = 5
#: Larger files are compared by size and modification time only.
MAX_FINGERPRINT_BYTES = 1_000_000
CHANGED = "changed"
GONE = "gone"
#: The tools that change the files they name (their observations tell which function changed).
FILE_CHANGING_TOOLS = ("Write", "Edit", "MultiEdit", "NotebookEdit")


def _real_inside(path: str, real_root: str) -> str | None:
    """The real path of ``path`` when it lies inside ``real_root`` (symlinks followed), else None."""
    try:
        real = os.path.realpath(path)
    except (OSError, ValueError):
        return None
    return real if real != real_root and under(real, real_root) else None


def _resolve(path: str, real_root: str, folders: dict[str, str | None]) -> tuple[str | None, tuple[int, int] | None]:
    """The real path of ``path`` when inside ``real_root`` (else None), and its :func:`_state`.

    The real path of each folder is worked out (links followed) and checked once per ``folders`` (a
    check's cache); the last component then needs one ``lstat``, unless it is itself a link, which is
    resolved and checked in full.
    """
    folder, name = os.path.split(path)
    if folder not in folders:
        try:
            resolved = os.path.realpath(folder)
        except (OSError, ValueError):
            resolved = ""
        folders[folder] = resolved if under(resolved, real_root) else None
    real_folder = folders[folder]
    if real_folder is None:
        return None, None
    candidate = os.path.join(real_folder, name)
    try:
        info = os.lstat(candidate)
    except (OSError, ValueError):
        return candidate, None  # gone
    if stat.S_ISLNK(info.st_mode):
        real = _real_inside(candidate, real_root)
        return real, _state(real) if real else None
    return candidate, (info.st_size, info.st_mtime_ns) if stat.S_ISREG(info.st_mode) else None


def _state(real: str) -> tuple[int, int] | None:
    """(size, mtime_ns) of a regular file, or None when there is none."""
    try:
        info = os.stat(real)
    except (OSError, ValueError):
        return None
    return (info.st_size, info.st_mtime_ns) if stat.S_ISREG(info.st_mode) else None


def record(files: Iterable[str], root: str) -> dict[str, list[int]]:
    """The state of the regular files among ``files`` (absolute paths) that lie inside ``root``.

    Keyed by the path relative to the project's real root, so a project that moves keeps its
    records. Paths outside the project, directories and missing files are left out; nothing is read.
    """
    real_root = os.path.realpath(root)
    seen: dict[str, list[int]] = {}
    for path in files:
        if len(seen) >= MAX_SEEN:
            break
        real = _real_inside(path, real_root)
        state = _state(real) if real else None
        if real and state:
            seen[real[len(real_root.rstrip(os.sep)) + 1:]] = [state[0], state[1]]
    return seen


def fingerprint(real: str, root: str) -> int | None:
    """CRC-32 of a file's content read within ``root`` (at most :data:`MAX_FINGERPRINT_BYTES`), or None."""
    import zlib

    from .errors import ValidationError
    from .safe_files import read_head

    try:
        data = read_head(real, MAX_FINGERPRINT_BYTES + 1, root=root)
    except (ValidationError, OSError):
        return None
    return None if len(data) > MAX_FINGERPRINT_BYTES else zlib.crc32(data)


def _known(db: Database, real: str, state: Sequence[int]) -> int | None:
    return db.scalar("SELECT crc FROM file_fingerprints WHERE path = ? AND size = ? AND mtime_ns = ?",
                     (real, state[0], state[1]))


#: (database, path, size, mtime_ns) whose fingerprint this process knows is cached (a long-lived server asks once).
_LEARNT: set[tuple[str, str, int, int]] = set()
_LEARNT_MAX = 50_000


def _to_learn(db: Database, real: str, root: str, state: tuple[int, int]) -> tuple[str, int, int, int] | None:
    """The fingerprint row of ``real`` at ``state`` when the cache lacks it (and the file is still at that state
    once read), else None."""
    if (db.path, real, *state) in _LEARNT or state[0] > MAX_FINGERPRINT_BYTES:
        return None
    if _known(db, real, state) is not None:
        _remember((db.path, real, *state))
        return None
    crc = fingerprint(real, root)
    return (real, *state, crc) if crc is not None and _state(real) == state else None


def _remember(key: tuple[str, str, int, int]) -> None:
    if len(_LEARNT) >= _LEARNT_MAX:
        _LEARNT.clear()
    _LEARNT.add(key)


def _store(db: Database, learnt: list[tuple[str, int, int, int]]) -> None:
    """Add fingerprints to the cache in one short transaction; a locked store skips them (a cache, asked again later)."""
    from .errors import StorageError

    try:
        with db.transaction():
            for row in learnt:
                db.execute("INSERT OR IGNORE INTO file_fingerprints(path, size, mtime_ns, crc) VALUES (?, ?, ?, ?)", row)
    except StorageError:
        return
    for path, size, mtime_ns, _ in learnt:
        _remember((db.path, path, size, mtime_ns))


def _iso(mtime_ns: int) -> str:
    import time

    seconds = mtime_ns / 1e9
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{int(seconds % 1 * 1000):03d}Z"


def roots(db: Database, project_ids: Iterable[int]) -> dict[int, str]:
    """The real path of each project's location that exists here as a directory (a project elsewhere is not
    checked)."""
    wanted = sorted(set(project_ids))
    if not wanted:
        return {}
    rows = db.rows(f"SELECT id, path FROM projects WHERE id IN ({','.join('?' * len(wanted))})", tuple(wanted))
    return {row["id"]: os.path.realpath(row["path"]) for row in rows if os.path.isdir(row["path"])}


def check(db: Database, memories: Iterable[Any], *, learn: bool = True) -> dict[str, list[dict[str, Any]]]:
    """For each memory whose recorded files changed or are gone: ``[{file, change, since, changed_at}]``.

    ``file`` is relative to the project, ``change`` :data:`CHANGED` or :data:`GONE`, ``since`` when
    the memory recorded the file (its ``created_at``), ``changed_at`` the file's modification time
    now (None when gone). Memories that record no files, or whose project is not on this machine,
    are left out. ``learn`` fingerprints the unchanged files not yet in the cache (reads them,
    bounded, and writes the cache); SessionStart passes False and only reads the files whose
    recorded state has a fingerprint.
    """
    memories = [m for m in memories if isinstance(m.metadata.get(SEEN_KEY), dict) and m.metadata[SEEN_KEY]]
    places = roots(db, (m.project_id for m in memories))
    found: dict[str, list[dict[str, Any]]] = {}
    #: (root, relative path) -> (real path, its state now); real path None: outside the project, not looked at.
    now_of: dict[tuple[str, str], tuple[str | None, tuple[int, int] | None]] = {}
    folders: dict[str, str | None] = {}
    learnt: list[tuple[str, int, int, int]] = []
    for memory in memories:
        real_root = places.get(memory.project_id)
        if real_root is None:
            continue
        stale = []
        for relative, recorded in memory.metadata[SEEN_KEY].items():
            if not (isinstance(relative, str) and isinstance(recorded, list) and len(recorded) == 2):
                continue
            if (real_root, relative) not in now_of:
                now_of[real_root, relative] = _resolve(os.path.normpath(os.path.join(real_root, relative)),
                                                       real_root, folders)
            real, now = now_of[real_root, relative]
            if real is None:  # outside the project now (a symlink turned outwards): not looked at
                continue
            if now is None:
                stale.append({"file": relative, "change": GONE, "since": memory.created_at, "changed_at": None})
            elif list(now) == recorded:
                row = _to_learn(db, real, real_root, now) if learn else None
                if row is not None:
                    learnt.append(row)
            elif not _same_content(db, real, real_root, recorded, now):
                stale.append({"file": relative, "change": CHANGED, "since": memory.created_at,
                              "changed_at": _iso(now[1])})
        if stale:
            found[memory.id] = stale
    if learnt:
        _store(db, learnt)
    if found:
        _attribute(db, [m for m in memories if m.id in found], found, now_of, places, read=learn)
    return found


#: Per (database, project): the highest ``seq`` looked at and the scoped edits up to it (:func:`_scoped_edits`).
_EDITS: dict[tuple[str, int], tuple[int, list[tuple[str, str, str, dict[str, Any]]]]] = {}
_EDITS_MAX = 100_000


def _scoped_edits(db: Database, project_id: int, since: str) -> list[tuple[str, str, str, dict[str, Any]]]:
    """(created_at, id, scope, seen) of the project's file-changing observations made after ``since`` that name the
    function they changed, oldest first.

    Memories are only ever appended (a higher ``seq``), and a pass never merges or folds an edit, so the list is
    kept per process and extended by the rows added since (a long-lived server reads each row once; a search
    that checks several batches of hits scans once). The cheap text test (a ``scope`` key in the metadata)
    comes first, so the JSON of the other rows is never parsed."""
    import json

    key = (db.path, project_id)
    done, edits = _EDITS.get(key, (0, []))
    top = db.scalar("SELECT COALESCE(MAX(seq), 0) FROM memories") or 0
    if top > done:
        marks = ",".join("?" * len(FILE_CHANGING_TOOLS))
        for row in db.rows(
                f"SELECT created_at, id, json_extract(metadata, '$.scope') AS scope, "
                f"json_extract(metadata, '$.{SEEN_KEY}') AS seen FROM memories "
                f"WHERE seq > ? AND seq <= ? AND project_id = ? AND is_deleted = 0 "
                f"AND instr(metadata, '\"scope\"') > 0 AND json_extract(metadata, '$.tool') IN ({marks})",
                (done, top, project_id, *FILE_CHANGING_TOOLS)):
            try:
                seen = json.loads(row["seen"]) if isinstance(row["seen"], str) else None
            except ValueError:
                continue
            if isinstance(seen, dict) and isinstance(row["scope"], str) and row["scope"]:
                edits.append((row["created_at"], row["id"], row["scope"], seen))
        edits.sort(key=lambda edit: edit[0])
        if sum(len(known) for _, known in _EDITS.values()) > _EDITS_MAX:
            _EDITS.clear()
        _EDITS[key] = (top, edits)
    return [edit for edit in edits if edit[0] > since]


def _unscoped_change(db: Database, project_id: int, after: str, until: str, relative: str) -> bool:
    """Whether a file-changing observation that names no function recorded ``relative`` between the two times."""
    import json

    marks = ",".join("?" * len(FILE_CHANGING_TOOLS))
    for row in db.rows(
            f"SELECT json_extract(metadata, '$.{SEEN_KEY}') AS seen FROM memories "
            f"WHERE project_id = ? AND created_at > ? AND created_at <= ? AND is_deleted = 0 AND instr(files, ?) > 0 "
            f"AND json_extract(metadata, '$.tool') IN ({marks}) AND json_extract(metadata, '$.scope') IS NULL",
            (project_id, after, until, os.path.basename(relative), *FILE_CHANGING_TOOLS)):
        try:
            seen = json.loads(row["seen"]) if isinstance(row["seen"], str) else None
        except ValueError:
            continue
        if isinstance(seen, dict) and relative in seen:
            return True
    return False


def _attribute(db: Database, memories: list[Any], found: dict[str, list[dict[str, Any]]],
               now_of: dict[tuple[str, str], tuple[str | None, tuple[int, int] | None]],
               places: dict[int, str], *, read: bool) -> None:
    """Say, for each changed file of a stale memory, which function a later edit changed (see the module's doc)."""
    later: dict[int, list[tuple[str, str, str, dict[str, Any]]]] = {}
    for project_id in {m.project_id for m in memories}:
        mine = [m for m in memories if m.project_id == project_id]
        changed = any(entry["change"] == CHANGED for m in mine for entry in found[m.id])
        later[project_id] = _scoped_edits(db, project_id, min(m.created_at for m in mine)) if changed else []
    defined: dict[str, list[str]] = {}
    for memory in memories:
        own = _named_scope(memory)
        for entry in found[memory.id]:
            if entry["change"] != CHANGED:
                continue
            edits = [(created_at, scope, seen[entry["file"]]) for created_at, other, scope, seen
                     in later[memory.project_id]
                     if created_at > memory.created_at and other != memory.id and entry["file"] in seen]
            scopes = list(dict.fromkeys(scope for _, scope, _ in edits))
            hit = [scope for scope in scopes if _innermost(scope) == own or _names(memory.content, _innermost(scope))]
            if hit:
                entry["function"] = hit[0]
                continue
            real, now = now_of.get((places[memory.project_id], entry["file"]), (None, None))
            if not (edits and now is not None and real is not None and list(now) == edits[-1][2]):
                continue  # no edit that names its function, or changed again since the last: the file changed
            if not own and read:
                if real not in defined:
                    defined[real] = definitions(real, places[memory.project_id])
                own = next((name for name in defined[real] if _names(memory.content, name)), "")
            if own and not _unscoped_change(db, memory.project_id, memory.created_at, edits[-1][0], entry["file"]):
                entry["elsewhere"] = scopes  # about another function of the file, which the edits did not touch


#: How a definition starts in Python, JavaScript/TypeScript, Go and Rust (as :func:`ccmemory.observations.edit_scope`).
_DEFINITION = r"^[ \t]*(?:export\s+)?(?:async\s+)?(?:def|class|function|func|fn)\s+([A-Za-z_$][\w$]*)"


def definitions(real: str, root: str) -> list[str]:
    """The names of the functions and classes defined in a file (read within ``root``, bounded), in order."""
    import re

    from .errors import ValidationError
    from .safe_files import read_head

    try:
        text = read_head(real, MAX_FINGERPRINT_BYTES, root=root).decode("utf-8", "replace")
    except (ValidationError, OSError):
        return []
    return list(dict.fromkeys(re.findall(_DEFINITION, text, re.MULTILINE)))


def _innermost(scope: str) -> str:
    """``apply_discount`` of ``Pricing.apply_discount``."""
    return scope.rsplit(".", 1)[-1]


def _named_scope(memory: Any) -> str:
    scope = memory.metadata.get("scope")
    return _innermost(scope) if isinstance(scope, str) and scope else ""


def _names(text: str, name: str) -> bool:
    """Whether ``name`` occurs in ``text`` as a whole identifier (not inside a longer one)."""
    if not name:
        return False
    start = text.find(name)
    while start >= 0:
        end = start + len(name)
        before = text[start - 1] if start else " "
        after = text[end] if end < len(text) else " "
        if not (before.isalnum() or before in "_$") and not (after.isalnum() or after in "_$"):
            return True
        start = text.find(name, end)
    return False


def only_elsewhere(entries: Iterable[dict[str, Any]]) -> bool:
    """Whether every change of these files lies in functions the memory does not name (a soft mark)."""
    entries = list(entries)
    return bool(entries) and all(entry.get("elsewhere") for entry in entries)


def _same_content(db: Database, real: str, root: str, recorded: Sequence[int], now: tuple[int, int]) -> bool:
    """Whether a file whose stat differs from ``recorded`` provably has the content it had then."""
    if recorded[0] != now[0]:
        return False
    then = _known(db, real, recorded)
    if then is None:
        return False
    current = _known(db, real, now)
    if current is None:
        current = fingerprint(real, root)
    return current == then


def describe(entry: dict[str, Any], today: str | None = None) -> str:
    """``pricing.py changed since — recorded 12 days ago`` / ``pricing.py is gone — recorded today``;
    ``apply_discount in pricing.py changed since — …`` / ``pricing.py changed elsewhere (apply_discount) — …``."""
    when = f" — recorded {_age(entry['since'], today)}"
    if entry["change"] != CHANGED:
        return f"{entry['file']} is gone{when}"
    if entry.get("function"):
        return f"{entry['function']} in {entry['file']} changed since{when}"
    if entry.get("elsewhere"):
        shown = ", ".join(entry["elsewhere"][:3]) + (", …" if len(entry["elsewhere"]) > 3 else "")
        return f"{entry['file']} changed elsewhere ({shown}){when}"
    return f"{entry['file']} changed since{when}"


def _age(iso: str, today: str | None) -> str:
    """How long ago an ISO date was, in days (``today``, ``yesterday``, ``12 days ago``)."""
    import datetime

    day = datetime.date.fromisoformat(iso[:10])
    now = datetime.date.fromisoformat(today[:10]) if today else datetime.datetime.now(datetime.timezone.utc).date()
    days = (now - day).days
    return "today" if days <= 0 else "yesterday" if days == 1 else f"{days} days ago"
