"""One sync round with the team server: push the outbox, then pull by cursor (``ccmemory sync``).

Local-first: the SQLite store stays what hooks write and what search reads; this module is the
only one that moves memories between it and the server, and only when asked (``ccmemory sync``,
the bounded round after SessionEnd, the MCP server's periodic round). Hooks never call it.

**Outbox.** Once sync is set up on a machine (meta ``sync.enabled``, set by the first round,
which also queues every existing memory), triggers queue the id of each memory added, changed,
deleted, superseded or embedded (migration 15). A push reads the memory as it is *now*, so ten
edits between rounds are one push.

**Pushes are idempotent.** Rows keep their global id (a uuid made where the memory was made).
A new row is ``INSERT … ON CONFLICT (id) DO NOTHING``; a change is an ``UPDATE`` conditional on
the server's change number this machine last saw (``sync_memories.updated_seq``). A hash of
what a row says (:func:`ccmemory.team.sharing.digest`) is kept per memory: a push that would
change nothing is skipped, so pulled rows are never echoed back, and a crash between the
server's commit and ours is repaired by the next round finding the same hash on the server.

**Conflicts** (the same memory changed on two of my machines between rounds): the conditional
update finds a newer server row. The newer ``updated_at`` wins the memory's id on both machines
(ties: the larger hash); when both sides have text and the texts differ, the losing text is kept
as a new memory superseded by the winner, pushed like any other. So neither text is lost and both
machines end with the same two memories. A delete against an edit: the newer wins, no copy.

**Pull.** Rows of the team (mine of any scope, teammates' ``team`` rows: row-level security
decides) with ``updated_seq`` above the cursor, in order, then tombstones of rows taken back
from the team. A teammate's memory is stored with its id and original source; who shared it and
when is in ``sync_memories`` (search labels it). Vectors are stored only when they were made by
the model this machine uses; otherwise the memory waits for the background embedding pass.
Rows of a project this machine has not seen wait in ``sync_inbox`` until it has.

Only memories owned by this machine's role are pushed: a teammate's memory edited here stays
edited here (the server lets only its owner change it) until its owner changes it again.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .. import clock, memories
from ..db import Database
from ..errors import NotFoundError
from ..vocabulary import SECTORS
from . import pulled, sharing
from .connection import ServerError, Target, connect, translated

if TYPE_CHECKING:
    import psycopg

#: Rows pushed or pulled per server transaction.
BATCH = 200
#: The most the rows waiting for a project this machine has not seen may take (``sync_inbox``): a teammate could
#: otherwise fill the disk with rows of made-up projects. Past it the rows pulled longest ago go first; they come
#: back with ``ccmemory sync --full`` once their project is here.
MAX_INBOX_BYTES = 64 * 1024 * 1024
#: How many times a conditional update is retried when the row keeps changing under it.
CONFLICT_RETRIES = 3
META_ENABLED = "sync.enabled"
META_CURSOR = "sync.cursor"
META_TOMBSTONE_CURSOR = "sync.tombstone_cursor"
META_WHERE = "sync.where"
META_ROLE = "sync.role"
META_LAST = "sync.last"
#: The local projects whose teammates' memories were trimmed to ``sync.replica_max``: their searches ask the server.
META_PARTIAL = "sync.partial"
#: A background round (after SessionEnd, in the MCP server) stops pushing after this; the rest waits for the next.
BACKGROUND_SECONDS = 30.0
#: How often the MCP server runs a background round.
INTERVAL_SECONDS = 600.0

#: What is read of a server row: nothing the driver could fail to decode (:mod:`ccmemory.team.pulled`).
SERVER_COLUMNS = pulled.SERVER_COLUMNS
#: What a write returns: its change number and its time in seconds (a float the driver always decodes).
RETURNED = "updated_seq, extract(epoch FROM updated_at)::float8"
#: Most problems one report lists (each left-out row is counted in ``skipped``).
MAX_PROBLEMS = 20


@dataclass
class Report:
    """What one round did (``ccmemory sync --json``)."""

    server: str = ""
    team: str = ""
    role: str = ""
    pushed: int = 0
    unshared: int = 0
    deleted: int = 0
    pulled: int = 0
    removed: int = 0
    conflicts: int = 0
    waiting: int = 0
    #: Teammates' memories removed here to keep within ``sync.replica_max`` (still on the server).
    trimmed: int = 0
    #: Server rows left out because this machine cannot or must not store them (``problems`` says why).
    skipped: int = 0
    pending: int = 0
    finished: bool = True
    problems: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def skip(self, why: str) -> None:
        """Count a server row left out, say why (the first :data:`MAX_PROBLEMS`) and log it."""
        self.skipped += 1
        self.note(why)

    def note(self, problem: str) -> None:
        """A problem for ``problems`` (the first :data:`MAX_PROBLEMS`) and the log."""
        import logging

        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(problem)
        logging.getLogger(__name__).warning("Sync: %s", problem)

    def line(self) -> str:
        parts = [f"pushed {self.pushed}", f"pulled {self.pulled}"]
        for count, what in ((self.unshared, "taken back from the team"), (self.deleted, "deletions sent"),
                            (self.removed, "removed here"), (self.conflicts, "conflicts kept both texts"),
                            (self.waiting, "waiting for a project not on this machine"),
                            (self.trimmed, "teammates' memories left on the server (sync.replica_max)"),
                            (self.skipped, "rows from the server left out (`ccmemory sync --json` says why)")):
            if count:
                parts.append(f"{count} {what}")
        tail = "" if self.finished else f"; stopped at the time limit, {self.pending} still to push"
        return f"Synced with {self.server} (team {self.team}, as {self.role}): {', '.join(parts)}{tail}."


def read_meta(db: Database, key: str) -> str | None:
    value = db.scalar("SELECT value FROM meta WHERE key = ?", (key,))
    return None if value is None else str(value)


def _set_meta(db: Database, key: str, value: str) -> None:
    db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))


def enable(db: Database, *, requeue: bool = False) -> bool:
    """Turn the outbox on (queueing every stored memory the first time, or with ``requeue``); True if it was off."""
    with db.transaction():
        first = read_meta(db, META_ENABLED) is None
        if first or requeue:
            db.execute("INSERT OR IGNORE INTO sync_outbox(memory_id, queued_at) SELECT id, updated_at FROM memories")
            _set_meta(db, META_ENABLED, clock.now())
    return first


def _timestamp(value: Any) -> str:
    """A time a write returned (seconds, :data:`RETURNED`) as the store writes times, capped at now."""
    return min(value if isinstance(value, str) else pulled.timestamp(value), clock.now())


def server_rows(records: list[Any], report: Report) -> list[dict[str, Any]]:
    """The usable rows among ``records``; each other one is left out and reported (:meth:`Report.skip`)."""
    rows = []
    for record in records:
        try:
            rows.append(pulled.decode(record))
        except pulled.Unusable as error:
            report.skip(f"{error}; left out (ask its owner to fix it)")
    return rows


def _vector_of(db: Database, memory: memories.Memory) -> tuple[str | None, str | None]:
    """The memory's stored vector as pgvector text and its model id, or (None, None)."""
    row = db.one("SELECT e.vector, m.model_id FROM memory_embeddings e JOIN embedding_models m ON m.id = e.model "
                 "WHERE e.item_seq = ? AND e.part = 0", (memory.seq,))
    if row is None:
        return None, None
    values = [b - 256 if b > 127 else b for b in bytes(row["vector"])]  # int8, scaled: cosine ignores the scale
    return "[" + ",".join(str(v / 127) for v in values) + "]", str(row["model_id"])


