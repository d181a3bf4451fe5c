"""Claude Code's session transcripts (JSONL): the one reader of the prompts a user typed and the tool uses.

A transcript's path comes from a hook payload and is kept with its session, so it is untrusted:
it is read only as a regular file (a FIFO or ``/dev/zero`` is refused before anything is read), at
most :data:`MAX_TRANSCRIPT_BYTES` in all, a line over :data:`MAX_LINE_BYTES` skipped unread
(:func:`ccmemory.safe_files.bounded_lines`), a line that is not a JSON object skipped. The Stop hook reads
the typed prompts (:func:`entries`, :func:`_user_record`); the embedder pairs each tool use with the
prompt that led to it; a backfill reads past sessions whole as :func:`records` (typed prompts,
Claude's replies, tool calls paired with their results, in transcript order), keeps what is final
(:func:`complete`) and finds them under Claude Code's configuration folder (:func:`session_files`).

The format is Claude Code's, undocumented and changing between versions; what is relied on here is
what 2.1.330 wrote: one JSON object per line; ``user`` and ``assistant`` lines carry ``uuid``,
``timestamp``, ``sessionId``, ``cwd``, ``gitBranch`` and ``isSidechain`` (a subagent's line); an
assistant line holds one content block (``text``, ``tool_use`` with ``id``, ``name``, ``input``);
a user line's content is a string (a typed prompt) or blocks, ``tool_result`` ones naming their
``tool_use_id`` with ``content`` and ``is_error``, the line's ``toolUseResult`` being what the
PostToolUse hook gets as ``tool_response``. Standard library only, nothing costly at import: the
Stop hook imports it.
"""

from __future__ import annotations

import json
import os
import stat

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Iterable, Iterator

MAX_TRANSCRIPT_BYTES = 20 * 1024 * 1024
MAX_LINE_BYTES = 1024 * 1024
#: Records (prompts, replies, tool calls) :func:`records` makes from one transcript.
MAX_RECORDS = 20_000
#: Entries looked at in one folder while transcripts are listed (projects, sessions, subagents).
MAX_DIR_ENTRIES = 100_000


def entries(path: str, *markers: bytes, root: str | None = None, max_bytes: int | None = None,
            problems: dict[str, int] | None = None, budget: Budget | None = None) -> Iterator[dict[str, Any]]:
    """The JSON objects of the transcript's lines that hold one of ``markers`` (tested on the bytes before
    parsing: most lines are tool results nobody asked for); lines that are not JSON objects are skipped.

    ``root`` refuses a file whose real location is outside it (checked on the opened file, see
    :func:`ccmemory.safe_files.open_fd`); ``max_bytes`` lowers or raises :data:`MAX_TRANSCRIPT_BYTES`.
    A last line still being written is cut JSON and so skipped like any malformed line. ``problems``,
    when given, counts what was skipped by kind (:data:`LONG_LINE`, :data:`NOT_JSON`). ``budget``, when given,
    is shared with other reads: at most what is left of it is read, and what was read is taken from it.

    Raises OSError or :class:`ccmemory.errors.ValidationError` when the file cannot or must not be read.
    """
    from . import safe_files

    total = MAX_TRANSCRIPT_BYTES if max_bytes is None else max_bytes
    if budget is not None:
        total = min(total, budget.left)
        if total <= 0:
            return
    with safe_files.open_regular(path, root=root) as handle:
        try:
            for raw in safe_files.bounded_lines(handle, total, MAX_LINE_BYTES):
                if raw is None:
                    _count(problems, LONG_LINE)
                    continue
                if not any(marker in raw for marker in markers):
                    continue
                try:
                    entry = json.loads(raw)
                except (ValueError, RecursionError):
                    _count(problems, NOT_JSON)
                    continue
                if isinstance(entry, dict):
                    yield entry
                else:
                    _count(problems, NOT_JSON)
        finally:
            if budget is not None:
                budget.take(handle.tell())


class Budget:
    """Bytes that several transcript reads share (:func:`entries`): ``left`` to read, ``read`` so far."""

    __slots__ = ("left", "read")

    def __init__(self, total: int) -> None:
        self.left = total
        self.read = 0

    def take(self, count: int) -> None:
        self.read += count
        self.left = max(0, self.left - count)


