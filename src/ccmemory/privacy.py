"""What must not be recorded: opted-out projects, the kill switch, our own summarizer (hooks and backfill alike).

* A project opts out with a marker file, :data:`OPT_OUT_MARKER`, in its directory or any
  parent; ``CCMEMORY_DISABLE=1`` switches every hook off; :data:`RECURSION_GUARD_ENV` is set
  for the ``claude -p`` child that writes model summaries, so its own hooks do nothing.

What is removed from text that is recorded (private spans, secrets) is :mod:`ccmemory.redaction`.
"""

from __future__ import annotations

import os
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Mapping

OPT_OUT_MARKER = ".ccmemory-off"
KILL_SWITCH_ENV = "CCMEMORY_DISABLE"
RECURSION_GUARD_ENV = "CCMEMORY_SUMMARY_CHILD"


def disabled_by_env(environ: Mapping[str, str] | None = None) -> str | None:
    """Why the environment switches hooks off (kill switch, summarizer child), or None."""
    env = os.environ if environ is None else environ
    if env.get(KILL_SWITCH_ENV, "").strip().lower() not in ("", "0", "false", "no", "off"):
        return f"{KILL_SWITCH_ENV} is set"
    if env.get(RECURSION_GUARD_ENV):
        return "running inside ccmemory's own summarizer"
    return None


def opted_out(cwd: str, environ: Mapping[str, str] | None = None) -> str | None:
    """Why this project must not be recorded (an opt-out marker above ``cwd`` or the project dir), or None."""
    env = os.environ if environ is None else environ
    for start in (cwd, env.get("CLAUDE_PROJECT_DIR")):
        marker = find_opt_out_marker(start) if start else None
        if marker:
            return f"opted out by {marker}"
    return None


def find_opt_out_marker(start: str) -> str | None:
    """The nearest :data:`OPT_OUT_MARKER` in ``start`` or any parent directory."""
    try:
        directory = os.path.realpath(start)
    except (OSError, ValueError):
        return None
    while True:
        marker = os.path.join(directory, OPT_OUT_MARKER)
        if os.path.exists(marker):
            return marker
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent
