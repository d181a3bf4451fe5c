"""Claude Code sessions: the episodes that memories are created, recalled and summarized in."""

from __future__ import annotations

import json

from . import clock, excerpts
from .db import Database
from .errors import NotFoundError, ValidationError
from .record_ids import is_record_id
from .redaction import redact
from .vocabulary import SUMMARY_SOURCE

#: Two memories of one session at most this far apart (in days) are neighbours: search lends a strong hit's
#: neighbours part of its score, and a conversation turn is embedded with the memory before it.
NEIGHBOUR_WINDOW_DAYS = 1 / 24
#: Memories of the project with the same time as a memory (in ``seq`` order from it) among which its neighbour in
#: its session is looked for: one further away (more of other sessions' memories of that time between) is none.
NEIGHBOUR_TIES = 256


def neighbour_sql(column: str, *, before: bool, filters: str = "",
                  params: Sequence[object] = ()) -> tuple[str, tuple[object, ...]]:
    """A correlated subquery giving ``<column>`` of the memory right before (or after) memory ``m`` in its
    session, within :data:`NEIGHBOUR_WINDOW_DAYS`, and its parameters; deleted memories never count,
    ``filters`` (``" AND n.…"``, with its ``params``) narrows which others do.

    Each lookup is a short seek in ``memories_project_created`` (whose rows end in ``seq``): first among the
    memories of ``m``'s very time, by ``seq`` (at most :data:`NEIGHBOUR_TIES` of them: a chat imported with
    one date for many sessions ties them all, and no index orders a session's memories by time), then among
    the later (or earlier) times.
    """
    order, bound, shift, desc, pick = ("<", ">=", "-", " DESC", "max") if before else (">", "<=", "+", "", "min")
    tied = (f"(SELECT {pick}(t.seq) FROM (SELECT n.seq, n.session_id FROM memories n "
            f"WHERE n.project_id = m.project_id AND n.created_at = m.created_at AND n.seq {order} m.seq "
            f"AND n.is_deleted = 0{filters} ORDER BY n.seq{desc} LIMIT {NEIGHBOUR_TIES}) t "
            f"WHERE t.session_id = m.session_id)")
    other = (f"(SELECT n.seq FROM memories n WHERE n.project_id = m.project_id AND n.session_id = m.session_id "
             f"AND n.is_deleted = 0{filters} AND n.created_at {order} m.created_at "
             f"AND n.created_at {bound} strftime('%Y-%m-%dT%H:%M:%fZ', julianday(m.created_at) {shift} "
             f"{NEIGHBOUR_WINDOW_DAYS!r}) ORDER BY n.created_at{desc}, n.seq{desc} LIMIT 1)")
    seq = f"COALESCE({tied}, {other})"
    sql = seq if column == "seq" else f"(SELECT x.{column} FROM memories x WHERE x.seq = {seq})"
    return sql, (*params, *params)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Sequence

_COLUMNS = "id, project_id, started_at, ended_at, summary, transcript_path"


def ensure(db: Database, session_id: str, project_id: int, *, transcript_path: str | None = None) -> None:
    """Create the session row on first sight; later calls only fill a missing transcript path."""
    if not isinstance(session_id, str) or not session_id.strip():
        raise ValidationError("A session id is required")
    if not is_record_id(session_id):
        raise ValidationError(f"The session id {session_id[:80]!r} is not an id (letters, digits and . _ : @ + = / - "
                              "only); Claude Code's are UUIDs")
    with db.transaction():
        db.execute(
            "INSERT OR IGNORE INTO sessions(id, project_id, started_at, transcript_path) VALUES (?, ?, ?, ?)",
            (session_id, project_id, clock.now(), transcript_path),
        )
        if transcript_path:
            db.execute("UPDATE sessions SET transcript_path = ? WHERE id = ? AND transcript_path IS NULL",
                       (transcript_path, session_id))


def get(db: Database, session_id: str) -> dict[str, Any]:
    row = db.one(f"SELECT {_COLUMNS} FROM sessions WHERE id = ?", (session_id,))
    if row is None:
        raise NotFoundError(f"No session with id {session_id!r}; list session ids with docmem_query_nodes "
                            "(SELECT id, content FROM nodes WHERE kind = 'session')")
    return row


