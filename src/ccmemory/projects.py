"""Projects: which project a directory belongs to, found through the paths where each has been seen.

A directory's location is its git top-level (walking up to the nearest ``.git``, a directory or
the file a worktree or submodule has), else its real path; never a basename, so two checkouts
named ``app`` of different repositories are two projects. Which project that location *is* comes
from its portable identity (:mod:`ccmemory.identity`): every clone, worktree and moved checkout
of one repository is one project, on every machine. Each location seen is an alias
(``project_aliases``), so the hook path answers with one indexed read; git runs only when a
location is new, or when its ``.git`` changed in a way that can change the answer.
"""

from __future__ import annotations

import os
import time

from . import clock, identity, paths
from .errors import NotFoundError

#: How long a checkout whose history git could not read keeps its path identity before git is asked again
#: (a repository of another user that git refuses would otherwise start git at every hook).
RETRY_UNREAD_SECONDS = 3600
#: Between the ``.git`` marker and the time git could not read the checkout, in ``project_aliases.marker``.
_UNREAD = " unread "

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Literal, overload

    from .db import Database


def project_root(cwd: str | os.PathLike[str]) -> str:
    """The location (git top-level, else real path) of the project that contains ``cwd``."""
    start = os.path.realpath(cwd)
    candidate = start
    while True:
        if os.path.exists(os.path.join(candidate, ".git")):
            return candidate
        parent = os.path.dirname(candidate)
        if parent == candidate:
            return start
        candidate = parent


if TYPE_CHECKING:  # with create (the default) there is always a project
    @overload
    def project_id(db: Database, cwd: str | os.PathLike[str], *, create: Literal[True] = True) -> int: ...
    @overload
    def project_id(db: Database, cwd: str | os.PathLike[str], *, create: bool) -> int | None: ...


def project_id(db: Database, cwd: str | os.PathLike[str], *, create: bool = True) -> int | None:
    """The row id of the project containing ``cwd``, created on first sight (with ``create``).

    Without ``create`` nothing is written: a location not seen before is identified and matched
    against the known projects, and None means no project is known for it.
    """
    root = project_root(cwd)
    alias = db.one("SELECT project_id, kind, marker, pinned FROM project_aliases WHERE path = ?", (root,))
    if alias is not None and (alias["pinned"] or not _may_have_changed(root, alias)):
        return int(alias["project_id"])
    if alias is None and not os.path.isdir(root):  # a location gone before it was ever seen: nothing to read
        found = db.scalar("SELECT id FROM projects WHERE path = ?", (root,))
        if found is not None or not create:
            return found
    seen = identity.identify(root)
    if not create:
        return _match(db, seen, root) if alias is None else int(alias["project_id"])
    with db.transaction():
        return _settle(db, root, seen, alias)


def _may_have_changed(root: str, alias: dict[str, Any]) -> bool:
    """Whether the identity stored for the alias at ``root`` may no longer hold (cheap: a stat or a few small reads)."""
    current = identity.marker(root)
    stored, _, unread_at = str(alias["marker"]).partition(_UNREAD)
    if current != stored:
        return current != "none" or os.path.isdir(root)  # a location gone keeps its project
    if alias["kind"] == "path" and current != "none":
        if unread_at:
            return time.time() - float(unread_at) > RETRY_UNREAD_SECONDS
        return identity.has_commit(root)
    if alias["kind"] == "remote":
        return not identity.is_shallow(root)
    return False


def _match(db: Database, seen: dict[str, Any], root: str) -> int | None:
    """The known project with this identity: one owning a root commit (the canonical first), else by key; for a
    shallow clone at ``root``, one that shows it shares its history (:func:`_shallow_match`)."""
    if seen["roots"]:
        marks = ",".join("?" * len(seen["roots"]))
        found = db.scalar(
            f"SELECT project_id FROM project_roots WHERE root IN ({marks}) "
            "ORDER BY root = ? DESC, project_id LIMIT 1", (*seen["roots"], seen["key"].split(":", 1)[1]))
        if found is not None:
            return int(found)
    if seen["kind"] == "remote":
        return _shallow_match(db, seen, root)
    found = db.scalar("SELECT id FROM projects WHERE identity = ?", (seen["key"],))
    return None if found is None else int(found)


