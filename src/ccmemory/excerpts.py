"""Shortening text for storage and display: whole words, and never longer for being cut.

Every place that shows or keeps part of a text uses these, so a cut is the same everywhere:
at a word boundary (unless a single word is longer than the room), with a marker that is never
longer than what it replaces, and never past the limit it was given. Standard library only, no
imports: the hooks use it on every tool call.
"""

from __future__ import annotations

ELLIPSIS = "…"
#: Characters per token of Claude's context, roughly: what a context budget in tokens is cut to.
CHARS_PER_TOKEN = 4
_SPACES = (" ", "\n", "\t")


def _head(text: str, room: int) -> str:
    """The start of ``text`` in at most ``room`` characters, ending at a word boundary (mid-word only when
    the room holds no boundary at all: one long word)."""
    if room <= 0:
        return ""
    head = text[:room]
    if room < len(text) and not text[room].isspace():
        space = max(head.rfind(mark) for mark in _SPACES)
        if space > 0:
            head = head[:space]
    return head.rstrip()


def _tail(text: str, room: int) -> str:
    """The end of ``text`` in at most ``room`` characters, starting at a word boundary ("" when the room
    holds no whole word)."""
    if room <= 0:
        return ""
    start = max(0, len(text) - room)
    tail = text[start:]
    if start > 0 and not text[start - 1].isspace():
        found = [index for index in (tail.find(mark) for mark in _SPACES) if index >= 0]
        tail = tail[min(found) + 1:] if found else ""
    return tail.lstrip()


def one_line(text: str, limit: int) -> str:
    """``text`` on one line (white space folded), at most ``limit`` characters, cut after a word with "…"."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    return _head(flat, limit - len(ELLIPSIS)) + ELLIPSIS


def clip(text: str, limit: int) -> str:
    """``text`` as it is (no folding, no word boundary): when longer than ``limit``, its first ``limit``
    characters and "…".

    For values echoed in a message (a path, a repr), where every character counts and words do not.
    """
    return text if len(text) <= limit else text[:limit] + ELLIPSIS


def ends(text: str, limit: int, *, tail_share: float = 1 / 3) -> str:
    """``text`` on one line, at most ``limit`` characters, keeping its start and its end: "start … end".

    For what ends with its conclusion (an outcome: "…, so the tests pass").
    """
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    room = limit - len(" … ")
    tail = _tail(flat, int(room * tail_share))
    head = _head(flat, room - len(tail))
    return f"{head} {ELLIPSIS} {tail}" if tail else head + ELLIPSIS


def cut(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` characters: its head (about two thirds) and tail, with a line saying how
    much was left out between them (``[… N characters elided …]``), which is always shorter than what it
    replaces."""
    if len(text) <= limit:
        return text
    room = limit - len(f"\n[{ELLIPSIS} {len(text)} characters elided {ELLIPSIS}]\n")
    if room <= 0:
        return one_line(text, limit)
    head = _head(text, room * 2 // 3)
    tail = _tail(text, room - len(head))
    return f"{head}\n[{ELLIPSIS} {len(text) - len(head) - len(tail)} characters elided {ELLIPSIS}]\n{tail}"


def counted(number: int, noun: str) -> str:
    """``1 memory``, ``3 memories``, ``2 projects``."""
    if number == 1:
        return f"1 {noun}"
    return f"{number} {noun[:-1] + 'ies' if noun.endswith('y') else noun + 's'}"


def estimate_tokens(text: str) -> int:
    """A rough count of the tokens a text costs in Claude's context (characters / 4, rounded up).

    The one estimate shown beside memories, by SessionStart and the MCP tools (``~N tok``);
    :mod:`ccmemory.tokens` counts the embedding model's tokens instead.
    """
    return max(1, -(-len(text) // CHARS_PER_TOKEN))