class Round:
    """One round on an open local store and an open server connection."""

    def __init__(self, db: Database, conn: psycopg.Connection[Any], target: Target, settings: Any,
                 team: str, deadline: float) -> None:
        self.db = db
        self.conn = conn
        self.target = target
        self.settings = settings
        self.deadline = deadline
        self.report = Report(server=target.scrub(_where(conn)), team=team)
        self.role = str(conn.execute("SELECT current_user").fetchone()[0])  # type: ignore[index]
        self.report.role = self.role
        self.team_id = _team_id(conn, team)
        self.projects_on_server: set[str] = set()
        self.losers: list[dict[str, Any]] = []
        self.pulled_now: list[dict[str, Any]] = []
        from .. import embeddings

        self.model = embeddings.configured_spec().model_id

    # --- push -----------------------------------------------------------------------------------------------

    def push(self) -> None:
        while time.monotonic() < self.deadline:
            queued = [row["memory_id"] for row in self.db.rows(
                "SELECT memory_id FROM sync_outbox ORDER BY queued_at, memory_id LIMIT ?", (BATCH,))]
            if not queued:
                return
            done: list[tuple[str, dict[str, Any] | None]] = []
            with translated(self.target, "pushing memories"), self.conn.transaction():
                for memory_id in queued:
                    done.append((memory_id, self._push_one(memory_id)))
            with self.db.transaction():
                for memory_id, recorded in done:
                    if recorded is not None:
                        record(self.db, memory_id, recorded)
                    self.db.execute("DELETE FROM sync_outbox WHERE memory_id = ?", (memory_id,))
        self.report.finished = False

    def _push_one(self, memory_id: str) -> dict[str, Any] | None:
        """Send one queued memory if it should go; what to record about it locally, or None."""
        known = self.db.one("SELECT * FROM sync_memories WHERE memory_id = ?", (memory_id,))
        if known is not None and not known["mine"]:
            return None
        try:
            memory: memories.Memory | None = memories.get(self.db, memory_id, project_id=None)
        except NotFoundError:
            memory = None
        project = None
        if memory is not None:
            project, _why = sharing.project_sync_status(self.db, memory.project_id)
        if memory is None or project is None:
            if known is None or (memory is not None and not memory.is_deleted):
                return None  # never shared, or its project stopped syncing: left as it is on the server
            return self._send_delete(known)
        choice = self.db.scalar("SELECT scope FROM sync_choices WHERE memory_id = ?", (memory_id,))
        scope = sharing.desired_scope(memory, choice, known["scope"] if known else None, self.settings)
        if scope is None:
            return None
        if memory.is_deleted and known is None:
            return None
        replaced = memories.superseded_by(self.db, [memory.id]) if memory.is_superseded else {}
        row = sharing.payload(memory, project=project, scope=scope, superseded_by=replaced.get(memory.id))
        if not row["content"].strip() and not row["deleted"]:
            return None
        refused = None if row["deleted"] else pulled.refusal(row["metadata"])
        if refused is not None:
            self.report.note(f"memory {memory.id} was not pushed: {refused}; the server would refuse it")
            return None
        vector, model = (None, None) if row["deleted"] else _vector_of(self.db, memory)
        row["embedding"], row["embedding_model"] = vector, model
        hashed = sharing.digest(row, model)
        if known is not None and hashed == known["synced_hash"]:
            return None
        self._ensure_project(project, memory.project_id)
        if known is None:
            return self._insert(row, hashed)
        return self._update(row, hashed, int(known["updated_seq"]), known["scope"])

    def _ensure_project(self, project: str, project_id: int) -> None:
        if project in self.projects_on_server:
            return
        name = self.db.scalar("SELECT name FROM projects WHERE id = ?", (project_id,)) or ""
        self.conn.execute("INSERT INTO ccmemory.projects (team_id, project, name) VALUES (%s, %s, %s) "
                          "ON CONFLICT DO NOTHING", (self.team_id, project, str(name)[:200]))
        self.projects_on_server.add(project)

    def _values(self, row: dict[str, Any]) -> tuple[Any, ...]:
        return (row["scope"], row["updated_at"], row["deleted"], row["superseded_by"], row["sector"],
                row["category"], row["source"], row["content"], json.dumps(row["metadata"]), row["embedding"],
                row["embedding_model"])

    def _insert(self, row: dict[str, Any], hashed: str) -> dict[str, Any] | None:
        found = self.conn.execute(
            "INSERT INTO ccmemory.memories (scope, updated_at, deleted, superseded_by, sector, category, source, "
            "content, metadata, embedding, embedding_model, id, team_id, project, created_at) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s::jsonb, %s::vector, %s, %s, %s, %s, %s) "
            "ON CONFLICT (id) DO NOTHING RETURNING " + RETURNED,
            (*self._values(row), row["id"], self.team_id, row["project"], row["created_at"])).fetchone()
        if found is not None:
            self.report.pushed += 1
            return self._recorded(row, hashed, found)
        return self._resolve(row, hashed)  # pushed before (a crash, a retry) or changed since by another machine

    def _update(self, row: dict[str, Any], hashed: str, base_seq: int, old_scope: str) -> dict[str, Any] | None:
        found = self.conn.execute(
            "UPDATE ccmemory.memories SET scope = %s, updated_at = %s, deleted = %s, superseded_by = %s, "
            "sector = %s, category = %s, source = %s, content = %s, metadata = %s::jsonb, embedding = %s::vector, "
            "embedding_model = %s WHERE id = %s AND updated_seq = %s RETURNING " + RETURNED,
            (*self._values(row), row["id"], base_seq)).fetchone()
        if found is None:
            return self._resolve(row, hashed)
        if row["deleted"]:
            self.report.deleted += 1
        elif old_scope == "team" and row["scope"] == "personal":
            self.report.unshared += 1
        else:
            self.report.pushed += 1
        return self._recorded(row, hashed, found)

    def _send_delete(self, known: dict[str, Any]) -> dict[str, Any] | None:
        found = self.conn.execute(
            "UPDATE ccmemory.memories SET deleted = true, updated_at = now() WHERE id = %s AND NOT deleted "
            "RETURNING " + RETURNED + ", scope", (known["memory_id"],)).fetchone()
        if found is None:
            return None
        self.report.deleted += 1
        row = {"id": known["memory_id"], "scope": found[2], "deleted": True}
        return {"owner": self.role, "mine": 1, "scope": found[2], "updated_seq": int(found[0]),
                "shared_at": _timestamp(found[1]), "synced_hash": sharing.digest(row, None)}

    def _recorded(self, row: dict[str, Any], hashed: str, found: Any) -> dict[str, Any]:
        return {"owner": self.role, "mine": 1, "scope": row["scope"], "updated_seq": int(found[0]),
                "shared_at": _timestamp(found[1]), "synced_hash": hashed, "superseded_by": row.get("superseded_by")}

    def _resolve(self, row: dict[str, Any], hashed: str) -> dict[str, Any] | None:
        """The server's row differs from the version this machine last saw: keep the newer, and both texts."""
        for _ in range(CONFLICT_RETRIES):
            record = self.conn.execute(f"SELECT {SERVER_COLUMNS} FROM ccmemory.memories WHERE id = %s",
                                       (row["id"],)).fetchone()
            if record is None:
                raise ServerError(f"memory {row['id']} exists on the server but this role ({self.role}) cannot see "
                                  "it: another member owns that id; nothing was changed")
            try:
                theirs = pulled.decode(record)
            except pulled.Unusable as error:
                self.report.skip(f"{error}; this machine's version was not pushed over it")
                return None
            if theirs["owner"] != self.role:
                return None
            their_hash = pulled.hash_of(theirs)
            if their_hash == hashed:
                return self._recorded(row, hashed, (theirs["updated_seq"], theirs["updated_at"]))
            self.report.conflicts += 1
            ours_wins = (row["updated_at"], hashed) > (theirs["updated_at"], their_hash)
            winner, loser = (row, theirs) if ours_wins else (theirs, row)
            if not winner["deleted"] and not loser["deleted"] and loser["content"] != winner["content"]:
                self.losers.append(loser)
            if not ours_wins:
                self.pulled_now.append(theirs)
                return None
            found = self.conn.execute(
                "UPDATE ccmemory.memories SET scope = %s, updated_at = %s, deleted = %s, superseded_by = %s, "
                "sector = %s, category = %s, source = %s, content = %s, metadata = %s::jsonb, "
                "embedding = %s::vector, embedding_model = %s WHERE id = %s AND updated_seq = %s "
                "RETURNING " + RETURNED,
                (*self._values(row), row["id"], theirs["updated_seq"])).fetchone()
            if found is not None:
                self.report.pushed += 1
                return self._recorded(row, hashed, found)
        raise ServerError(f"memory {row['id']} kept changing on the server while this round pushed it; "
                          "run `ccmemory sync` again")

    def keep_losers(self) -> None:
        """Each text that lost a conflict becomes a memory of its own, superseded by the winner (pushed next)."""
        for loser in self.losers:
            try:
                winner = memories.get(self.db, loser["id"], project_id=None)
            except Exception:  # noqa: BLE001 - the winner is not here yet: it arrives with this round's pull
                winner = None
            project_id = winner.project_id if winner else _local_project(self.db, loser.get("project", ""))
            if project_id is None:
                continue
            meta = loser["metadata"] if isinstance(loser["metadata"], dict) else {}
            copy = memories.add(
                self.db, project_id=project_id, content=loser["content"], sector=loser["sector"],
                category=loser["category"], tags=meta.get("tags"), files=meta.get("files"),
                tier=str(meta.get("tier")) if meta.get("tier") in ("session", "project") else "project",
                source=loser["source"], metadata={**(meta.get("meta") or {}), "conflict_copy_of": loser["id"]},
                created_at=loser["created_at"])
            if winner is not None:
                memories.supersede(self.db, copy.id, winner.id, project_id=None)
        self.losers = []

    # --- pull -----------------------------------------------------------------------------------------------

    def pull(self) -> None:
        for theirs in self.pulled_now:
            self._apply(theirs)
        self.pulled_now = []
        cursor = int(read_meta(self.db, META_CURSOR) or 0)
        while time.monotonic() < self.deadline:
            with translated(self.target, "pulling memories"):
                records = self.conn.execute(
                    f"SELECT {SERVER_COLUMNS} FROM ccmemory.memories WHERE team_id = %s AND updated_seq > %s "
                    "ORDER BY updated_seq LIMIT %s", (self.team_id, cursor, BATCH)).fetchall()
            if not records:
                break
            rows = server_rows(records, self.report)  # a row left out is reported, and the cursor moves past it
            with self.db.transaction():
                for row in rows:
                    self._apply(row)
                cursor = max(cursor, *(int(record[pulled.NAMES.index("updated_seq")]) for record in records))
                _set_meta(self.db, META_CURSOR, str(cursor))
        self._pull_tombstones()
        self._apply_inbox()
        dropped = bound_inbox(self.db, MAX_INBOX_BYTES)
        if dropped:
            self.report.skipped += dropped
            self.report.note(f"{dropped} row(s) waiting for projects not on this machine went, the oldest first: the "
                             f"waiting rows may take {MAX_INBOX_BYTES // (1024 * 1024)} MB; `ccmemory sync --full` "
                             "fetches them again once their project is here")
            self.report.waiting = self.db.scalar("SELECT COUNT(*) FROM sync_inbox") or 0

    def _pull_tombstones(self) -> None:
        cursor = int(read_meta(self.db, META_TOMBSTONE_CURSOR) or 0)
        with translated(self.target, "pulling tombstones"):
            rows = self.conn.execute(
                "SELECT memory_id, updated_seq FROM ccmemory.tombstones WHERE team_id = %s AND updated_seq > %s "
                "ORDER BY updated_seq", (self.team_id, cursor)).fetchall()
        if not rows:
            return
        with self.db.transaction():
            for memory_id, seq in rows:
                theirs = self.db.scalar("SELECT 1 FROM sync_memories WHERE memory_id = ? AND mine = 0", (memory_id,))
                if theirs:
                    forget(self.db, memory_id)
                    self.report.removed += 1
                cursor = max(cursor, int(seq))
            _set_meta(self.db, META_TOMBSTONE_CURSOR, str(cursor))

    def _apply(self, row: dict[str, Any]) -> None:
        """Store one server row here (inside the caller's transaction).

        What this machine knows decides whose a memory is, not the row's owner alone: a memory recorded
        here as a teammate's (``mine = 0``) stays one whatever the server says, and a row of another owner
        never changes or removes a memory of this machine's own, or one never pulled (:meth:`_refused`).
        Nothing is written into, or removed from, a project that does not sync (opted out).
        """
        memory_id = row["id"]
        known = self.db.one("SELECT mine, synced_hash, updated_seq FROM sync_memories WHERE memory_id = ?",
                            (memory_id,))
        local = self.db.one("SELECT seq, project_id FROM memories WHERE id = ?", (memory_id,))
        if self._refused(row, known, local):
            return
        mine = row["owner"] == self.role and (known is None or bool(known["mine"]))
        hashed = pulled.hash_of(row)
        if known is not None and (known["synced_hash"] == hashed or int(known["updated_seq"]) >= row["updated_seq"]):
            return
        if mine and known is not None and self.db.scalar("SELECT 1 FROM sync_outbox WHERE memory_id = ?",
                                                         (memory_id,)):
            return  # changed here too since: the next push meets the server's version and keeps both
        project_id = local["project_id"] if local else _local_project(self.db, row["project"])
        if project_id is not None and sharing.project_sync_status(self.db, project_id)[0] is None:
            return  # opted out, or no longer portable: nothing is written into it, nor removed from it
        if row["deleted"]:
            if local is not None:
                if not mine:
                    forget(self.db, memory_id)
                    self.report.removed += 1
                    return
                memories.delete(self.db, memory_id, project_id=None)
                self.report.removed += 1
        else:
            if project_id is None:
                self._park(row)
                return
            store_row(self.db, row, project_id, exists=local is not None, model=self.model)
            self.report.pulled += 1
        record(self.db, memory_id, {"owner": row["owner"], "mine": int(mine), "scope": row["scope"],
                                 "updated_seq": row["updated_seq"], "shared_at": row["updated_at"],
                                 "synced_hash": hashed, "superseded_by": row["superseded_by"]})
        self.db.execute("DELETE FROM sync_outbox WHERE memory_id = ?", (memory_id,))
        self.db.execute("DELETE FROM sync_inbox WHERE memory_id = ?", (memory_id,))

    def _refused(self, row: dict[str, Any], known: dict[str, Any] | None, local: dict[str, Any] | None) -> bool:
        """Whether a row of another owner claims a memory of this machine's own, or a local one never pulled.

        Such a row comes from a hostile server or a teammate who reused an id: it is reported and left out,
        so a server never deletes or overwrites what this machine wrote.
        """
        if row["owner"] == self.role:
            return False
        if known is not None and not known["mine"]:
            return False  # a teammate's memory, pulled before
        if known is None and local is None:
            return False  # new here
        self.report.skip(f"memory {row['id']}: the server says {str(row['owner'])[:60]!r} owns it, but this machine "
                         "holds it as its own; left as it is here")
        return True

    def _park(self, row: dict[str, Any]) -> None:
        self.db.execute("INSERT OR REPLACE INTO sync_inbox(memory_id, project, updated_seq, row) VALUES (?, ?, ?, ?)",
                        (row["id"], row["project"], row["updated_seq"], json.dumps(row)))
        self.report.waiting += 1

    def _waiting_row(self, entry: dict[str, Any]) -> dict[str, Any] | None:
        """A row parked in ``sync_inbox``, checked again (it may have been parked by an older ccmemory)."""
        try:
            row = pulled.loads(str(entry["row"]), f"the waiting row of memory {entry['memory_id']}",
                               max_bytes=8 * pulled.MAX_ROW_METADATA_BYTES, max_depth=pulled.MAX_ROW_DEPTH + 1)
            if not isinstance(row, dict):
                raise pulled.Unusable(f"the waiting row of memory {entry['memory_id']} is not an object")
            return pulled.checked(row)
        except pulled.Unusable as error:
            self.db.execute("DELETE FROM sync_inbox WHERE memory_id = ?", (entry["memory_id"],))
            self.report.skip(f"{error}; left out")
            return None

    def _apply_inbox(self) -> None:
        waiting = self.db.rows("SELECT DISTINCT project FROM sync_inbox")
        ready = [entry["project"] for entry in waiting if _local_project(self.db, entry["project"]) is not None]
        if not ready:
            self.report.waiting = self.db.scalar("SELECT COUNT(*) FROM sync_inbox") or 0
            return
        with self.db.transaction():
            for project in ready:
                for entry in self.db.rows("SELECT memory_id, row FROM sync_inbox WHERE project = ? "
                                          "ORDER BY updated_seq", (project,)):
                    row = self._waiting_row(entry)
                    if row is not None:
                        self._apply(row)
        self.report.waiting = self.db.scalar("SELECT COUNT(*) FROM sync_inbox") or 0


