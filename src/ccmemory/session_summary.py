"""The session summary, a reflective project-tier memory kept current turn by turn.

Stop (:mod:`ccmemory.hooks.stop`, through :mod:`ccmemory.lifecycle`) fires at the end of every turn, so each
session has one summary memory
(source ``summary``) that every Stop rewrites in place, and
``sessions.summary`` mirrors it. The default summary is extractive and
deterministic: the user's requests (from the transcript), what the session
did (``Did:`` files changed, commands run, failures and which were fixed, or
that it only looked), Claude's last reply (``last_assistant_message``),
decisions found in them, the files changed (with the functions or classes
the edits changed) and read, the commands run and the
errors still open, all taken from the session's captured observations.

The summary's salience says what the session did: one that changed files or
ran commands that do something keeps :data:`SUMMARY_SALIENCE`; one that only
read, searched and answered (a question about earlier work) gets
:data:`LOOKED_ONLY_SALIENCE`, so search ranks the session that made a change
above the later ones that asked about it. Failures a later call of the same
session fixed are settled first (:mod:`ccmemory.failures`). With ``summary.mode = "claude"`` a detached worker
(:mod:`ccmemory.hooks.model_summary`) later replaces it with a model-written
one; if that fails for any reason, the extractive summary simply stays.
"""

from __future__ import annotations

import os
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Sequence

from . import failures
from .activity import decisions
from .excerpts import cut
from .observations import command_key_of, shown_command, tool_of
from .vocabulary import CAPTURE_SOURCE, FILE_CHANGING_TOOLS, SUMMARY_SOURCE
from .redaction import redact

SUMMARY_SALIENCE = 0.65
LOOKED_ONLY_SALIENCE = 0.35
#: Commands that only look: running them is not doing something.
_LOOKING_COMMANDS = frozenset(
    "ls cat head tail less more grep rg find fd tree wc pwd echo which file stat du df diff".split()
    + ["git status", "git log", "git show", "git diff", "git blame", "git branch", "git grep"]
)
MAX_OBSERVATIONS = 500
#: Typed prompts a summary is written from.
MAX_PROMPTS = 1000
#: Functions or classes named per changed file (an Edit's scope, see ccmemory.observations.edit_scope).
MAX_SCOPES = 6


def _relative(path: str, root: str) -> str:
    prefix = root.rstrip(os.sep) + os.sep
    return path[len(prefix):] if path.startswith(prefix) else path


def _first_line(content: str) -> str:
    return content.split("\n", 1)[0]