def _shallow_match(db: Database, seen: dict[str, Any], root: str) -> int | None:
    """The known project of this remote that a shallow clone at ``root`` has shown it belongs to.

    A shallow clone has no root commit to show, and its remote's URL is whatever its own config
    says, so the URL only names candidates: one counts when another of its checkouts on this machine
    holds the clone's ``HEAD`` commit itself (:func:`ccmemory.identity.holds_commit`).
    """
    candidates = db.rows("SELECT id FROM projects WHERE identity = ? OR remote = ? ORDER BY identity = ? DESC, id",
                         (seen["key"], seen["remote"], seen["key"]))
    for candidate in candidates:
        for alias in aliases(db, int(candidate["id"])):
            if alias["path"] != root and alias["kind"] != "path" and os.path.isdir(alias["path"]) and \
                    identity.holds_commit(alias["path"], seen["head"]):
                return int(candidate["id"])
    return None


def _settle(db: Database, root: str, seen: dict[str, Any], alias: dict[str, Any] | None) -> int:
    """Record ``root`` as an alias of the project its identity names, upgrading or creating that project."""
    project = _match(db, seen, root)
    previous = None if alias is None else int(alias["project_id"])
    old = None if previous is None else db.scalar("SELECT identity FROM projects WHERE id = ?", (previous,))
    if project is None and previous is not None and seen["kind"] == "remote" and old == seen["key"]:
        project = previous  # the shallow clone of this location, still of the same remote (its config changed)
    if previous is not None and project != previous:
        if identity.portability(old) < identity.PORTABILITY[seen["kind"]]:
            if project is None:  # the same checkout, now better identified: upgrade in place
                project = previous
            else:  # e.g. a shallow clone deepened into a repository already known: one project now
                from . import project_merge

                project_merge.merge(db, project, previous, reason=f"{root} is now identified as {seen['key']}")
    if project is None:  # a project stored before aliases existed (an import, an old store) keeps its rows
        project = db.scalar("SELECT id FROM projects p WHERE path = ? AND NOT EXISTS "
                            "(SELECT 1 FROM project_aliases a WHERE a.project_id = p.id)", (root,))
    if project is None:
        project = _create(db, root, seen)
    _record(db, project, seen)
    marker = identity.marker(root) + (f"{_UNREAD}{time.time():.0f}" if seen.get("unread") else "")
    db.execute(
        "INSERT INTO project_aliases(path, project_id, kind, marker, first_seen) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT(path) DO UPDATE SET project_id = excluded.project_id, kind = excluded.kind, "
        "marker = excluded.marker",
        (root, project, seen["kind"], marker, clock.now()),
    )
    return project


def _create(db: Database, root: str, seen: dict[str, Any]) -> int:
    """A new project at ``root``; a project that held the path before (another repository, since deleted) gives it up,
    with the local context logged there."""
    if db.scalar("SELECT 1 FROM projects WHERE path = ?", (root,)):
        from . import local_context

        local_context.forget_below(db, root)
    db.execute("UPDATE projects SET path = path || '#' || id WHERE path = ?", (root,))
    db.execute("INSERT INTO projects(path, name, created_at) VALUES (?, ?, ?)",
               (root, os.path.basename(root) or root, clock.now()))
    return int(db.scalar("SELECT id FROM projects WHERE path = ?", (root,)))


def _record(db: Database, project: int, seen: dict[str, Any]) -> None:
    """Store what identifies ``project``: its most portable key, its remote and its root commits."""
    current = db.one("SELECT identity, remote FROM projects WHERE id = ?", (project,)) or {}
    if current.get("identity") is None or identity.portability(current["identity"]) < identity.PORTABILITY[seen["kind"]]:
        if not db.scalar("SELECT 1 FROM projects WHERE identity = ? AND id <> ?", (seen["key"], project)):
            db.execute("UPDATE projects SET identity = ? WHERE id = ?", (seen["key"], project))
    if seen["remote"] and not current.get("remote"):
        db.execute("UPDATE projects SET remote = ? WHERE id = ?", (seen["remote"], project))
    for root_commit in seen["roots"]:
        db.execute("INSERT OR IGNORE INTO project_roots(root, project_id) VALUES (?, ?)", (root_commit, project))