#: Kinds of line :func:`entries` and :func:`records` skip, as counted in their ``problems``.
LONG_LINE = f"line over {MAX_LINE_BYTES // (1024 * 1024)} MiB"
NOT_JSON = "line not a JSON object (cut, corrupt or binary)"
UNKNOWN_TYPE = "entry of an unknown type"
#: Entry types Claude Code writes besides ``user`` and ``assistant`` (2.1.x; and ``api-request*``), read past
#: without a word.
KNOWN_TYPES = frozenset({"user", "assistant", "attachment", "system", "summary", "queue-operation", "last-prompt",
                         "file-history-snapshot", "cost-state", "tools-used", "progress", "custom-title",
                         "tag", "agent-name", "mode", "pr-link", "worktree-state", "permission-mode"})


def _count(problems: dict[str, int] | None, kind: str) -> None:
    if problems is not None:
        problems[kind] = problems.get(kind, 0) + 1


#: How Claude Code (2.1.3xx) marks a user line that it wrote itself: a background task's notification is a
#: ``user`` line with ``promptSource`` "system", ``turnOrigin`` "task_notification" and an ``origin`` naming it
#: (earlier releases wrote the ``<task-notification>`` text alone).
_SYSTEM_SOURCES = frozenset({"system"})
_SYSTEM_ORIGINS = frozenset({"task_notification", "task-notification"})


def _content(entry: dict[str, Any]) -> str | None:
    """The text of a user line of the main chain that is not meta or a compaction summary, else None."""
    if entry.get("type") != "user":
        return None
    if entry.get("isMeta") or entry.get("isSidechain") or entry.get("isCompactSummary"):
        return None
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, str) and content.strip() else None


def system_turn(entry: dict[str, Any], content: str) -> bool:
    """Whether ``entry``, a user line holding ``content`` (:func:`_content`), is one Claude Code wrote itself to
    start a turn (a background task's notification): Claude answers it and Stop follows, but nobody typed it,
    and its text (a task's output) must never be taken for the user's request."""
    origin = entry.get("origin")
    return (entry.get("promptSource") in _SYSTEM_SOURCES or entry.get("turnOrigin") in _SYSTEM_ORIGINS
            or (isinstance(origin, dict) and origin.get("kind") in _SYSTEM_ORIGINS)
            or content.lstrip().startswith("<task-notification>"))


def _user_record(entry: dict[str, Any]) -> Record | None:
    """A user line as a record: a :class:`Prompt` the user typed, a :class:`TurnStart` of a turn Claude Code
    started itself, or None (a meta line, a subagent's prompt, a compaction summary, a slash command's output
    or its caveat, a tool result)."""
    content = _content(entry)
    if content is None:
        return None
    if system_turn(entry, content):
        return TurnStart(entry)
    if content.lstrip().startswith(("<command-", "<local-command", "Caveat:")):
        return None
    return Prompt(entry, content.strip())


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


class Record:
    """Where and when a transcript line was written: what every record carries.

    ``sidechain`` is true on a subagent's line; ``uuid`` is the line's own id (None when absent).
    """

    __slots__ = ("uuid", "timestamp", "session_id", "cwd", "git_branch", "sidechain")

    uuid: str | None
    timestamp: str | None
    session_id: str | None
    cwd: str | None
    git_branch: str | None
    sidechain: bool

    def __init__(self, entry: dict[str, Any]) -> None:
        self.uuid = _text(entry.get("uuid"))
        self.timestamp = _text(entry.get("timestamp"))
        self.session_id = _text(entry.get("sessionId"))
        self.cwd = _text(entry.get("cwd"))
        self.git_branch = _text(entry.get("gitBranch"))
        self.sidechain = entry.get("isSidechain") is True

    @property
    def moment(self) -> str:
        """When it happened, as the transcript wrote it ("" when unknown)."""
        return self.timestamp or ""

    def as_dict(self) -> dict[str, Any]:
        """Every field by name."""
        return {name: getattr(self, name) for cls in reversed(type(self).__mro__)
                for name in getattr(cls, "__slots__", ())}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.as_dict()!r})"


class Prompt(Record):
    """A prompt the user typed (see :func:`_user_record`); ``prompt_id`` ties it to its hook events."""

    __slots__ = ("text", "prompt_id")

    text: str
    prompt_id: str | None

    def __init__(self, entry: dict[str, Any], text: str) -> None:
        super().__init__(entry)
        self.text = text
        self.prompt_id = _text(entry.get("promptId"))


class TurnStart(Record):
    """A turn Claude Code started itself (see :func:`system_turn`): it splits turns as a prompt does, and holds
    no text, so nothing of it is ever read as a request."""

    __slots__ = ()