def bound_inbox(db: Database, max_bytes: int) -> int:
    """Drop the rows waiting in ``sync_inbox`` that were pulled longest ago until the rest take at most
    ``max_bytes``; how many went."""
    total = int(db.scalar("SELECT COALESCE(SUM(length(row)), 0) FROM sync_inbox") or 0)
    if total <= max_bytes:
        return 0
    gone: list[str] = []
    for entry in db.rows("SELECT memory_id, length(row) AS size FROM sync_inbox ORDER BY updated_seq, memory_id"):
        if total <= max_bytes:
            break
        gone.append(entry["memory_id"])
        total -= int(entry["size"])
    with db.transaction():
        for start in range(0, len(gone), 500):
            part = gone[start:start + 500]
            db.execute(f"DELETE FROM sync_inbox WHERE memory_id IN ({','.join('?' * len(part))})", part)
    return len(gone)


def store_row(db: Database, row: dict[str, Any], project_id: int, *, exists: bool, model: str) -> None:
    """Store a server row here (pulled, or cached by a search that asked the server), once
    :func:`ccmemory.team.pulled.checked` has made valid what another client (or ``psql``) may have written
    there. Its vector is kept only when ``model`` made it."""
    meta = row["metadata"]  # checked by pulled.checked: bounded lists, a tier, an importance from 0 to 1
    sector = row["sector"] if row["sector"] in SECTORS else memories.classify_sector(row["content"])
    values = (row["content"], sector, meta["tier"], memories.normalize_category(row["category"]),
              json.dumps(meta["tags"]), json.dumps(meta["files"]), meta["importance"], row["updated_at"],
              row["source"], json.dumps(meta["meta"]))
    if exists:
        db.execute("UPDATE memories SET content = ?, sector = ?, tier = ?, category = ?, tags = ?, files = ?, "
                   "importance = ?, updated_at = ?, source = ?, metadata = ?, is_deleted = 0, "
                   "deleted_at = NULL WHERE id = ?", (*values, row["id"]))
    else:
        db.execute("INSERT INTO memories(content, sector, tier, category, tags, files, importance, updated_at, "
                   "source, metadata, salience, id, project_id, created_at) "
                   "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   (*values, min(meta["importance"], memories.MAX_SALIENCE), row["id"], project_id,
                    row["created_at"]))
    _supersession(db, row)
    if row["embedding"] and row["embedding_model"] == model:
        _store_vector(db, row, model)


