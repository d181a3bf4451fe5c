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
import os
import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Sequence
    from ..db import Database

SETTLED_SALIENCE = 0.45
_WRAPPERS = ("sudo", "env", "time", "nice", "npx")


def command_key(command: str) -> str:
    """What a shell command does, without its options and paths: ``pytest``, ``npm run build``, ``python -m pytest``."""
    line = command.strip().splitlines()[0] if command.strip() else ""
    line = line.split("&&")[-1].split(";")[-1].strip()
    words = [w for w in line.split() if not re.match(r"^\w+=", w)]
    while words and words[0] in _WRAPPERS and len(words) > 1:
        words = words[1:]
    if not words:
        return ""
    key = [os.path.basename(words[0])]
    rest = words[1:]
    if key[0].startswith("python") and len(rest) >= 2 and rest[0] == "-m":
        key, rest = [rest[1]], rest[2:]
    for word in rest[:2]:
        if word.startswith("-") or "/" in word or "." in word or "=" in word:
            break
        key.append(word)
    return " ".join(key)


def call_key(memory: Any) -> str | None:
    """What a captured call did, for matching a failure with a later success; None when unknown."""
    tool = memory.metadata.get("tool") or (memory.tags[0] if memory.tags else "")
    if tool == "Bash":
        first = memory.content.split("\n", 1)[0]
        command = first.split(": ", 1)[1] if ": " in first else first
        key = command_key(command.replace(" (failed)", ""))
        return f"Bash:{key}" if key else None
    if memory.files:
        family = "edit" if tool in ("Edit", "MultiEdit", "Write", "NotebookEdit") else tool
        return f"{family}:{memory.files[0]}"
    return None


def settle(db: Database, observations: Sequence[Any]) -> int:
    """Settle the session's failures that a later call fixed; returns how many changed (idempotent)."""
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
        if memory.category == "gotcha" and fixer is not None and fixer.seq > memory.seq:
            metadata = dict(memory.metadata, fixed_by=fixer.id)
            with db.transaction():
                db.execute("UPDATE memories SET category = 'general', salience = min(salience, ?), metadata = ? "
                           "WHERE id = ? AND category = 'gotcha'",
                           (SETTLED_SALIENCE, json.dumps(metadata), memory.id))
            memory.category, memory.metadata = "general", metadata
            memory.salience = min(memory.salience, SETTLED_SALIENCE)
            settled += 1
    return settled
