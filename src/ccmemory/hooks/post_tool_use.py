"""PostToolUse (and PostToolUseFailure): store one episodic observation per tool call.

What an observation holds, how it is built from the payload and what is skipped:
:mod:`ccmemory.observations`. This handler runs in the child that :mod:`.runner` forks off
the tool call's critical path and stores the observation in one short transaction; it never
runs a model or an embedding. It records the state (size, modification time) of the project files
the call named, never their content (:mod:`ccmemory.staleness`). A capture stored into a session that is
already over (its hook started after SessionEnd, or it waited in the spill folder) settles and promotes
that session as its end would have (:func:`ccmemory.lifecycle.after_late_capture`).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..db import Database

from ..config import Config
from ..observations import TOO_LARGE, Observation, from_payload, skip_reason, store
from ..staleness import SEEN_KEY, record
from . import log, payload as payloads
from .runner import RECEIVED_AT


def handle(data: dict[str, Any], config: Config, cwd: str) -> None:
    """Store the observation for one tool call, unless it is skipped."""
    from .. import db as database, projects

    session_id = payloads.capturing_session(data, config, "capture", "observation not stored")
    if session_id is None:
        return
    reason = skip_reason(data, config)
    if reason:
        # A result over the size limit is worth a line (the user may raise the limit); a skipped tool is not.
        (log.info if reason.kind == TOO_LARGE else log.debug)("capture", f"skipped: {reason.text}")
        return
    root = projects.project_root(cwd)
    observation = from_payload(data, config, cwd=cwd, root=root)
    # The files as the call left them, so search can tell when they change (ccmemory.staleness). Only
    # here, as the call happens: a backfilled call of long ago would record today's files.
    seen = record(observation.files, root)
    if seen:
        observation.metadata[SEEN_KEY] = seen
    tool_use_id, created_at = payloads.text(data, "tool_use_id"), payloads.text(data, RECEIVED_AT)
    try:
        db = database.connect(vectors=False)
    except Exception as exc:
        _keep(exc, observation, root, session_id, tool_use_id, created_at)
        return
    try:
        try:
            project = projects.project_id(db, root)
            store(db, observation, project_id=project, session_id=session_id, tool_use_id=tool_use_id,
                  created_at=created_at)
        except Exception as exc:
            _keep(exc, observation, root, session_id, tool_use_id, created_at)
            return
        for session in dict.fromkeys([session_id, *_drain(db)]):
            _after_late_capture(db, config, session)
    finally:
        db.close()


def _after_late_capture(db: Database, config: Config, session_id: str) -> None:
    """Finish ``session_id`` when it ended before this capture (logged, never raised: the capture is stored)."""
    from .. import lifecycle

    try:
        if lifecycle.after_late_capture(db, config, session_id):
            log.info("capture", f"session {session_id} had ended: settled and promoted again after a late capture")
    except Exception as exc:
        log.error("capture", f"session {session_id} had ended and could not be settled after a late capture "
                             f"({type(exc).__name__}: {exc}); its late calls stay as stored")


def _keep(exc: Exception, observation: Observation, root: str, session_id: str, tool_use_id: str | None,
          created_at: str | None) -> None:
    """The database could not take the observation: keep it in the spill folder for a later capture (or re-raise
    ``exc`` when it says the write itself was wrong, which a later try would not change)."""
    from .. import spill
    from ..db import unavailable

    if not unavailable(exc):
        raise exc
    try:
        kept = spill.save(observation, root=root, session_id=session_id, tool_use_id=tool_use_id,
                          created_at=created_at)
    except spill.SpillError as problem:
        log.error("capture", f"the database could not be written ({exc}) and {problem}: this observation is lost")
        return
    log.error("capture", f"the database could not be written ({exc}); the observation is kept in {kept} "
                         "and the next capture that reaches the database stores it")


def _drain(db: Database) -> list[str]:
    """Store captures spilled earlier, now that the database took this one; returns the session of each."""
    from .. import spill

    stored, problems = spill.drain(db)
    for problem in problems:
        log.error("capture", problem)
    if stored:
        log.info("capture", f"stored {len(stored)} spilled capture(s) the database could not take earlier")
    return stored