def _supersession(db: Database, row: dict[str, Any]) -> None:
    newer = row["superseded_by"]
    if newer and db.scalar("SELECT 1 FROM memories WHERE id = ?", (newer,)):
        db.execute("INSERT OR IGNORE INTO memory_relationships(source_id, target_id, relationship_type, "
                   "created_at) VALUES (?, ?, 'SUPERSEDES', ?)", (newer, row["id"], row["updated_at"]))
    # Memories that arrived before the one superseding them are linked now.
    db.execute("INSERT OR IGNORE INTO memory_relationships(source_id, target_id, relationship_type, created_at) "
               "SELECT ?, s.memory_id, 'SUPERSEDES', ? FROM sync_memories s JOIN memories m ON m.id = s.memory_id "
               "WHERE s.superseded_by = ?", (row["id"], row["updated_at"], row["id"]))
    if newer:
        db.execute("UPDATE memories SET valid_until = COALESCE(valid_until, ?) WHERE id = ?",
                   (row["updated_at"], row["id"]))
    else:
        memories.refresh_superseded(db, [row["id"]])
    memories.refresh_superseded(db, memories.replaces(db, row["id"]))


def _store_vector(db: Database, row: dict[str, Any], model_id: str) -> None:
    from .. import embeddings, tokens

    values = [float(part) for part in row["embedding"].strip("[]").split(",") if part]
    peak = max((abs(v) for v in values), default=0.0) or 1.0
    quantized = bytes((round(v * 127 / peak)) & 0xFF for v in values)
    seq = db.scalar("SELECT seq FROM memories WHERE id = ?", (row["id"],))
    model = embeddings.model_number(db, model_id)
    # The server holds a memory's first vector; a longer memory's other windows, and the sentences of one
    # a person or a model wrote, are made here by the background pass, which keeps the first
    # (embeddings._parts_to_embed).
    more = len(row["content"]) > tokens.CONTENT_TOKENS or bool(embeddings.sentences_of(row["source"], row["content"]))
    db.execute("UPDATE memories SET needs_embedding = ? WHERE seq = ?", (int(more), seq))
    db.execute("INSERT INTO memory_embeddings(item_seq, part, model, vector, indexed) VALUES (?, 0, ?, ?, 0) "
               "ON CONFLICT(item_seq, part) DO UPDATE SET model = excluded.model, vector = excluded.vector, "
               "indexed = 0", (seq, model, quantized))


