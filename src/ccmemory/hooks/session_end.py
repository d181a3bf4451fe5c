"""SessionEnd: end the session, keep what matters, close the database, within 1.5 s.

Claude Code gives all SessionEnd hooks 1.5 s together and cancels what runs
longer, so this does only short SQLite writes (a few milliseconds; :func:`ccmemory.lifecycle.end_session`):

1. if the session has observations but no summary yet (no turn reached Stop),
   write the extractive summary; likewise the last turn's entry of the rolling
   local context, when that turn never reached Stop (interrupted);
2. settle the failures a later call of the session fixed (they are not gotchas,
   :mod:`ccmemory.failures`), so they are not promoted;
3. mark the session ended;
4. promote the session-tier memories whose salience is above
   ``promotion.min_salience`` (0.7: failures, reinforced memories) to the project tier.

The slow work runs detached and ends by itself: an opt-in model-written summary
(:mod:`ccmemory.hooks.model_summary`), and, inside Claude Code, embedding what the
session captured and its MCP server had no time to embed (the plugin launcher's
``--embed``, which does nothing until the server's runtime is installed), so the
next session's first search finds it by meaning. Vectors are never computed here. When a team
server is configured (``sync.url`` or ``CCMEMORY_SYNC_URL``: read from the settings, no
connection made), the launcher's ``--sync`` runs one bounded sync round the same detached way
(``ccmemory sync --background``); the hook itself never touches the network.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

from ..config import Config
from . import log, payload as payloads


def handle(data: dict[str, Any], config: Config, cwd: str) -> None:
    from .. import db as database, lifecycle, projects
    from .summary import start_model_summary, user_prompts

    session_id = payloads.text(data, "session_id")
    if session_id is None:
        log.error("session_end", "payload has no session_id; nothing to end")
        return
    new_summary = None
    db = database.connect(vectors=False)
    try:
        known = db.scalar("SELECT project_id FROM sessions WHERE id = ?", (session_id,))
        if known is None:
            log.debug("session_end", f"session {session_id} recorded nothing; nothing to end")
            return
        new_summary, promoted = lifecycle.end_session(
            db, config, project_id=known, session_id=session_id, cwd=cwd, root=str(projects.project_root(cwd)),
            prompts=user_prompts(payloads.text(data, "transcript_path")))
        pending = db.scalar("SELECT 1 FROM memories WHERE needs_embedding = 1 AND is_deleted = 0 LIMIT 1")
    finally:
        db.close()
    log.debug("session_end", f"session {session_id} ended ({data.get('reason')}); promoted {promoted}")
    if new_summary is not None:
        start_model_summary(config, session_id, new_summary)
    if pending:
        start_launcher("--embed")
    import os

    if config.get("sync", "url") or os.environ.get("CCMEMORY_SYNC_URL"):
        start_launcher("--sync")


def start_launcher(flag: str) -> None:
    """Start the plugin launcher with ``flag`` (``--embed``, ``--sync``) in its own session, inside Claude Code."""
    import os
    import subprocess
    import sys

    from ..isolation import child_env

    root = os.environ.get("CLAUDE_PLUGIN_ROOT")
    launcher = os.path.join(root, "scripts", "mcp_launcher.py") if root else ""
    if not launcher or not os.path.isabs(launcher) or not os.path.isfile(launcher):
        return
    try:
        subprocess.Popen([sys.executable, "-I", launcher, flag], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True,
                         env=child_env())
    except OSError as exc:
        log.error("session_end", f"could not start {flag} after the session: {exc}")