def extractive_summary(observations: Sequence[Any], *, prompts: Sequence[str], last_message: str | None,
                       root: str, date: str) -> str:
    """The deterministic summary text; ``observations`` are captured memories, oldest first."""
    counts: dict[str, int] = {}
    changed: list[str] = []
    read: list[str] = []
    commands: list[str] = []
    errors: list[str] = []
    scopes: dict[str, list[str]] = {}
    for memory in observations:
        tool = tool_of(memory.metadata)
        counts[tool] = counts.get(tool, 0) + 1
        files = [_relative(f, root) for f in memory.files]
        target = changed if tool in FILE_CHANGING_TOOLS else read if tool == "Read" else None
        if target is not None:
            target.extend(f for f in files if f not in target)
        scope = memory.metadata.get("scope")
        if tool in FILE_CHANGING_TOOLS and isinstance(scope, str) and scope and files:
            named = scopes.setdefault(files[0], [])
            if scope not in named:
                named.append(scope)
        if tool == "Bash":
            command = shown_command(memory.metadata)
            if command not in commands:
                commands.append(cut(command, 160))
        if memory.category == "gotcha":
            errors.append(cut(_first_line(memory.content), 200))
    read = [f for f in read if f not in changed]
    did = what_it_did(observations, changed=changed)
    tally = ", ".join(f"{n} {tool}" for tool, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    calls = sum(counts.values())
    lines = [f"Session summary ({date}; {calls} tool call{'s' if calls != 1 else ''}"
             + (f": {tally})" if tally else ")")]
    prompts = [redact(p) for p in prompts]
    if prompts:
        lines.append("Request: " + cut(" ".join(prompts[0].split()), 400))
        if len(prompts) > 1:
            lines.append(f"Last request ({len(prompts)} in all): " + cut(" ".join(prompts[-1].split()), 300))
    if did:
        lines.append("Did: " + did)
    outcome = redact(last_message or "").strip()
    if outcome:
        lines.append("Outcome: " + cut(outcome, 900))
    shown = "\n".join(lines)
    chosen = [d for d in decisions([outcome, *prompts], limit=10) if d not in shown][:5]
    if chosen:
        lines.append("Decisions:\n" + "\n".join(f"- {cut(d, 240)}" for d in chosen))
    changed_shown = [f"{path} ({', '.join(scopes[path][:MAX_SCOPES])}"
                     + (f" +{len(scopes[path]) - MAX_SCOPES} more)" if len(scopes[path]) > MAX_SCOPES else ")")
                     if scopes.get(path) else path for path in changed]
    for label, items, limit in (("Files changed", changed_shown, 15), ("Files read", read, 10)):
        if items:
            more = f" (+{len(items) - limit} more)" if len(items) > limit else ""
            lines.append(f"{label}: {', '.join(items[:limit])}{more}")
    if commands:
        more = f" (+{len(commands) - 8} more)" if len(commands) > 8 else ""
        lines.append("Commands: " + "; ".join(commands[-8:]) + more)
    if errors:
        lines.append("Errors:\n" + "\n".join(f"- {e}" for e in errors[-5:]))
    return cut("\n".join(lines), 8000)


def changed_something(observations: Sequence[Any]) -> bool:
    """Whether the session made a change: a file edit, or a command that is not a mere look-up."""
    for memory in observations:
        tool = tool_of(memory.metadata)
        if memory.category == "gotcha":
            continue
        if tool in FILE_CHANGING_TOOLS:
            return True
        if tool == "Bash":
            key = command_key_of(memory.metadata)
            words = key.split()
            if words and words[0] not in _LOOKING_COMMANDS and " ".join(words[:2]) not in _LOOKING_COMMANDS:
                return True
    return False


def what_it_did(observations: Sequence[Any], *, changed: Sequence[str]) -> str:
    """One line saying what the session did: changed which files, ran what, what failed and what got fixed."""
    parts = []
    if changed:
        parts.append(f"changed {', '.join(changed[:5])}" + (f" (+{len(changed) - 5} more)" if len(changed) > 5 else ""))
    ran = list(dict.fromkeys(
        key for key in (command_key_of(m.metadata) for m in observations if tool_of(m.metadata) == "Bash")
        if key))
    if ran:
        parts.append("ran " + ", ".join(ran[:5]))
    failed = [m for m in observations if m.category == "gotcha" or m.metadata.get("fixed_by")]
    fixed = sum(1 for m in failed if m.metadata.get("fixed_by"))
    if failed:
        parts.append(f"{len(failed)} failed call{'s' if len(failed) != 1 else ''}"
                     + (f", {fixed} fixed later in the session" if fixed else ""))
    if not changed_something(observations):
        parts.append("only looked, changed nothing" if observations else "answered without tools, changed nothing")
    return "; ".join(parts)


def session_observations(db: Any, session_id: str) -> list[Any]:
    """The session's captured observations, oldest first."""
    from . import memories

    recent = memories.list_memories(db, session_id=session_id, limit=MAX_OBSERVATIONS)
    return [m for m in reversed(recent) if m.source == CAPTURE_SOURCE]


def summary_memory_id(db: Any, session_id: str) -> str | None:
    return db.scalar(
        "SELECT id FROM memories WHERE session_id = ? AND source = ? AND is_deleted = 0 ORDER BY seq DESC LIMIT 1",
        (session_id, SUMMARY_SOURCE),
    )


def store_summary(db: Any, *, project_id: int, session_id: str, text: str, files: Sequence[str],
                  method: str, salience: float | None = None) -> str:
    """Create or rewrite the session's summary memory and mirror it into the session row; returns its id.

    ``salience`` (None: keep the current one) says what the session did, see the module docstring.
    """
    from . import memories, sessions

    with db.transaction():
        existing = summary_memory_id(db, session_id)
        if existing is None:
            existing = memories.add(
                db, project_id=project_id, content=text, sector="reflective", tier="project", category="general",
                tags=["session-summary"], files=list(files), importance=SUMMARY_SALIENCE,
                salience=SUMMARY_SALIENCE if salience is None else salience, session_id=session_id,
                source=SUMMARY_SOURCE, metadata={"method": method},
            ).id
        else:
            memories.rewrite(db, existing, text, project_id=project_id, files=files, metadata={"method": method},
                             salience=salience)
        sessions.set_summary(db, session_id, text)
    return existing


def summarize_from(db: Any, *, project_id: int, session_id: str, root: str, observations: Sequence[Any],
                   prompts: Sequence[str], last_message: str | None, day: str | None = None) -> str | None:
    """Write the session's extractive summary from its observations (oldest first) and the prompts typed in it;
    returns the summary memory id, or None with nothing to say. It names ``day`` (``YYYY-MM-DD``; default:
    today, or the day replayed)."""
    from . import clock

    if not observations and not last_message and not prompts:
        return None
    failures.settle(db, observations)
    text = extractive_summary(observations, prompts=prompts, last_message=last_message, root=root,
                              date=day or clock.now()[:10])
    changed: list[str] = []
    for memory in observations:
        if memory.metadata.get("tool") in FILE_CHANGING_TOOLS:
            changed.extend(f for f in memory.files if f not in changed)
    salience = SUMMARY_SALIENCE if changed_something(observations) else LOOKED_ONLY_SALIENCE
    return store_summary(db, project_id=project_id, session_id=session_id, text=text, files=changed[:20],
                         method="extractive", salience=salience)