def trim(db: Database, most: int) -> int:
    """Keep at most ``most`` teammates' memories per project here, the most salient and newest; how many went.

    The rest stay on the server, and a search of such a project asks it (:mod:`ccmemory.team.server_search`).
    My own memories are never trimmed, nor a teammate's memory edited here (its text differs from the server's).
    Inside the caller's transaction.
    """
    partial = set(partial_projects(db))
    removed = 0
    for project in db.rows("SELECT m.project_id, COUNT(*) AS n FROM sync_memories s JOIN memories m ON m.id = s.memory_id "
                           "WHERE s.mine = 0 GROUP BY m.project_id HAVING n > ?", (most,)):
        extra = db.rows("SELECT s.memory_id FROM sync_memories s JOIN memories m ON m.id = s.memory_id "
                        "WHERE s.mine = 0 AND m.project_id = ? AND m.updated_at = s.shared_at "
                        "ORDER BY m.salience DESC, m.updated_at DESC, m.seq DESC LIMIT -1 OFFSET ?",
                        (project["project_id"], most))
        for row in extra:
            forget(db, row["memory_id"])
        removed += len(extra)
        partial.add(int(project["project_id"]))
    if partial:
        _set_meta(db, META_PARTIAL, json.dumps(sorted(partial)))
    return removed


