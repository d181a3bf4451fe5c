"""Stop (the end of every turn): rewrite the session's summary and add the turn to the local context.

Both are built from what capture already stored for the session, so the capture path does no
extra work (:func:`ccmemory.lifecycle.end_turn`): the summary by :mod:`ccmemory.session_summary`
(extractive now; with ``summary.mode = "claude"`` a detached model-written one follows,
:mod:`.model_summary`), the turn's entry of the rolling local context by :mod:`ccmemory.activity`.
When the turn's captures wait for vectors and no process embeds them (no MCP server runs), the
embedding worker starts detached (:func:`.launch.embed_if_pending`).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

from ..config import Config
from . import launch, log, payload as payloads
from .summary import start_model_summary, user_prompts


def handle(data: dict[str, Any], config: Config, cwd: str) -> None:
    """Write the extractive summary now; start the model-written one detached when configured."""
    from .. import db as database, lifecycle, projects, sessions

    session_id = payloads.capturing_session(data, config, "stop", "no summary written")
    if session_id is None:
        return
    transcript = payloads.text(data, "transcript_path")
    last_message = payloads.text(data, "last_assistant_message")
    db = database.connect(vectors=False)
    try:
        project = projects.project_id(db, cwd)
        sessions.ensure(db, session_id, project, transcript_path=transcript)
        memory_id = lifecycle.end_turn(db, config, project_id=project, session_id=session_id, cwd=cwd,
                                       root=str(projects.project_root(cwd)), prompts=user_prompts(transcript),
                                       last_message=last_message)
        launch.embed_if_pending(db, "stop")
    finally:
        db.close()
    if memory_id is None:
        log.debug("stop", f"session {session_id}: nothing to summarize yet")
        return
    start_model_summary(config, session_id, memory_id)
