"""Slow work a hook starts through the plugin launcher, detached: embedding the backlog, a team sync round.

The hooks run on the system ``python3`` without the model's dependencies, and must end within
their budget; the launcher (``scripts/mcp_launcher.py``) finds the runtime that has them and runs
the work in a session of its own. Outside Claude Code (no ``CLAUDE_PLUGIN_ROOT``) there is no
launcher, and nothing starts: the MCP server, a CLI search or ``ccmemory embed`` embeds instead.
"""

from __future__ import annotations

import os

from ..isolation import child_env
from ..paths import is_fixed
from . import log

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..db import Database


def embed_if_pending(db: Database, event: str) -> None:
    """Start the embedding worker (the launcher's ``--embed``) when items wait and no process embeds them."""
    from .. import embedding_worker

    if _launcher() and embedding_worker.waiting(db) and embedding_worker.wanted():
        start_launcher("--embed", event)


def _launcher() -> str | None:
    root = os.environ.get("CLAUDE_PLUGIN_ROOT")
    launcher = os.path.join(root, "scripts", "mcp_launcher.py") if root else ""
    return launcher if is_fixed(launcher) and os.path.isfile(launcher) else None


def start_launcher(flag: str, event: str) -> None:
    """Start the plugin launcher with ``flag`` (``--embed``, ``--sync``) in its own session, inside Claude Code."""
    import subprocess
    import sys

    launcher = _launcher()
    if launcher is None:
        return
    try:
        subprocess.Popen([sys.executable, "-I", launcher, flag], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True,
                         env=child_env())
    except OSError as exc:
        log.error(event, f"could not start the launcher's {flag}: {exc}")