def partial_projects(db: Database) -> list[int]:
    """The local projects some of whose teammates' memories are only on the server (:func:`trim`)."""
    try:
        return [int(project) for project in json.loads(read_meta(db, META_PARTIAL) or "[]")]
    except (ValueError, TypeError):
        return []


def forget(db: Database, memory_id: str) -> bool:
    """Remove a teammate's memory from this machine (no longer shared with it, or beyond ``sync.replica_max``).

    Only a memory ``sync_memories`` records as a teammate's (``mine = 0``): this machine's own, or one never
    pulled, is never removed this way, whatever a server row says. Whether it was removed.
    """
    if not db.scalar("SELECT 1 FROM sync_memories WHERE memory_id = ? AND mine = 0", (memory_id,)):
        return False
    db.execute("DELETE FROM memories WHERE id = ?", (memory_id,))
    db.execute("DELETE FROM sync_memories WHERE memory_id = ?", (memory_id,))
    db.execute("DELETE FROM sync_outbox WHERE memory_id = ?", (memory_id,))
    return True


def record(db: Database, memory_id: str, recorded: dict[str, Any]) -> None:
    """What this machine knows of a memory's server version (``sync_memories``)."""
    db.execute(
        "INSERT OR REPLACE INTO sync_memories(memory_id, owner, mine, scope, updated_seq, shared_at, synced_hash, "
        "superseded_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (memory_id, recorded["owner"], recorded["mine"], recorded["scope"], recorded["updated_seq"],
         recorded["shared_at"], recorded["synced_hash"], recorded.get("superseded_by")))


