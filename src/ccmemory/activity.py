"""Stop: one entry of the rolling local context per turn that did something.

The entry is built from what the capture hook already stored for this session
since the last entry (so the capture path itself does no extra work), plus the
turn's request from the transcript and Claude's last reply: the files changed
and read, the commands run, decisions stated, errors met. Its theme, which
groups it with others once it is old (see :mod:`ccmemory.local_context`), is
the area of the project it touched most.
"""

from __future__ import annotations

import json
import os
import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Sequence
    from .db import Database

from . import local_context
from .embedding_text import SENTENCE_END
from .excerpts import cut, ends
from .observations import shown_command, tool_of
from .vocabulary import FILE_CHANGING_TOOLS
from .redaction import redact


def _relative(path: str, root: str) -> str:
    prefix = root.rstrip(os.sep) + os.sep
    return path[len(prefix):] if path.startswith(prefix) else path


def theme_of(files: Sequence[str], root: str, ran_commands: bool) -> str:
    """The area a turn worked in: the most common folder (two levels at most) of its files."""
    counts: dict[str, int] = {}
    for path in files:
        relative = _relative(path, root)
        if os.path.isabs(relative):
            area = "outside the project"
        else:
            area = "/".join(relative.split(os.sep)[:-1][:2]) or "top level"
        counts[area] = counts.get(area, 0) + 1
    if counts:
        return max(counts.items(), key=lambda kv: kv[1])[0]
    return "shell commands" if ran_commands else "conversation"


_DECISION_CUES = re.compile(
    r"\b(decided|decision|chose|chosen|opted|instead of|going with|went with|switched to|we will|we'll use|"
    r"I'll use|prefer|trade-?off|because|so that|rather than)\b",
    re.IGNORECASE,
)
#: The title of an entry of a turn without a prompt: what its calls were.
TOOL_WORK = "Tool work: "


def decisions(texts: Sequence[str], limit: int = 5) -> list[str]:
    """Sentences that state a choice or a reason, in order, without repeats."""
    found: list[str] = []
    for text in texts:
        for sentence in SENTENCE_END.split(text):
            sentence = sentence.strip(" -*•\t")
            if 20 <= len(sentence) <= 300 and _DECISION_CUES.search(sentence) and sentence not in found:
                found.append(sentence)
                if len(found) == limit:
                    return found
    return found


#: The lines of an entry, in order, by label: True for those drawn from the turn's prompt and reply, False for
#: those drawn from its calls.
_LINES = {"Files changed": False, "Files read": False, "Commands": False, "Decisions": True, "Errors": False,
          "Outcome": True}


def build_entry(observations: Sequence[Any], *, prompt: str | None, last_message: str | None,
                root: str, kept: Sequence[str] = ()) -> dict[str, Any] | None:
    """The entry for one turn (observations oldest first), or None when the turn did nothing worth a line.

    ``kept``: the lines of an entry written earlier for the turn, whose prompt and reply are no longer at
    hand (:func:`add_late_calls`); those drawn from them are kept, the others made again from ``observations``.
    """
    changed: list[str] = []
    read: list[str] = []
    commands: list[str] = []
    errors: list[str] = []
    tally: dict[str, int] = {}
    for memory in observations:
        tool = tool_of(memory.metadata)
        tally[tool] = tally.get(tool, 0) + 1
        target = changed if tool in FILE_CHANGING_TOOLS else read if tool == "Read" else None  # Grep/Glob name folders
        if target is not None:
            target.extend(f for f in memory.files if f not in target)
        if tool == "Bash":
            commands.append(cut(shown_command(memory.metadata), 120))
        if memory.category == "gotcha":
            errors.append(cut(memory.content.split("\n", 1)[0], 160))
    read = [f for f in read if f not in changed]
    outcome = redact(last_message or "").strip()
    request = redact(prompt or "").strip()
    chosen = decisions([outcome, request], limit=3)
    lines = {label: text for label, _, text in (line.partition(": ") for line in kept) if _LINES.get(label)}
    if not observations and not chosen and not lines:
        return None
    for label, items, most in (("Files changed", changed, 8), ("Files read", read, 5)):
        if items:
            more = f" (+{len(items) - most} more)" if len(items) > most else ""
            lines[label] = f"{', '.join(_relative(f, root) for f in items[:most])}{more}"
    if commands:
        lines["Commands"] = "; ".join(commands[-4:])
    if chosen:
        lines["Decisions"] = "; ".join(chosen)
    if errors:
        lines["Errors"] = "; ".join(errors[-2:])
    if outcome:
        lines["Outcome"] = ends(outcome, 200)
    details = [f"{label}: {lines[label]}" for label in _LINES if label in lines]
    title = request or TOOL_WORK + ", ".join(f"{n} {tool}" for tool, n in sorted(tally.items()))
    return {"title": title, "details": details, "files": changed or read,
            "theme": theme_of(changed or read, root, bool(commands)),
            "last_seq": max((m.seq for m in observations), default=0)}


def record_turn(db: Database, *, directory: str, session_id: str, observations: Sequence[Any], prompt: str | None,
                last_message: str | None, root: str, enabled_by_default: bool, until: str | None = None) -> bool:
    """Add this turn's entry to the directory's log when the log is on there; True if one was added.

    The turn's observations are those of the session no earlier entry took: stored since it (by ``seq``, so
    a call whose hook ran late is not lost) or happened after it (by ``created_at``: a call an earlier entry
    left for later). ``until``, when the turn ended, leaves a call that happened after it (a subagent still at
    work) to the next entry; the entry is then dated ``until``, else now.
    """
    if not local_context.is_enabled(db, directory, enabled_by_default):
        return False
    mark, mark_at = local_context.watermark(db, directory, session_id)
    fresh = [m for m in observations if (m.seq > mark or (mark_at is not None and m.created_at > mark_at))
             and (until is None or m.created_at <= until)]
    entry = build_entry(fresh, prompt=prompt, last_message=last_message, root=root)
    if entry is None:
        return False
    entry["last_seq"] = max(entry["last_seq"], mark)
    local_context.record(db, directory, session_id=session_id, at=until, **entry)
    return True


def add_late_calls(db: Database, *, directory: str, session_id: str, observations: Sequence[Any], root: str,
                   enabled_by_default: bool) -> int:
    """Put calls captured after their turn's entry was written (Stop does not wait for a failed call's hook) into
    that entry, as a backfill of the transcript files them by their time; returns how many entries changed.

    A call belongs to the entry of the turn it happened in: the first entry of the session dated at or after it
    (the captured calls carry their transcript times). The entry's call lines, files and theme are made again
    from all the calls of its turn; its title and the lines drawn from the prompt and reply are kept (a title
    that only tallied the calls is made again too).
    """
    if not local_context.is_enabled(db, directory, enabled_by_default):
        return 0
    mark, _ = local_context.watermark(db, directory, session_id)
    late = [m for m in observations if m.seq > mark]
    if not late:
        return 0
    changed, previous = 0, ""
    for entry in local_context.session_entries(db, directory, session_id):
        start, previous = previous, entry["at"]
        mine = [m for m in late if start < m.created_at <= entry["at"]]
        if not mine:
            continue
        rebuilt = build_entry([m for m in observations if start < m.created_at <= entry["at"]], prompt=None,
                              last_message=None, root=root, kept=json.loads(entry["details"]))
        if rebuilt is None:
            continue
        title = rebuilt["title"] if entry["title"].startswith(TOOL_WORK) else entry["title"]
        changed += local_context.rewrite_entry(db, entry["id"], title=title, details=rebuilt["details"],
                                               files=rebuilt["files"], theme=rebuilt["theme"],
                                               last_seq=max(entry["last_seq"], *(m.seq for m in mine)))
    return changed
