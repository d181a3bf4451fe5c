"""Stop (the end of every turn): rewrite the session's summary and add the turn to the local context.

Both are built from what capture already stored for the session, so the capture path does no
extra work: the summary by :mod:`.summary` (extractive now; with ``summary.mode = "claude"`` a
detached model-written one follows, :mod:`.model_summary`), the turn's entry of the rolling
local context by :mod:`.activity`.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

from ..config import Config
from . import activity, log, payload as payloads
from .summary import session_observations, start_model_summary, summarize_from, user_prompts


def handle(data: dict[str, Any], config: Config, cwd: str) -> None:
    """Write the extractive summary now; start the model-written one detached when configured."""
    from .. import db as database, projects, sessions

    session_id = payloads.capturing_session(data, config, "stop", "no summary written")
    if session_id is None:
        return
    transcript = payloads.text(data, "transcript_path")
    last_message = payloads.text(data, "last_assistant_message")
    db = database.connect(vectors=False)
    try:
        project = projects.project_id(db, cwd)
        sessions.ensure(db, session_id, project, transcript_path=transcript)
        root = str(projects.project_root(cwd))
        observations = session_observations(db, session_id)
        prompts = user_prompts(transcript)
        memory_id = summarize_from(db, project_id=project, session_id=session_id, root=root,
                                   observations=observations, prompts=prompts, last_message=last_message)
        activity.record_turn(db, directory=cwd, session_id=session_id, observations=observations,
                             prompt=prompts[-1] if prompts else None, last_message=last_message, root=root,
                             enabled_by_default=config.get("local_context", "enabled"))
    finally:
        db.close()
    if memory_id is None:
        log.debug("stop", f"session {session_id}: nothing to summarize yet")
        return
    start_model_summary(config, session_id, memory_id)