def _local_project(db: Database, identity_key: str) -> int | None:
    """The project of this store with that portable identity (by a root commit for git), else None."""
    if identity_key.startswith("git:"):
        found = db.scalar("SELECT project_id FROM project_roots WHERE root = ?", (identity_key[4:],))
        if found is not None:
            return int(found)
    found = db.scalar("SELECT id FROM projects WHERE identity = ?", (identity_key,))
    return None if found is None else int(found)


def _where(conn: psycopg.Connection[Any]) -> str:
    info = conn.info
    return f"{info.user}@{info.host}:{info.port}/{info.dbname}"


def _team_id(conn: psycopg.Connection[Any], team: str) -> int:
    row = conn.execute("SELECT id FROM ccmemory.teams WHERE name = %s", (team,)).fetchone()
    if row is None:
        raise ServerError(f"this role is not a member of a team named {team!r} on the server (or it does not exist); "
                          "ask the server's admin to run `ccmemory server add-member`, or fix sync.team")
    return int(row[0])


def choose_team(conn: psycopg.Connection[Any], configured: str | None) -> str:
    """``sync.team``, else the only team this role is a member of."""
    if configured:
        return configured
    names = [row[0] for row in conn.execute("SELECT name FROM ccmemory.teams ORDER BY name").fetchall()]
    if len(names) == 1:
        return str(names[0])
    if not names:
        raise ServerError("this role is not a member of any team on the server; ask the server's admin to run "
                          "`ccmemory server add-member TEAM ROLE`")
    raise ServerError(f"this role is a member of several teams ({', '.join(names)}): choose one with "
                      "`ccmemory config set sync.team NAME`")


def open_server(target: Target, *, timeout: float, connect_timeout: int = 10) -> psycopg.Connection[Any]:
    """A connection for a sync round: ``ccmemory`` first on the search path (the ``vector`` type), bounded statements."""
    conn = connect(target, autocommit=True, connect_timeout=connect_timeout)  # each batch: its own transaction
    with translated(target, "preparing the connection"):
        conn.execute("SELECT set_config('search_path', 'ccmemory, public', false), "
                     "set_config('statement_timeout', %s, false)", (f"{max(1, int(timeout * 1000))}ms",))
    return conn


