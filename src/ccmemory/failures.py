"""Failures a session later fixed: not gotchas, not promoted.

Capture cannot see the future, so a failed tool call is stored as a gotcha
with salience 0.75 (above the promotion threshold). A failing test run that
the same session then made pass is the normal course of work, not a lesson
for next time: when a later call in the session did the same thing
successfully (the same command, its leading words without options and paths;
or the same tool on the same file), the failure is settled: category
``general``, salience :data:`SETTLED_SALIENCE` (below promotion), and
``fixed_by`` in its metadata names the call that succeeded. A failure nothing
later fixed stays a gotcha and is promoted at SessionEnd.
"""

from __future__ import annotations

import json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Sequence
    from .db import Database

from .observations import command_key_of, tool_of
from .vocabulary import FILE_CHANGING_TOOLS

SETTLED_SALIENCE = 0.45


def call_key(memory: Any) -> str | None:
    """What a captured call did, for matching a failure with a later success; None when unknown."""
    tool = tool_of(memory.metadata)
    if tool == "Bash":
        key = command_key_of(memory.metadata)
        return f"Bash:{key}" if key else None
    if memory.files:
        family = "edit" if tool in FILE_CHANGING_TOOLS else tool
        return f"{family}:{memory.files[0]}"
    return None


def settle(db: Database, observations: Sequence[Any]) -> int:
    """Settle the session's failures that a later call fixed; returns how many changed (idempotent).

    ``observations`` are in the order the calls happened (oldest first), which is what "later" means here:
    capture may store a call after one that followed it (its hook started late), so the order of storing
    (``seq``) says nothing."""
    latest_success: dict[str, Any] = {}
    settled = 0
    for memory in reversed(observations):  # newest first: remember the latest success of each kind
        key = call_key(memory)
        if key is None:
            continue
        if memory.category != "gotcha" and not memory.metadata.get("fixed_by"):
            latest_success.setdefault(key, memory)
            continue
        fixer = latest_success.get(key)
        if memory.category == "gotcha" and fixer is not None:
            metadata = dict(memory.metadata, fixed_by=fixer.id)
            with db.transaction():
                db.execute("UPDATE memories SET category = 'general', salience = min(salience, ?), metadata = ? "
                           "WHERE id = ? AND category = 'gotcha'",
                           (SETTLED_SALIENCE, json.dumps(metadata), memory.id))
            memory.category, memory.metadata = "general", metadata
            memory.salience = min(memory.salience, SETTLED_SALIENCE)
            settled += 1
    return settled