#: The records that start a turn.
TURN_STARTS = (Prompt, TurnStart)


class Reply(Record):
    """A text block Claude wrote; ``stop_reason`` ``"end_turn"`` marks the reply that ended a turn."""

    __slots__ = ("text", "message_id", "stop_reason")

    text: str
    message_id: str | None
    stop_reason: str | None

    def __init__(self, entry: dict[str, Any], message: dict[str, Any], text: str) -> None:
        super().__init__(entry)
        self.text = text
        self.message_id = _text(message.get("id"))
        self.stop_reason = _text(message.get("stop_reason"))


class ToolCall(Record):
    """A tool Claude called (the ``tool_use`` block; where and when are its line's) and its result.

    ``answered`` is false while no ``tool_result`` names the call (still running, or the session
    stopped first); then the result fields are None. ``result_text`` is the result's content (text
    blocks joined by newlines; images left out), ``tool_use_result`` the line's structured
    ``toolUseResult`` (what PostToolUse gets as ``tool_response``; None when the line answers several
    calls at once, as it cannot be told whose it is), ``is_error`` the result's flag.
    """

    __slots__ = ("tool_use_id", "tool_name", "tool_input", "answered", "result_text", "tool_use_result",
                 "is_error", "result_timestamp")

    tool_use_id: str
    tool_name: str
    tool_input: dict[str, Any]
    answered: bool
    result_text: str | None
    tool_use_result: Any
    is_error: bool | None
    result_timestamp: str | None

    def __init__(self, entry: dict[str, Any], tool_use_id: str, block: dict[str, Any]) -> None:
        super().__init__(entry)
        self.tool_use_id = tool_use_id
        self.tool_name = _text(block.get("name")) or ""
        tool_input = block.get("input")
        self.tool_input = tool_input if isinstance(tool_input, dict) else {}
        self.answered = False
        self.result_text = None
        self.tool_use_result = None
        self.is_error = None
        self.result_timestamp = None

    @property
    def moment(self) -> str:
        """When the call happened for ccmemory: when its result was written (when capture stores it), else when
        it was made ("" when unknown). Live capture and backfill both date a call so."""
        return self.result_timestamp or self.timestamp or ""

    def answer(self, block: dict[str, Any], entry: dict[str, Any], alone: bool) -> None:
        """Take the ``tool_result`` ``block`` of the user line ``entry``; ``alone``: the line answers only this call."""
        self.answered = True
        self.result_text = _result_text(block.get("content"))
        self.tool_use_result = entry.get("toolUseResult") if alone else None
        self.is_error = block.get("is_error") is True
        self.result_timestamp = _text(entry.get("timestamp"))
        for name, key in (("session_id", "sessionId"), ("cwd", "cwd"), ("git_branch", "gitBranch")):
            if getattr(self, name) is None:
                setattr(self, name, _text(entry.get(key)))


def _result_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(block["text"] for block in content
                         if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str))
    return ""