def run(db: Database, target: Target, settings: Any, *, timeout: float, requeue: bool = False) -> Report:
    """One round: the outbox pushed, then what changed on the server pulled, within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    enable(db, requeue=requeue)
    conn = open_server(target, timeout=timeout)
    try:
        with translated(target, "finding the team"):
            team = choose_team(conn, settings.get("sync", "team"))
            sync_round = Round(db, conn, target, settings, team, deadline)
        where = f"{sync_round.report.server} team {team}"
        with db.transaction():
            if read_meta(db, META_WHERE) != where:  # another server or team: pull everything again (idempotent)
                switched(db)
                _set_meta(db, META_WHERE, where)
            elif requeue:  # --full: pull everything again too (what sync.replica_max left on the server comes back)
                for key in (META_CURSOR, META_TOMBSTONE_CURSOR, META_PARTIAL):
                    db.execute("DELETE FROM meta WHERE key = ?", (key,))
            _set_meta(db, META_ROLE, sync_round.role)
        sync_round.push()
        with db.transaction():
            sync_round.keep_losers()
        if sync_round.report.finished:
            sync_round.pull()
            with db.transaction():
                sync_round.report.trimmed = trim(db, int(settings.get("sync", "replica_max")))
        sync_round.push()  # the texts kept from conflicts, and nothing else in a quiet round
        report = sync_round.report
    finally:
        conn.close()
    report.pending = db.scalar("SELECT COUNT(*) FROM sync_outbox") or 0
    with db.transaction():
        _set_meta(db, META_LAST, json.dumps({"at": clock.now(), "ok": True, "line": report.line()}))
    return report


def switched(db: Database) -> None:
    """Start again with another server or team (inside the caller's transaction): pull everything, push mine.

    Teammates' memories stay marked as theirs (``mine = 0``, with their owner), so none is ever pushed
    to the new server as this user's own; they are only made due for pulling again. What this machine
    knew of its own memories' server versions is forgotten, and each of them is queued.
    """
    for key in (META_CURSOR, META_TOMBSTONE_CURSOR, META_PARTIAL):
        db.execute("DELETE FROM meta WHERE key = ?", (key,))
    db.execute("DELETE FROM sync_memories WHERE mine <> 0")
    db.execute("UPDATE sync_memories SET updated_seq = 0, synced_hash = ''")
    db.execute("INSERT OR IGNORE INTO sync_outbox(memory_id, queued_at) SELECT id, updated_at FROM memories "
               "WHERE id NOT IN (SELECT memory_id FROM sync_memories)")
    db.execute("DELETE FROM sync_outbox WHERE memory_id IN (SELECT memory_id FROM sync_memories)")


def record_failure(db: Database, message: str) -> None:
    """Note a failed round for ``ccmemory sync status``."""
    with db.transaction():
        _set_meta(db, META_LAST, json.dumps({"at": clock.now(), "ok": False, "line": message}))


def configured(settings: Any, environ: dict[str, str] | None = None) -> bool:
    """Whether this machine names a team server (``sync.url`` or ``CCMEMORY_SYNC_URL``): background rounds need one.

    Cheap and offline (the hooks ask it): libpq's own defaults alone do not start background rounds;
    ``ccmemory sync`` still uses them.
    """
    import os

    from .connection import ENV_URL

    env = os.environ if environ is None else environ
    return bool(env.get(ENV_URL) or settings.get("sync", "url"))


def status(db: Database, settings: Any, target: Target) -> dict[str, Any]:
    """What ``ccmemory sync status`` shows; read from this store alone (no server, no credential)."""
    from .connection import masked

    last = read_meta(db, META_LAST)
    counts = {(row["mine"], row["scope"]): row["n"] for row in db.rows(
        "SELECT s.mine, s.scope, COUNT(*) AS n FROM sync_memories s JOIN memories m ON m.id = s.memory_id "
        "WHERE m.is_deleted = 0 GROUP BY s.mine, s.scope")}
    listed = []
    for project in db.rows("SELECT id, name, identity FROM projects ORDER BY id"):
        key, why = sharing.project_sync_status(db, project["id"])
        listed.append({"name": project["name"], "identity": project["identity"], "synced": key is not None,
                       "why": why})
    return {
        "server": masked(target.conninfo) or "libpq defaults (PG* variables, PGSERVICE, ~/.pgpass)",
        "server_from": target.source,
        "configured": configured(settings),
        "team": settings.get("sync", "team") or (read_meta(db, META_WHERE) or "").rpartition(" team ")[2] or None,
        "role": read_meta(db, META_ROLE),
        "enabled": read_meta(db, META_ENABLED) is not None,
        "last_sync": json.loads(last) if last else None,
        "pending": db.scalar("SELECT COUNT(*) FROM sync_outbox") or 0,
        "shared": {"personal": counts.get((1, "personal"), 0), "team": counts.get((1, "team"), 0),
                   "from_teammates": counts.get((0, "team"), 0)},
        "waiting_for_projects": db.scalar("SELECT COUNT(*) FROM sync_inbox") or 0,
        "rules": {"personal": settings.get("sync", "personal"), "team_sources": settings.get("sync", "team_sources")},
        "projects": listed,
    }


def share(db: Database, memory_id: str, scope: str, *, project_id: int | None) -> memories.Memory:
    """Set one memory's scope (``personal`` takes a team memory back from the team); queued for the next round."""
    if scope not in sharing.SCOPES:
        from ..errors import ValidationError

        raise ValidationError(f"Unknown scope {scope!r}; use one of: {', '.join(sharing.SCOPES)}")
    memory = memories.get(db, memory_id, project_id=project_id)
    with db.transaction():
        db.execute("INSERT OR REPLACE INTO sync_choices(memory_id, scope) VALUES (?, ?)", (memory.id, scope))
        db.execute("INSERT OR REPLACE INTO sync_outbox(memory_id, queued_at) VALUES (?, ?)", (memory.id, clock.now()))
    return memory


def background_round(timeout: float, *, vectors: bool = False) -> Report | None:
    """A round for the background (after SessionEnd, the MCP server): one at a time, never raising.

    None when no server is configured or another round holds the lock; failures are recorded for
    ``ccmemory sync status`` and logged, never shown to a session. ``vectors`` is what the process's
    other connections pass to :func:`ccmemory.db.connect` (one process, one copy of SQLite).
    """
    import logging
    import os

    from .. import config, db as database, locks, paths
    from ..errors import CCMemoryError
    from .connection import resolve

    settings = config.load()
    if not configured(settings):
        return None
    try:
        with locks.held(os.path.join(paths.data_dir(), "sync.lock"), stale_after=timeout + 60):
            store = database.connect(vectors=vectors)
            try:
                try:
                    return run(store, resolve(settings=settings), settings, timeout=timeout)
                except CCMemoryError as error:
                    record_failure(store, str(error))
                    logging.getLogger(__name__).warning("Background sync failed: %s", error)
                    return None
            finally:
                store.close()
    except locks.Busy:
        return None


class Periodic:
    """The MCP server's sync rounds: one every :data:`INTERVAL_SECONDS` on a daemon thread, each bounded.

    Never on a tool call's path: a round holds its own connections, and a search meanwhile reads the
    local store as always. Nothing starts without a configured server.
    """

    def __init__(self, *, vectors: bool) -> None:
        """``vectors``: how the server opens its own connections (a round's takes the same SQLite binding)."""
        import threading

        self.vectors = vectors
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> bool:
        """Start the thread when sync is configured; False when there is nothing to do."""
        import threading

        from .. import config

        if self._thread is not None or not configured(config.load()):
            return False
        self._thread = threading.Thread(target=self._run, args=(INTERVAL_SECONDS,), name="ccmemory-sync", daemon=True)
        self._thread.start()
        return True

    def _run(self, interval: float) -> None:
        import logging

        while not self._stop.wait(interval):
            try:
                background_round(BACKGROUND_SECONDS, vectors=self.vectors)
            except Exception:  # noqa: BLE001 - a failed round must not end the server's thread
                logging.getLogger(__name__).exception("Background sync failed; the next round tries again")

    def stop(self) -> None:
        self._stop.set()
