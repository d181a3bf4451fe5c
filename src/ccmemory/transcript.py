"""Claude Code's session transcripts (JSONL): the one reader of the prompts a user typed and the tool uses.

A transcript's path comes from a hook payload and is kept with its session, so it is untrusted:
it is read only as a regular file (a FIFO or ``/dev/zero`` is refused before anything is read), at
most :data:`MAX_TRANSCRIPT_BYTES` in all, a line over :data:`MAX_LINE_BYTES` skipped unread
(:func:`ccmemory.safe_files.lines`). The Stop hook reads the typed prompts; the embedder pairs
each tool use with the prompt that led to it. Standard library only: the Stop hook imports it.
"""

from __future__ import annotations

import json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Iterator

MAX_TRANSCRIPT_BYTES = 20 * 1024 * 1024
MAX_LINE_BYTES = 1024 * 1024


def entries(path: str, *markers: bytes) -> Iterator[dict[str, Any]]:
    """The JSON objects of the transcript's lines that hold one of ``markers`` (tested on the bytes before
    parsing: most lines are tool results nobody asked for); lines that are not JSON objects are skipped.

    Raises OSError or :class:`ccmemory.errors.ValidationError` when the file cannot or must not be read.
    """
    from . import safe_files

    for raw in safe_files.lines(path, max_bytes=MAX_TRANSCRIPT_BYTES, max_line_bytes=MAX_LINE_BYTES):
        if not any(marker in raw for marker in markers):
            continue
        try:
            entry = json.loads(raw)
        except (ValueError, RecursionError):
            continue
        if isinstance(entry, dict):
            yield entry


def typed_prompt(entry: dict[str, Any]) -> str | None:
    """The text the user typed, when ``entry`` is such a prompt (not a meta line, a subagent's prompt, a
    compaction summary, a slash command's output or its caveat)."""
    if entry.get("type") != "user":
        return None
    if entry.get("isMeta") or entry.get("isSidechain") or entry.get("isCompactSummary"):
        return None
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, str) or not content.strip():
        return None
    if content.lstrip().startswith(("<command-", "<local-command", "Caveat:")):
        return None
    return content.strip()
