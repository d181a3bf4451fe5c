"""SessionStart: register the session and inject the project's memory (:mod:`.context` builds the text).

The first session of a project with no memories, when Claude Code kept earlier transcripts of it,
also says once how many there are and how to bring them in (:func:`ccmemory.backfill.offer_once`).
"""

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

    from .. import backfill, db as database, projects, sessions

    session_id = payloads.text(data, "session_id")
    db = database.connect(vectors=False)
    try:
        project = projects.project_id(db, cwd)
        if session_id:
            sessions.ensure(db, session_id, project, transcript_path=payloads.text(data, "transcript_path"))
            sessions.reopen(db, session_id)  # a resumed session: its captures are not late
        context = build(db, project, config=config, exclude_session=session_id, directory=cwd)
        past = backfill.offer_once(db, project, payloads.text(data, "transcript_path"), session_id)
    finally:
        db.close()
    if past:
        context = with_notice(context, backfill.notice(past))
    if context:
        sys.stdout.write(hook_output(context))


def with_notice(context: str, notice: str) -> str:
    """``context`` with ccmemory's own ``notice`` added inside its tag (the tag alone when there is no context)."""
    from ..redaction import CONTEXT_TAG

    closing = f"</{CONTEXT_TAG}>"
    if not context:
        return f"<{CONTEXT_TAG}>\n{notice}\n{closing}"
    return context[:-len(closing)] + f"\n{notice}\n{closing}" if context.endswith(closing) else context
