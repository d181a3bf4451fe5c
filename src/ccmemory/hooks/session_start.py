"""SessionStart: register the session and inject the project's memory (:mod:`.context` builds the text)."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

from ..config import Config
from . import payload as payloads
from .context import build, hook_output


def handle(data: dict[str, Any], config: Config, cwd: str) -> None:
    """Register the session and print the context JSON (nothing at all when there is nothing to recall)."""
    import sys

    from .. import db as database, projects, sessions

    session_id = payloads.text(data, "session_id")
    db = database.connect(vectors=False)
    try:
        project = projects.project_id(db, cwd)
        if session_id:
            sessions.ensure(db, session_id, project, transcript_path=payloads.text(data, "transcript_path"))
        context = build(db, project, config=config, exclude_session=session_id, directory=cwd)
    finally:
        db.close()
    if context:
        sys.stdout.write(hook_output(context))
