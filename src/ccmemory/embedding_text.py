"""The text a memory is embedded from: what matters in it, not its raw bulk.

The model reads at most :data:`ccmemory.embeddings.MAX_TOKENS` word pieces,
and embedding costs grow with every one of them, so a captured observation is
condensed before it is embedded: the request the user made when the tool ran
(from the session's transcript), the observation's head line (tool, file,
command), the lines an edit actually changed (the context lines an Edit repeats
on both sides are dropped, except those naming the function or class), and the first lines of any output or error. The
stored content, its keyword index and what search shows are untouched.
"""

from __future__ import annotations

import re

MAX_REQUEST_CHARS = 300
#: How many characters the model reads for a conversation turn, its context and the turn together: the context
#: fills the room the turn leaves. Every word piece read costs model time, and a long turn says what it is
#: about itself (BENCHMARKS.md, "A turn read with as much of the turn before as fits in 300 characters").
MAX_READ_CHARS = 300
#: A turn that leaves less room than this is read alone: a few words of the turn before say little.
MIN_CONTEXT_CHARS = 40
#: A sentence of fewer words says little on its own ("Wow!", "Thanks, Gina!") and gets no vector of its own.
MIN_SENTENCE_WORDS = 3
#: Where a sentence ends: after ".", "!" or "?" and a space, or at a line's end (the local context's
#: decisions are cut at the same ends, :func:`ccmemory.activity.decisions`).
SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"\w+")
MAX_CHARS = 1600
#: Lines after which a block of output is cut: the head of a trace or a test run says what happened.
MAX_BLOCK_LINES = 12
_ELIDED = re.compile(r"^\[… \d+ characters elided …\]$")
#: Context lines worth keeping although an edit repeats them: they name the function or class being changed.
_DEFINITION = re.compile(r"^\s*(export\s+)?(async\s+)?(def|class|function|func|fn|struct|interface|impl|module)\b")
#: Tools whose observation is a diff (a Write or NotebookEdit stores the new text itself).
_DIFF_TOOLS = ("Edit", "MultiEdit")


def condensed(content: str, tool: str = "") -> str:
    """An observation of ``tool`` without the diff context it repeats and with long output blocks cut.

    An edit stores its context once, as lines starting with two spaces (older rows repeat
    it on both sides, as ``-`` and ``+`` lines); either way only context lines naming a
    function or class are kept.
    """
    lines = content.splitlines()
    if lines and tool in _DIFF_TOOLS:
        lines = [lines[0]] + [kept for kept in map(_context, lines[1:]) if kept]
    removed = {line[2:].strip() for line in lines if line.startswith("- ")}
    added = {line[2:].strip() for line in lines if line.startswith("+ ")}
    unchanged = removed & added
    kept: list[str] = []
    kept_context: set[str] = set()
    block = 0
    for line in lines:
        if _ELIDED.match(line.strip()):
            continue
        if line[:2] in ("- ", "+ ") and line[2:].strip() in unchanged:
            if _DEFINITION.match(line[2:]) and line[2:].strip() not in kept_context:
                kept_context.add(line[2:].strip())
                kept.append(line[2:].rstrip())
            continue
        if line[:2] in ("- ", "+ ") and not line[2:].strip():
            continue
        if line.endswith(":") and line in ("Output:", "Stderr:", "Error:", "Result:"):
            block = 0
        else:
            block += 1
        if block > MAX_BLOCK_LINES and line[:2] not in ("- ", "+ "):
            continue
        kept.append(line.rstrip())
    return "\n".join(kept)[:MAX_CHARS]


def _context(line: str) -> str:
    """An edit's context line as the definition it names (unprefixed), or "" when it names none."""
    if not line.startswith("  "):
        return line
    return line[2:].rstrip() if _DEFINITION.match(line[2:]) else ""


def memory_text(content: str, request: str | None = None, tool: str = "") -> str:
    """What to embed for a captured observation of ``tool``: its request (when known), then its condensed content."""
    body = condensed(content, tool)
    if request:
        request = " ".join(request.split())[:MAX_REQUEST_CHARS]
        if request not in body:
            return f"Request: {request}\n{body}"
    return body


def context_before(previous: str, turn: str) -> str:
    """What of the memory before a conversation turn the turn is read after when it is embedded ("": none).

    A turn often means little alone ("Yes, last Tuesday!"): the question it answers says what it is about.
    The turn before is kept from its start (who speaks, and about what), as much as fits beside the turn in
    :data:`MAX_READ_CHARS` (whitespace collapsed, cut at a word's end); a turn that leaves less than
    :data:`MIN_CONTEXT_CHARS` is read alone.
    """
    room = MAX_READ_CHARS - len(" ".join(turn.split()))
    if room < MIN_CONTEXT_CHARS:
        return ""
    previous = " ".join(previous.split())
    if len(previous) <= room:
        return previous
    cut = previous[:room + 1]
    return cut.rsplit(" ", 1)[0] if " " in cut else cut[:room]


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each sentence of ``text`` that has :data:`MIN_SENTENCE_WORDS` words or more.

    Empty unless there are two or more such sentences: a memory that says one thing is its own sentence.
    A sentence ends after ".", "!" or "?" followed by a space, or at a line's end ("3.5" and "file.py" do
    not end one).
    """
    spans: list[tuple[int, int]] = []
    start = 0
    for end in [*(cut.start() for cut in SENTENCE_END.finditer(text)), len(text)]:
        sentence = text[start:end]
        if len(_WORD.findall(sentence)) >= MIN_SENTENCE_WORDS:
            lead = len(sentence) - len(sentence.lstrip())
            spans.append((start + lead, start + len(sentence.rstrip())))
        cut = SENTENCE_END.match(text, end)
        start = cut.end() if cut else end
    return spans if len(spans) > 1 else []


def requests_by_tool_use(transcript_path: str | None) -> dict[str, str]:
    """For each ``tool_use`` id in a transcript, the user prompt that led to it.

    Reads the transcript JSONL once, through :func:`ccmemory.transcript.records` (the reader backfill
    and the Stop hook use); an unreadable, missing or refused file gives an empty map, and
    the memories are embedded without a request.
    """
    from . import transcript
    from .errors import ValidationError

    found: dict[str, str] = {}
    if not transcript_path:
        return found
    prompt = ""
    try:
        for record in transcript.records(transcript_path):
            if isinstance(record, transcript.Prompt):
                prompt = record.text
            elif isinstance(record, transcript.ToolCall) and prompt:
                found[record.tool_use_id] = prompt
    except (OSError, ValidationError):
        return {}
    return found