def get_sessions(db: Database, session_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Sessions keyed by id, in the order asked; unknown ids are left out."""
    if not session_ids:
        return {}
    marks = ",".join("?" * len(session_ids))
    rows = {r["id"]: r for r in db.rows(f"SELECT {_COLUMNS} FROM sessions WHERE id IN ({marks})", tuple(session_ids))}
    return {sid: rows[sid] for sid in session_ids if sid in rows}


def set_summary(db: Database, session_id: str, summary: str) -> None:
    """Store the session's summary; its end time becomes now (the last Stop so far)."""
    with db.transaction():
        db.execute("UPDATE sessions SET summary = ?, ended_at = ? WHERE id = ?",
                   (redact(summary), clock.now(), session_id))


#: In ``sessions.metadata``: when the session's end ran (SessionEnd, or a backfill's end of the session). Unlike
#: ``ended_at``, which every Stop also moves, it says the session is over: a capture stored after it is late
#: (:func:`ccmemory.lifecycle.after_late_capture`). A resumed session drops it (:func:`reopen`).
CLOSED_KEY = "closed_at"
#: In ``sessions.metadata``: ``tool_use_id`` -> transcript time of the calls the transcript showed answered at
#: the session's end that capture had not stored yet (their hook started late), so a late capture takes its
#: transcript time as a call stored before the end did.
AWAITED_KEY = "awaited_calls"
#: The most calls :data:`AWAITED_KEY` keeps (the latest): a session whose end saw more uncaptured calls is not
#: waiting for all of them (capture skips some kinds of call for good).
MAX_AWAITED = 200


def _metadata(db: Database, session_id: str) -> dict[str, Any] | None:
    """The session's metadata (``{}`` when it is not a JSON object), None when the session is unknown."""
    raw = db.scalar("SELECT metadata FROM sessions WHERE id = ?", (session_id,))
    if raw is None:
        return None
    try:
        metadata = json.loads(raw)
    except ValueError:
        return {}
    return metadata if isinstance(metadata, dict) else {}


def end(db: Database, session_id: str, *, awaited: dict[str, str] | None = None) -> bool:
    """Mark a session ended now (a resumed session ends again later), the latest :data:`MAX_AWAITED` calls of
    ``awaited`` kept as :data:`AWAITED_KEY`; False when it is unknown."""
    with db.transaction():
        metadata = _metadata(db, session_id)
        if metadata is None:
            return False
        now = clock.now()
        metadata[CLOSED_KEY] = now
        latest = sorted((awaited or {}).items(), key=lambda item: (item[1], item[0]))[-MAX_AWAITED:]
        metadata[AWAITED_KEY] = dict(latest)
        db.execute("UPDATE sessions SET ended_at = ?, metadata = ? WHERE id = ?",
                   (now, json.dumps(metadata), session_id))
        return True


def awaited_calls(db: Database, session_id: str) -> dict[str, str] | None:
    """None while the session is not over (its end never ran, or it was resumed since); else the transcript
    times of the calls its end was still waiting for (:data:`AWAITED_KEY`). One look-up by primary key."""
    metadata = _metadata(db, session_id)
    if not metadata or not metadata.get(CLOSED_KEY):
        return None
    awaited = metadata.get(AWAITED_KEY)
    if not isinstance(awaited, dict):
        return {}
    return {key: value for key, value in awaited.items() if isinstance(value, str)}


def reopen(db: Database, session_id: str) -> None:
    """The session runs again (resumed): it is no longer over, so its captures are not late."""
    if awaited_calls(db, session_id) is None:  # not over: nothing to write, no write lock taken
        return
    with db.transaction():  # read again and written in one transaction, as :func:`end` does
        metadata = _metadata(db, session_id)
        if metadata and CLOSED_KEY in metadata:
            metadata.pop(CLOSED_KEY)
            metadata.pop(AWAITED_KEY, None)
            db.execute("UPDATE sessions SET metadata = ? WHERE id = ?", (json.dumps(metadata), session_id))


def recent(db: Database, project_id: int, *, limit: int = 5, with_summary: bool = False,
           offset: int = 0) -> list[dict[str, Any]]:
    """The project's latest sessions, newest first (``offset`` skips that many, for paging)."""
    extra = "AND summary IS NOT NULL" if with_summary else ""
    return db.rows(
        f"SELECT {_COLUMNS} FROM sessions WHERE project_id = ? {extra} ORDER BY started_at DESC LIMIT ? OFFSET ?",
        (project_id, limit, offset),
    )


def _per_session(db: Database, session_ids: Sequence[str], columns: str, tail: str) -> list[dict[str, Any]]:
    """Rows of ``SELECT session_id, <columns>`` over the live memories of these sessions, then ``tail``."""
    if not session_ids:
        return []
    marks = ",".join("?" * len(session_ids))
    return db.rows(f"SELECT session_id, {columns} FROM memories WHERE session_id IN ({marks}) AND is_deleted = 0"
                   f"{tail}", tuple(session_ids))


def memory_counts(db: Database, session_ids: Sequence[str]) -> dict[str, int]:
    """How many live (not deleted) memories each session holds."""
    rows = _per_session(db, session_ids, "COUNT(*) AS n", " GROUP BY session_id")
    return {row["session_id"]: row["n"] for row in rows}


def summary_memory_ids(db: Database, session_ids: Sequence[str]) -> dict[str, str]:
    """The id of each session's summary memory (what memory_get takes for a session)."""
    rows = _per_session(db, session_ids, "id", f" AND source = '{SUMMARY_SOURCE}' ORDER BY seq")
    return {row["session_id"]: row["id"] for row in rows}


#: The labelled lines a gist keeps, most useful first: what was asked, how it ended, what was done.
_GIST_LABELS = ("Request:", "Outcome:", "Did:")


def gist(summary: str | None, limit: int) -> str:
    """What a session did, on one line, from its summary: its request and outcome, not the header.

    Extractive summaries label their lines (``Request:``, ``Did:``, ``Outcome:``);
    a model-written summary has no labels, so its first lines after the header are used.
    """
    lines = [line.strip() for line in (summary or "").splitlines() if line.strip()]
    body = lines[1:] if lines and lines[0].startswith("Session summary") else lines
    picked = [line for label in _GIST_LABELS for line in body if line.startswith(label)] or body
    return excerpts.one_line(" ".join(picked), limit)


def preview(content: str, source: str, limit: int) -> str:
    """One line for a memory in a list of hits: a session summary's gist, else the text's start."""
    return gist(content, limit) if source == SUMMARY_SOURCE else excerpts.one_line(content, limit)