def aliases(db: Database, project_id: int) -> list[dict[str, Any]]:
    """The locations where a project has been seen, oldest first."""
    return db.rows("SELECT path, kind, pinned, first_seen FROM project_aliases WHERE project_id = ? "
                   "ORDER BY first_seen, path", (project_id,))


def list_all(db: Database) -> list[dict[str, Any]]:
    """Every project with its identity, aliases, counts and latest activity, most recent first.

    Counts: live memories (all minus deleted, both from indexes alone: the trash has a partial
    index), sessions, documents and memory files; listing stays a few milliseconds at 100k
    memories. Each alias says whether its path still ``exists`` (a moved or deleted checkout does not).
    Latest activity is the newest memory or session start, else the project's creation.
    """
    found = db.rows(
        "SELECT p.id, p.path, p.name, p.created_at, p.identity, p.remote, "
        "(SELECT COUNT(*) FROM memories m WHERE m.project_id = p.id) - "
        "(SELECT COUNT(*) FROM memories m WHERE m.project_id = p.id AND m.is_deleted = 1) AS memories, "
        "(SELECT COUNT(*) FROM sessions s WHERE s.project_id = p.id) AS sessions, "
        "(SELECT COUNT(*) FROM documents d WHERE d.project_id = p.id) AS documents, "
        "(SELECT COUNT(*) FROM memory_files f WHERE ifnull(f.project_id, 0) = p.id) AS memory_files, "
        "COALESCE(NULLIF(MAX(COALESCE((SELECT MAX(created_at) FROM memories m WHERE m.project_id = p.id), ''), "
        "COALESCE((SELECT MAX(started_at) FROM sessions s WHERE s.project_id = p.id), '')), ''), p.created_at) "
        "AS last_activity "
        "FROM projects p ORDER BY last_activity DESC, p.id"
    )
    seen: dict[int, list[dict[str, Any]]] = {}
    for row in db.rows("SELECT project_id, path, kind, pinned, first_seen FROM project_aliases ORDER BY first_seen, path"):
        seen.setdefault(row.pop("project_id"), []).append(
            {**row, "pinned": bool(row["pinned"]), "exists": os.path.isdir(row["path"])})
    for project in found:
        project["aliases"] = seen.get(project["id"], [])
    return found


def resolve(db: Database, ref: str) -> int:
    """The project that ``ref`` names: a project id, or a path where it has been seen (an alias, even one gone).

    A directory never seen is identified as the hooks would (nothing is written) and matched
    against the known projects.
    """
    text = ref.strip()
    if text.isdigit():
        project = db.scalar("SELECT id FROM projects WHERE id = ?", (int(text),))
        if project is None:
            raise NotFoundError(f"No project with id {text}; `ccmemory projects` lists them")
        return int(project)
    path = os.path.realpath(paths.expand_user(text))
    project = db.scalar("SELECT project_id FROM project_aliases WHERE path = ?", (path,))
    if project is None and os.path.isdir(path):
        project = project_id(db, path, create=False)
    if project is None:
        raise NotFoundError(f"No project is known at {path}; name a project id or one of the paths "
                            "`ccmemory projects` lists")
    return int(project)


def alias_for(db: Database, ref: str) -> str:
    """The location where a project was seen that the path ``ref`` names: itself, else its git top-level."""
    path = os.path.realpath(paths.expand_user(ref.strip()))
    for candidate in (path, project_root(path)):
        if db.scalar("SELECT 1 FROM project_aliases WHERE path = ?", (candidate,)):
            return candidate
    raise NotFoundError(f"No project has been seen at {path}; `ccmemory projects` lists the paths of each project")


def get(db: Database, project_id: int) -> dict[str, Any]:
    """One project row by id."""
    row = db.one("SELECT id, path, name, created_at, identity, remote FROM projects WHERE id = ?", (project_id,))
    if row is None:
        raise NotFoundError(f"No project with id {project_id!r}; pick one from the list of projects")
    return row
