"""SessionEnd: end the session, keep what matters, close the database, within 1.5 s.

Claude Code gives all SessionEnd hooks 1.5 s together and cancels what runs
longer, so this does only short SQLite writes (a few milliseconds; :func:`ccmemory.lifecycle.end_session`):

1. mark the session ended (over: its transcript times of the calls capture has not
   stored yet are kept with it);
2. if the session has observations but no summary yet (no turn reached Stop),
   write the extractive summary; likewise the last turn's entry of the rolling
   local context, when that turn never reached Stop (interrupted);
3. settle the failures a later call of the session fixed (they are not gotchas,
   :mod:`ccmemory.failures`), so they are not promoted;
4. promote the session-tier memories whose salience is above
   ``promotion.min_salience`` (0.7: failures, reinforced memories) to the project tier.

It waits at most 0.8 s for the session's captures still in flight (:mod:`.detach`). A capture stored
after it (a hook Claude Code started late, a capture kept in the spill folder) settles and promotes
the session again itself (:func:`ccmemory.lifecycle.after_late_capture`); SessionStart of a resumed
session takes the end back.

The slow work runs detached and ends by itself (:mod:`.launch`): an opt-in model-written summary
(:mod:`ccmemory.hooks.model_summary`), and, inside Claude Code, embedding what the
session captured and no process embeds (the embedding worker, :mod:`ccmemory.embedding_worker`,
through the plugin launcher's ``--embed``, which does nothing until the server's runtime is
installed), so the next session's first search finds it by meaning. Vectors are never computed
here. When a team server is configured (``sync.url`` or ``CCMEMORY_SYNC_URL``: read from the
settings, no connection made), the launcher's ``--sync`` runs one bounded sync round the same
detached way (``ccmemory sync --background``); the hook itself never touches the network.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

from ..config import Config
from . import launch, log, payload as payloads


def handle(data: dict[str, Any], config: Config, cwd: str) -> None:
    from .. import db as database, lifecycle
    from .summary import read_transcript, session_project, start_model_summary

    session_id = payloads.text(data, "session_id")
    if session_id is None:
        log.error("session_end", "payload has no session_id; nothing to end")
        return
    new_summary = None
    db = database.connect(vectors=False)
    try:
        found = session_project(db, session_id, cwd, new=False)
        if found is None:
            log.debug("session_end", f"session {session_id} recorded nothing; nothing to end")
            return
        known, here, root = found
        reading = read_transcript(payloads.text(data, "transcript_path"), session_id)
        new_summary, promoted = lifecycle.end_session(
            db, config, project_id=known, session_id=session_id, cwd=cwd if here else None, root=root,
            prompts=reading.prompts, times=reading.call_times(), last_reply=reading.last_reply,
            turn_end=reading.turn_end)
        launch.embed_if_pending(db, "session_end")
    finally:
        db.close()
    log.debug("session_end", f"session {session_id} ended ({data.get('reason')}); promoted {promoted}")
    if new_summary is not None:
        start_model_summary(config, session_id, new_summary)
    import os

    if config.get("sync", "url") or os.environ.get("CCMEMORY_SYNC_URL"):
        launch.start_launcher("--sync", "session_end")