def _blocks(entry: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The line's message and its content blocks (dicts only; none when the content is a string)."""
    message = entry.get("message")
    if not isinstance(message, dict):
        return {}, []
    content = message.get("content")
    return message, [block for block in content if isinstance(block, dict)] if isinstance(content, list) else []


def records(path: str, *, root: str | None = None, max_bytes: int | None = None, limit: int | None = None,
            problems: dict[str, int] | None = None, budget: Budget | None = None) -> Iterator[Record]:
    """The transcript's typed prompts (:class:`Prompt`), Claude's text (:class:`Reply`) and tool calls paired
    with their results (:class:`ToolCall`), in the order they were written (a call where its ``tool_use`` is).

    A call is yielded once its result is read, or at the end of the file without one (an interrupted
    session, or a call still running: see :func:`complete`), so the records after a call wait for its
    result; parallel calls answered out of order keep their order. Subagents' lines are included
    (``sidechain``); a repeated ``tool_use`` id and a result naming no call read before are skipped.
    Read within the caps of :func:`entries` (``root``, ``max_bytes``, ``budget``); at most ``limit``
    (:data:`MAX_RECORDS`) records, after which the file is read on only for the results of calls made.
    ``problems`` counts the lines skipped (see :func:`entries`), and entries of a type not in
    :data:`KNOWN_TYPES` as ``"entry of an unknown type: <type>"``.
    """
    cap = MAX_RECORDS if limit is None else limit
    waiting: list[Record] = []
    pending: dict[str, ToolCall] = {}
    seen: set[str] = set()
    made = 0
    for entry in entries(path, b'"user"', b'"assistant"', root=root, max_bytes=max_bytes, problems=problems,
                         budget=budget):
        kind = entry.get("type")
        if problems is not None and kind not in KNOWN_TYPES and not str(kind).startswith("api-request"):
            _count(problems, f"{UNKNOWN_TYPE}: {str(kind)[:40]}")
        if kind == "user":
            _answer(entry, pending)
        if made < cap and kind in ("user", "assistant"):
            made += _read(entry, waiting, pending, seen, cap - made)
        ready = 0
        while ready < len(waiting) and _ready(waiting[ready]):
            ready += 1
        if ready:
            yield from waiting[:ready]
            del waiting[:ready]
        if made >= cap and not pending:
            break
    yield from waiting


def _ready(record: Record) -> bool:
    return not isinstance(record, ToolCall) or record.answered


def _answer(entry: dict[str, Any], pending: dict[str, ToolCall]) -> None:
    results = [block for block in _blocks(entry)[1] if block.get("type") == "tool_result"]
    for block in results:
        call = pending.pop(str(block.get("tool_use_id")), None)
        if call is not None:
            call.answer(block, entry, len(results) == 1)


def _read(entry: dict[str, Any], waiting: list[Record], pending: dict[str, ToolCall], seen: set[str],
          room: int) -> int:
    """Add the records of one line to ``waiting`` (at most ``room``); how many were added."""
    if entry.get("type") == "user":
        record = _user_record(entry)
        if record is None:
            return 0
        waiting.append(record)
        return 1
    message, blocks = _blocks(entry)
    added = 0
    for block in blocks:
        if added >= room:
            break
        kind, text, tool_use_id = block.get("type"), block.get("text"), block.get("id")
        if kind == "text" and isinstance(text, str) and text.strip():
            waiting.append(Reply(entry, message, text))
        elif kind == "tool_use" and isinstance(tool_use_id, str) and tool_use_id and tool_use_id not in seen:
            seen.add(tool_use_id)
            call = ToolCall(entry, tool_use_id, block)
            pending[tool_use_id] = call
            waiting.append(call)
        else:
            continue
        added += 1
    return added


def complete(found: Iterable[Record]) -> list[Record]:
    """The records of a transcript that are final: all of them up to the end of its last complete turn.

    A turn is a typed prompt and what follows it up to the next one (records before the first prompt,
    a subagent's work for one, form a turn of their own). A turn is complete when another prompt
    follows it (a call left without a result then was interrupted, and stays so), or when it ends on
    Claude's reply with ``stop_reason`` ``"end_turn"`` and every call in it has its result. So in a
    transcript still being written, the turn under way (a call waiting for its result, a reply not
    yet final) is left for a later read; a cut last line was already skipped by :func:`records`.
    """
    listed = list(found)
    start = 0
    for index, record in enumerate(listed):
        if isinstance(record, TURN_STARTS):
            start = index
    last = listed[start:]
    finished = bool(last) and isinstance(last[-1], Reply) and last[-1].stop_reason == "end_turn" \
        and all(record.answered for record in last if isinstance(record, ToolCall))
    return listed if finished else listed[:start]


class Session:
    """What the hooks read of a running session's transcripts at the end of a turn (Stop) or of the session.

    ``prompts``: the typed prompts, in order; ``calls``: the answered tool calls of the session and of its
    subagents, oldest result first; ``since``: when the turn before the last prompt ended, its reply written
    (None when no turn ended before it): the last turn's calls are those answered after it;
    ``turn_end``: when the reply that ended the last turn was written, when the transcript already holds it
    as its last main-chain record (None otherwise: the reply not written yet, or the turn interrupted), and
    ``last_reply`` its text. Times are in :mod:`ccmemory.clock`'s format. ``bytes_read``: what was read of
    the transcripts in all; ``left_out``: subagents' transcripts not read, the budget spent
    (see :func:`read_session`).
    """

    __slots__ = ("prompts", "calls", "since", "turn_end", "last_reply", "bytes_read", "left_out")

    def __init__(self) -> None:
        self.prompts: list[str] = []
        self.calls: list[ToolCall] = []
        self.since: str | None = None
        self.turn_end: str | None = None
        self.last_reply: str | None = None
        self.bytes_read = 0
        self.left_out = 0

    def call_times(self) -> dict[str, str]:
        """When each call happened, by ``tool_use_id``: when its result was written (what a backfill stores too)."""
        from .clock import canonical

        times = {}
        for call in self.calls:
            moment = canonical(call.moment)
            if moment is not None:
                times[call.tool_use_id] = moment
        return times


#: Bytes :func:`read_session` reads in all, of a session's transcript and its subagents' together.
SESSION_MAX_BYTES = MAX_TRANSCRIPT_BYTES


def read_session(path: str, session_id: str | None, *, last_message: str | None = None,
                 max_prompts: int | None = None, max_bytes: int | None = None, light: bool = False) -> Session:
    """Read a session's transcript and its subagents' (beside it, as :func:`session_files` finds them) within the
    caps of :func:`records`, and all together within ``max_bytes`` (:data:`SESSION_MAX_BYTES`): the session's
    own transcript first, then its subagents', the most recently written first, each reading what the others
    left; those it does not reach are counted in ``left_out``. ``last_message`` (Stop's
    ``last_assistant_message``) must be the text of the reply taken as ``turn_end``; ``max_prompts`` caps
    ``prompts``. Raises what :func:`records` raises for the main transcript; a subagent's transcript that
    cannot be read is left out.

    ``light`` (the hooks): a call answered before the last turn (at or before ``since``) keeps no input and no
    result (``tool_input`` empty, ``result_text`` and ``tool_use_result`` None), so memory does not grow with
    the session; the last turn's calls keep theirs, as Stop asks which of them capture stores
    (:func:`ccmemory.observations.skip_reason` measures the result). A backfill reads with :func:`records`.
    """
    from .clock import canonical
    from .errors import ValidationError

    budget = Budget(SESSION_MAX_BYTES if max_bytes is None else max_bytes)
    session = Session()
    last: Record | None = None
    holding: list[ToolCall] = []  # light: the calls that still hold their input and result
    for record in records(path, budget=budget):
        if isinstance(record, TURN_STARTS):
            if isinstance(record, Prompt) and (max_prompts is None or len(session.prompts) < max_prompts):
                session.prompts.append(record.text)
            session.since = canonical(last.timestamp) if isinstance(last, Reply) else session.since
            if light and session.since is not None:
                holding = [call for call in holding if not _lighten(call, session.since)]
        elif isinstance(record, ToolCall) and record.answered:
            session.calls.append(record)
            if light:
                holding.append(record)
        if not record.sidechain:
            last = record
    if isinstance(last, Reply) and (last_message is None or last.text.strip() == last_message.strip()):
        session.turn_end = canonical(last.timestamp)
        session.last_reply = last.text
    folder = os.path.dirname(os.path.realpath(path))
    if session_id:
        agents = [agent_path for _agent, agent_path in _subagents(folder, session_id, os.path.dirname(folder), None)]
        for agent_path in sorted(agents, key=_written, reverse=True):
            if budget.left <= 0:
                session.left_out += 1
                continue
            try:
                for record in records(agent_path, budget=budget):
                    if isinstance(record, ToolCall) and record.answered:
                        if light and session.since is not None:
                            _lighten(record, session.since)
                        session.calls.append(record)
            except (OSError, ValidationError, ValueError):
                continue
    session.bytes_read = budget.read
    session.calls.sort(key=lambda call: call.moment)
    return session


def _lighten(call: ToolCall, since: str) -> bool:
    """Drop the input and the result of ``call`` when it was answered at or before ``since`` (see
    :func:`read_session`); whether it was."""
    if since < (call.result_timestamp or ""):
        return False
    call.tool_input = {}
    call.result_text = None
    call.tool_use_result = None
    return True


def _written(path: str) -> int:
    """When the file was last written (0 when it cannot be told)."""
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return 0


class SessionFile:
    """A session's transcript under Claude Code's ``projects`` folder, and its subagents' transcripts.

    ``project`` is the folder's name: Claude Code's encoding of the session's working directory, which
    cannot be decoded (take ``cwd`` from the records instead). Paths are real paths, checked to lie
    inside the ``projects`` folder; ``subagents`` holds ``(agent id, path)`` pairs.
    """

    __slots__ = ("path", "project", "session_id", "subagents")

    def __init__(self, path: str, project: str, session_id: str, subagents: list[tuple[str, str]]) -> None:
        self.path = path
        self.project = project
        self.session_id = session_id
        self.subagents = subagents

    def __repr__(self) -> str:
        return f"SessionFile({self.path!r}, subagents={self.subagents!r})"


def folder_name(cwd: str) -> str:
    """The name of the folder Claude Code keeps a working directory's transcripts in: every character but an
    ASCII letter or digit becomes ``-`` (``/home/u/proj`` → ``-home-u-proj``). It cannot be decoded: ``/a/b-c``
    and ``/a/b/c`` share one."""
    return "".join(c if c.isascii() and c.isalnum() else "-" for c in cwd)


def projects_dir(config_dir: str | None = None) -> str:
    """The folder of the transcripts: ``projects`` in ``config_dir``, by default Claude Code's
    configuration folder (``$CLAUDE_CONFIG_DIR``, else ``~/.claude``; :func:`ccmemory.paths.claude_config_dir`)."""
    from . import paths

    return os.path.join(config_dir or paths.claude_config_dir(), "projects")


def session_files(config_dir: str | None = None, left_out: list[tuple[str, str]] | None = None
                  ) -> list[SessionFile]:
    """Every session transcript Claude Code kept, as laid out by 2.1.330:
    ``projects/<encoded cwd>/<session id>.jsonl``, its subagents' in
    ``projects/<encoded cwd>/<session id>/subagents/agent-<agent id>.jsonl``.

    Sorted by project, then session id. Links are resolved and anything whose real path is outside the
    real ``projects`` folder, or that is not a regular file (a FIFO, a device) or a folder as expected,
    is left out; at most :data:`MAX_DIR_ENTRIES` entries of each folder are looked at. No ``projects``
    folder: an empty list. Pass each path on to :func:`records` with ``root`` = :func:`projects_dir`,
    which checks it again on the opened file. ``left_out``, when given, receives ``(path, why)`` for each
    transcript (``*.jsonl``) or folder left out because it is a link out of the folder or not a regular file.
    """
    base = os.path.realpath(projects_dir(config_dir))
    found = []
    for project, folder in _inside(base, base, is_dir=True, left_out=left_out):
        for name, path in _inside(folder, base, is_dir=False, left_out=left_out):
            if name.endswith(".jsonl") and len(name) > len(".jsonl"):
                session_id = name[:-len(".jsonl")]
                found.append(SessionFile(path, project, session_id, _subagents(folder, session_id, base, left_out)))
    return found


def _subagents(folder: str, session_id: str, base: str, left_out: list[tuple[str, str]] | None
               ) -> list[tuple[str, str]]:
    agents = os.path.join(folder, session_id, "subagents")
    if not _within(agents, base, is_dir=True):
        return []
    return [(name[len("agent-"):-len(".jsonl")], path)
            for name, path in _inside(agents, base, is_dir=False, left_out=left_out)
            if name.startswith("agent-") and name.endswith(".jsonl") and len(name) > len("agent-.jsonl")]


def _inside(folder: str, base: str, *, is_dir: bool, left_out: list[tuple[str, str]] | None = None
            ) -> list[tuple[str, str]]:
    """``(name, real path)`` of the folders (``is_dir``) or regular files in ``folder`` that resolve inside
    ``base``, sorted by name; at most :data:`MAX_DIR_ENTRIES` entries looked at. What is left out goes to
    ``left_out`` (see :func:`session_files`): links out of ``base`` always, other entries when they are
    named like a transcript."""
    listed = []
    try:
        with os.scandir(folder) as scan:
            for count, item in enumerate(scan):
                if count >= MAX_DIR_ENTRIES:
                    break
                real = _within(item.path, base, is_dir=is_dir)
                if real is not None:
                    listed.append((item.name, real))
                elif left_out is not None:
                    _note_left_out(item.path, base, is_dir, left_out)
    except OSError:
        return []
    return sorted(listed)


def _note_left_out(path: str, base: str, is_dir: bool, left_out: list[tuple[str, str]]) -> None:
    from . import safe_files

    real = os.path.realpath(path)
    if real != base and not safe_files.is_inside(real, base):
        left_out.append((path, "a link out of Claude Code's projects folder"))
    elif not is_dir and path.endswith(".jsonl"):
        left_out.append((path, "not a regular file (a FIFO, a device or a folder)"))


def _within(path: str, base: str, *, is_dir: bool) -> str | None:
    """The real path of ``path`` when it lies inside ``base`` (not ``base`` itself) and is a folder
    (``is_dir``) or a regular file."""
    from . import safe_files

    real = os.path.realpath(path)
    if real == base or not safe_files.is_inside(real, base):
        return None
    try:
        mode = os.stat(real).st_mode
    except OSError:
        return None
    return real if (stat.S_ISDIR(mode) if is_dir else stat.S_ISREG(mode)) else None
