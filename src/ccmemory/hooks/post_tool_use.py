"""PostToolUse (and PostToolUseFailure): store one episodic observation per tool call.

What an observation holds, how it is built from the payload and what is skipped:
:mod:`ccmemory.observations`. This handler runs in the child that :mod:`.runner` forks off
the tool call's critical path and stores the observation in one short transaction; it never
runs a model or an embedding. It records the state (size, modification time) of the project files
the call named, never their content (:mod:`ccmemory.staleness`).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

from ..config import Config
from ..observations import from_payload, skip_reason, store
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
        log.debug("capture", f"skipped: {reason}")
        return
    root = projects.project_root(cwd)
    observation = from_payload(data, config, cwd=cwd, root=root)
    # The files as the call left them, so search can tell when they change (ccmemory.staleness). Only
    # here, as the call happens: a backfilled call of long ago would record today's files.
    seen = record(observation.files, root)
    if seen:
        observation.metadata[SEEN_KEY] = seen
    db = database.connect(vectors=False)
    try:
        project = projects.project_id(db, root)
        store(db, observation, project_id=project, session_id=session_id,
              tool_use_id=payloads.text(data, "tool_use_id"), created_at=payloads.text(data, RECEIVED_AT))
    finally:
        db.close()
