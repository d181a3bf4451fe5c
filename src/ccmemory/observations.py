"""What a captured tool call is: its readable text, and the facts about it kept as structured metadata.

The capture hook (:mod:`ccmemory.hooks.post_tool_use`) builds one :class:`Observation` per tool
call with :func:`from_payload` and stores it as a memory with sector ``episodic``, tier
``session``, source ``capture`` and the tool call's ``tool_use_id`` as dedupe key, so a
re-delivered payload is stored once.

Its ``content`` is a few readable lines (what the tool did, on which files, with a capped
excerpt of its input and result; an edit as a diff whose context lines are stored once; what was written to,
edited in or printed from a file whose name says its content is a secret, such as ``config/master.key``, only
as how many characters were withheld: :mod:`ccmemory.secret_files`). Its
first line, the *head*, says what was called (``Ran: pytest -x (Run the tests)``), and ends in
:data:`FAILED_MARK` when the call failed (:data:`INTERRUPTED_MARK` when the user interrupted
it). That text is for people and search: every module that
needs a fact about the call reads it from the memory's ``metadata`` column instead, a JSON object
with these keys (only ``tool`` is always there):

``tool``           the tool's name (``Bash``, ``Edit``, ``mcp__server__tool`` …)
``tool_use_id``    Claude Code's id of the call, which ties the memory to its transcript entry
``outcome``        ``"failed"`` when the call failed, ``"interrupted"`` when the user interrupted it
                   (Esc: not a failure of the tool, so neither a gotcha nor promoted); absent
                   when it succeeded (:func:`outcome`)
``multiline``      ``true`` when the head runs over several lines (a script, a pattern with line
                   breaks), so its failure mark is not on the first line; stores older than
                   schema 12 have it for failures only
``command``        Bash: the command as stored (private spans and secrets removed, cut); in
                   rows stored before schema 12, the head's first line with its description
``description``    Bash: the description Claude gave the command, when it gave one
``scope``          an edit: the function or class it changed (:func:`edit_scope`)
``fixed_by``       a failure a later call of the session fixed: that call's memory id (set at
                   Stop by :mod:`ccmemory.failures`)
``seen``           the project files the call named as they were then, ``{relative path: [size,
                   mtime_ns]}``, recorded by the capture hook (:mod:`ccmemory.staleness`)

The files a call named are the memory's ``files`` column. Rows stored before these keys existed
were given them by migration 12, which parsed their text once.

Salience says how much an observation matters; SessionEnd promotes session
memories above 0.7 (``promotion.min_salience``) to the project tier:

========================================  ========  ==========
observation                               salience  category
========================================  ========  ==========
a failed call (PostToolUseFailure, MCP    0.75      gotcha
``isError``, ``success: false``, a Bash
call ``interrupted`` before it finished)
Write, Edit, MultiEdit, NotebookEdit      0.6       general
Task / Agent (subagent work)              0.55      general
WebFetch, WebSearch                       0.5       general
Bash                                      0.45      general
MCP tools and any other tool              0.4       general
Read, Grep, Glob, LS (routine look-ups)   0.3       general
========================================  ========  ==========

So failures outlive their session, edits stay findable, and routine reads fade.
Skipped (:func:`skip_reason`): tools in ``capture.skip_tools``, ccmemory's own MCP tools, and results
larger than ``capture.max_result_chars`` (10,000 characters of JSON; logged in ``hooks.log``). What is
never stored does not count (:func:`result_size`): for file-changing tools the fields that only echo
the file or the edit back (``originalFile``, ``structuredPatch``, ``gitDiff``, Write's ``content``,
NotebookEdit's ``original_file``, ``updated_file`` and sources), or every edit of a large file would be
lost; a Read's file content; a WebSearch's pages beside its titles and addresses.

Standard library only and cheap to import: the capture hook loads it on every tool call.
"""

from __future__ import annotations

import json
import os
from collections import deque
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable
    from .transcript import ToolCall

from .config import Config
from .excerpts import cut
from .vocabulary import FILE_CHANGING_TOOLS, LOOKUP_TOOLS
from .redaction import redact, redact_value, strip_private
from .secret_files import is_secret_file, printed_secret_file, withheld

MAX_OBSERVATION_CHARS = 8000
#: Characters read beyond a field's cut on each side, so no secret is cut in half before the scan.
REDACTION_MARGIN = 10_000
MAX_FILES = 20
MAX_LISTED_NAMES = 10
MAX_SCOPE_SOURCE_CHARS = 2_000_000

#: Appended to the head of a failed call.
FAILED_MARK = " (failed)"
#: ``outcome`` of a failed call (a call that succeeded stores none).
FAILED = "failed"
OK = "ok"
#: ``outcome`` of a call the user interrupted, and the mark appended to its head.
INTERRUPTED = "interrupted"
INTERRUPTED_MARK = " (interrupted)"
#: How Claude Code's result of an interrupted call begins (a transcript has no ``is_interrupt`` flag).
INTERRUPT_TEXT = "[Request interrupted by user"
SALIENCE_FAILURE = 0.75
SALIENCE = {
    "Write": 0.6, "Edit": 0.6, "MultiEdit": 0.6, "NotebookEdit": 0.6,
    "Task": 0.55, "Agent": 0.55,
    "WebFetch": 0.5, "WebSearch": 0.5,
    "Bash": 0.45,
    **{tool: 0.3 for tool in LOOKUP_TOOLS},
}
SALIENCE_OTHER = 0.4

#: What a Read returns of the file itself (text, an image's or a PDF's data, a notebook's cells).
_READ_CONTENT = ("content", "base64", "cells", "parts", "data")
_ECHO_FIELDS = ("originalFile", "structuredPatch", "gitDiff", "content", "oldString", "newString", "edits",
                "original_file", "updated_file", "old_source", "new_source")


class Observation:
    """What capture stores for one tool call: the memory's text, files, category, salience and metadata."""

    __slots__ = ("tool", "content", "files", "category", "salience", "metadata")

    def __init__(self, tool: str, content: str, files: list[str], category: str, salience: float,
                 metadata: dict[str, Any]) -> None:
        self.tool = tool
        self.content = content
        self.files = files
        self.category = category
        self.salience = salience
        self.metadata = metadata


def is_own_tool(tool_name: str) -> bool:
    """ccmemory's MCP tools: recording them would feed memory searches back into memory."""
    return "plugin_ccmemory_" in tool_name or tool_name.startswith("mcp__ccmemory")


#: The kinds of :class:`Skip`: what backfill's report counts.
NO_TOOL_NAME = "no tool name"
OWN_TOOL = "one of ccmemory's own tools"
SKIPPED_TOOL = "in capture.skip_tools"
TOO_LARGE = "result over capture.max_result_chars"


class Skip:
    """Why a tool call is not recorded: ``kind`` (one of the constants above) and ``text``, said in full."""

    __slots__ = ("kind", "text")

    def __init__(self, kind: str, text: str) -> None:
        self.kind = kind
        self.text = text


def skip_reason(data: dict[str, Any], config: Config) -> Skip | None:
    """Why this tool call is not recorded, or None to record it.

    A text ends with the tool's name, so whatever a name holds is the end of its line in the log.
    """
    tool = _text(data, "tool_name")
    if tool is None:
        return Skip(NO_TOOL_NAME, "the payload has no tool_name")
    if is_own_tool(tool):
        return Skip(OWN_TOOL, f"{OWN_TOOL}: {tool}")
    for pattern in config.get("capture", "skip_tools"):
        if tool == pattern or (pattern.endswith("*") and tool.startswith(pattern[:-1])):
            return Skip(SKIPPED_TOOL, f"{SKIPPED_TOOL}: {tool}")
    limit = config.get("capture", "max_result_chars")
    size = result_size(tool, tool_response(data))
    if size > limit:
        return Skip(TOO_LARGE, f"the result is {size} characters, over capture.max_result_chars={limit}: {tool}")
    return None


def tool_response(data: dict[str, Any]) -> Any:
    """The tool's result; older payloads and the seeds call it ``tool_result``."""
    return data["tool_response"] if "tool_response" in data else data.get("tool_result")


def result_size(tool: str, response: Any) -> int:
    """Characters of the result serialized as JSON (a string counts with its quotes, like JSON.stringify).

    What capture never stores does not count: the file an edit echoes back, the content a Read returns
    (only its path and extent are stored) and the pages of a WebSearch's hits (only titles and addresses).
    """
    if response is None:
        return 0
    if tool in FILE_CHANGING_TOOLS and isinstance(response, dict):
        response = {k: v for k, v in response.items() if k not in _ECHO_FIELDS}
    elif tool == "Read" and isinstance(response, dict) and isinstance(response.get("file"), dict):
        response = {**response, "file": {k: v for k, v in response["file"].items() if k not in _READ_CONTENT}}
    elif tool == "WebSearch" and (links := _titled_links(response)):
        response = links[:8]
    return len(_dumps(response))


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _clean(value: Any, limit: int) -> str:
    """Any value as stored text: stringified, private spans and secrets removed, then cut.

    A huge value is first cut to its head and tail with :data:`REDACTION_MARGIN` characters to
    spare, so the scanner reads a bounded amount and still sees whole every secret that can
    reach the kept text. Private spans are removed from the whole text first (one linear
    search): a ``<private>`` opened in the head and closed in the tail hides the middle too.
    """
    text = strip_private(value) if isinstance(value, str) else _dumps(redact_value(value))
    head, tail = int(limit * 0.6), int(limit * 0.3)
    if len(text) > limit + 2 * REDACTION_MARGIN:
        kept_head = redact(text[:head + REDACTION_MARGIN]).lstrip()[:head]
        kept_tail = redact(text[len(text) - tail - REDACTION_MARGIN:]).rstrip()
        kept_tail = kept_tail[len(kept_tail) - tail:]
        return f"{kept_head}\n[… about {len(text) - head - tail} characters elided …]\n{kept_tail}"
    return cut(redact(text).strip(), limit)


def response_text(response: Any) -> str:
    """The readable text of a tool result: MCP content arrays and ``content`` blocks are joined."""
    if response is None:
        return ""
    if isinstance(response, str):
        return response
    blocks = response.get("content") if isinstance(response, dict) else response
    if isinstance(blocks, list) and blocks and all(isinstance(b, dict) and "type" in b for b in blocks):
        return "\n".join(_block_text(block) for block in blocks)
    if isinstance(response, dict):
        for key in ("result", "output", "text", "stdout"):
            if isinstance(response.get(key), str):
                return response[key]
    return _dumps(response)


def _block_text(block: dict[str, Any]) -> str:
    """One MCP content block as text: a text as itself, a resource by its address and text, a link by its name,
    address and description, and media by kind and type alone (their base64 data is never stored)."""
    def said(value: Any) -> str:
        return value if isinstance(value, str) else ""

    kind = said(block.get("type")) or "?"
    if kind == "text":
        return said(block.get("text"))
    if kind == "resource" and isinstance(block.get("resource"), dict):
        resource = block["resource"]
        address = said(resource.get("uri"))
        if said(resource.get("text")):
            return f"[resource {address}]\n{resource['text']}"
        return f"[resource {address} {said(resource.get('mimeType'))}, binary, not stored]"
    if kind == "resource_link":
        described = said(block.get("description"))
        return f"[link {said(block.get('name'))} <{said(block.get('uri'))}>]" + (f" {described}" if described else "")
    media = said(block.get("mimeType"))
    return f"[{kind} {media}]" if media else f"[{kind}]"


class _Builder:
    """Formats one payload; each ``_tool_*`` method appends lines and files."""

    def __init__(self, data: dict[str, Any], config: Config, root: str, cwd: str) -> None:
        self.data = data
        self.tool = _text(data, "tool_name") or "unknown"
        raw_input = data.get("tool_input")
        self.input: dict[str, Any] = raw_input if isinstance(raw_input, dict) else {}
        self.response = tool_response(data)
        self.limit: int = config.get("capture", "max_field_chars")
        self.root = root
        self.cwd = cwd
        self.lines: list[str] = []
        self.files: list[str] = []
        #: Metadata the formatters record beside the text (see the module docstring).
        self.facts: dict[str, Any] = {}

    # -- helpers -----------------------------------------------------------------------------------
    def arg(self, key: str) -> str:
        value = self.input.get(key)
        return value if isinstance(value, str) else ""

    def field(self, value: Any, limit: int | None = None) -> str:
        return _clean(value, limit or self.limit)

    def add_file(self, path: Any) -> str:
        """Record a path (made absolute against the cwd) and return it as shown: relative to the project."""
        if not isinstance(path, str) or not path.strip():
            return ""
        path = redact(path.strip())
        full = path if os.path.isabs(path) else os.path.normpath(os.path.join(self.cwd, path))
        if full not in self.files and len(self.files) < MAX_FILES:
            self.files.append(full)
        if full == self.root:
            return "."
        if full.startswith(self.root.rstrip(os.sep) + os.sep):
            return full[len(self.root.rstrip(os.sep)) + 1:]
        return full

    def response_dict(self) -> dict[str, Any]:
        return self.response if isinstance(self.response, dict) else {}

    def filenames(self) -> list[str]:
        names = self.response_dict().get("filenames")
        return [n for n in names if isinstance(n, str)] if isinstance(names, list) else []

    def interrupted(self) -> bool:
        """Whether the user interrupted the call (``is_interrupt``, or a transcript's result saying so)."""
        error = self.data.get("error")
        return self.data.get("is_interrupt") is True or (isinstance(error, str)
                                                         and error.lstrip().startswith(INTERRUPT_TEXT))

    def failure(self) -> str | None:
        """The error text when the call failed, else None."""
        if self.data.get("hook_event_name") == "PostToolUseFailure" or "error" in self.data:
            error = self.data.get("error")
            return error if isinstance(error, str) and error.strip() else "the tool call failed"
        response = self.response_dict()
        if response.get("isError") is True or response.get("is_error") is True:
            return response_text(response) or "the tool reported an error"
        if response.get("success") is False:
            return response_text(response) or "the tool reported success: false"
        if response.get("interrupted") is True:
            return "interrupted before it finished"
        return None

    # -- per tool ----------------------------------------------------------------------------------
    def _tool_Read(self) -> None:
        shown = self.add_file(self.arg("file_path"))
        info = self.response_dict().get("file")
        extent = ""
        if isinstance(info, dict) and isinstance(info.get("numLines"), int):
            total = info.get("totalLines")
            extent = f" ({info['numLines']} of {total} lines)" if isinstance(total, int) else \
                f" ({info['numLines']} lines)"
        elif isinstance(self.input.get("offset"), int):
            extent = f" (from line {self.input['offset']})"
        self.lines.append(f"Read {shown}{extent}")

    def _tool_Write(self) -> None:
        shown = self.add_file(self.arg("file_path"))
        content = self.arg("content")
        self.lines.append(f"Wrote {shown} ({content.count(chr(10)) + 1 if content else 0} lines)")
        if content:
            self.lines.append(withheld(len(content)) if is_secret_file(self.arg("file_path")) else self.field(content))

    def _tool_Edit(self) -> None:
        shown = self.add_file(self.arg("file_path"))
        everywhere = " (all occurrences)" if self.input.get("replace_all") else ""
        scope = edit_scope(self.response_dict(), self.arg("old_string"))
        if scope:
            self.facts["scope"] = scope
        self.lines.append(f"Edited {shown}{everywhere}" + (f" in {scope}" if scope else ""))
        if is_secret_file(self.arg("file_path")):
            self.lines.append(withheld(len(self.arg("new_string"))))
        else:
            self._edit_lines(self.input, self.limit // 2)

    def _edit_lines(self, edit: dict[str, Any], limit: int) -> None:
        """The edit as a diff: the lines it keeps at either end once (two spaces), then ``-`` and ``+`` lines.

        Claude Code's ``old_string`` and ``new_string`` repeat the context that locates a change;
        storing it once keeps an edit readable and its row smaller.
        """
        old, new = edit.get("old_string"), edit.get("new_string")
        before = self.field(old, limit).split("\n") if isinstance(old, str) and old else []
        after = self.field(new, limit).split("\n") if isinstance(new, str) and new else []
        lead = 0
        while lead < min(len(before), len(after)) and before[lead] == after[lead]:
            lead += 1
        trail = 0
        while trail < min(len(before), len(after)) - lead and before[-1 - trail] == after[-1 - trail]:
            trail += 1
        self.lines.extend("  " + line for line in before[:lead])
        self.lines.extend("- " + line for line in before[lead:len(before) - trail])
        self.lines.extend("+ " + line for line in after[lead:len(after) - trail])
        self.lines.extend("  " + line for line in before[len(before) - trail:])

    def _tool_MultiEdit(self) -> None:
        shown = self.add_file(self.arg("file_path"))
        given = self.input.get("edits")
        edits = [e for e in given if isinstance(e, dict)] if isinstance(given, list) else []
        self.lines.append(f"Edited {shown} ({len(edits)} edits)")
        if is_secret_file(self.arg("file_path")):
            self.lines.append(withheld(sum(len(e["new_string"]) for e in edits if isinstance(e.get("new_string"), str))))
            return
        limit = max(self.limit // (2 * max(len(edits[:5]), 1)), 150)
        for edit in edits[:5]:
            self._edit_lines(edit, limit)
        if len(edits) > 5:
            self.lines.append(f"[… {len(edits) - 5} more edits]")

    def _tool_NotebookEdit(self) -> None:
        shown = self.add_file(self.arg("notebook_path"))
        mode = self.arg("edit_mode") or "replace"
        cell = f" cell {self.arg('cell_id')}" if self.arg("cell_id") else ""
        self.lines.append(f"Edited notebook {shown}{cell} ({mode})")
        if self.arg("new_source"):
            self.lines.append(self.field(self.arg("new_source")))

    def _tool_Bash(self) -> None:
        command = self.field(self.arg("command"), self.limit)
        self.facts["command"] = command
        description = ""
        if self.arg("description"):
            self.facts["description"] = self.field(self.arg("description"), 200)
            description = f" ({self.facts['description']})"
        background = " in the background" if self.input.get("run_in_background") else ""
        self.lines.append(f"Ran{background}: {command}{description}")
        response = self.response_dict()
        stdout = response.get("stdout") if response else self.response
        stderr = response.get("stderr")
        if isinstance(stdout, str) and stdout.strip() and response.get("isImage") is True:
            self.lines.append(f"Output: an image ({len(stdout):,} characters of base64, not stored)")
        elif isinstance(stdout, str) and stdout.strip() and printed_secret_file(self.arg("command")):
            self.lines.append("Output:\n" + withheld(len(stdout)))
        elif isinstance(stdout, str) and stdout.strip():
            self.lines.append("Output:\n" + self.field(stdout))
        if isinstance(stderr, str) and stderr.strip():
            self.lines.append("Stderr:\n" + self.field(stderr, self.limit // 2))

    def _tool_Grep(self) -> None:
        where = self.add_file(self.arg("path")) if self.arg("path") else "the project"
        filters = [f"{k}={self.arg(k)}" for k in ("glob", "type", "output_mode") if self.arg(k)]
        extra = f" [{', '.join(filters)}]" if filters else ""
        self.lines.append(f"Searched code for /{self.field(self.arg('pattern'), 300)}/ in {where}{extra}")
        content = self.response_dict().get("content")
        if isinstance(content, str) and content.strip():
            # Content mode lists the matching lines, and Claude Code 2 reports no files beside them.
            if self.filenames():
                self._found_files()
            self.lines.append(self.field(content, self.limit // 2))
        else:
            self._found_files()

    def _tool_Glob(self) -> None:
        where = self.add_file(self.arg("path")) if self.arg("path") else "the project"
        self.lines.append(f"Listed files matching {self.field(self.arg('pattern'), 300)} in {where}")
        self._found_files()

    def _tool_LS(self) -> None:
        self.lines.append(f"Listed directory {self.add_file(self.arg('path'))}")

    def _found_files(self) -> None:
        names = self.filenames()
        count = self.response_dict().get("numFiles")
        count = count if isinstance(count, int) else len(names)
        if not names:
            self.lines.append(f"Found {count} files" if count else "Found nothing")
            return
        shown = [self.add_file(name) for name in names[:MAX_LISTED_NAMES]]
        more = f" (+{count - len(shown)} more)" if count > len(shown) else ""
        self.lines.append(f"Found {count} files: {', '.join(shown)}{more}")

    def _tool_WebFetch(self) -> None:
        self.lines.append(f"Fetched {self.field(self.arg('url'), 500)}")
        if self.arg("prompt"):
            self.lines.append("Asked: " + self.field(self.arg("prompt"), 500))
        text = response_text(self.response)
        if text.strip():
            self.lines.append("Result:\n" + self.field(text))

    def _tool_WebSearch(self) -> None:
        self.lines.append(f'Searched the web for "{self.field(self.arg("query"), 300)}"')
        hits = _titled_links(self.response)
        if hits:
            self.lines.extend(f"- {self.field(title, 200)} <{self.field(url, 300)}>" for title, url in hits[:8])
        elif response_text(self.response).strip():
            self.lines.append("Result:\n" + self.field(response_text(self.response)))

    def _tool_Task(self) -> None:
        agent = self.arg("subagent_type") or "general-purpose"
        self.lines.append(f"Delegated to the {agent} agent: {self.field(self.arg('description'), 300)}")
        if self.arg("prompt"):
            self.lines.append("Prompt: " + self.field(self.arg("prompt"), self.limit // 2))
        text = response_text(self.response)
        if text.strip():
            self.lines.append("Result:\n" + self.field(text))

    _tool_Agent = _tool_Task

    def _tool_mcp(self) -> None:
        server, _, name = self.tool[len("mcp__"):].rpartition("__")
        self.lines.append(f"Called MCP tool {name or self.tool} on server {server or '?'}")
        self._generic_body()

    def _tool_other(self) -> None:
        self.lines.append(f"Used tool {self.tool}")
        for key in ("file_path", "notebook_path"):
            self.add_file(self.input.get(key))
        self._generic_body()

    def _generic_body(self) -> None:
        if self.input:
            self.lines.append("Input: " + self.field(self.input, self.limit // 2))
        text = response_text(self.response)
        named = (self.input.get(key) for key in ("path", "file_path", "filepath", "filename", "file"))
        if text.strip() and any(isinstance(path, str) and is_secret_file(path) for path in named):
            self.lines.append("Result:\n" + withheld(len(text)))
        elif text.strip():
            self.lines.append("Result:\n" + self.field(text))

    def _response_files(self) -> None:
        response = self.response_dict()
        self.add_file(response.get("filePath"))
        info = response.get("file")
        if isinstance(info, dict):
            self.add_file(info.get("filePath"))

    def build(self) -> Observation:
        if self.tool.startswith("mcp__"):
            formatter: Callable[[], None] = self._tool_mcp
        else:
            formatter = getattr(self, f"_tool_{self.tool}", self._tool_other)
        formatter()
        self._response_files()
        interrupted = self.interrupted()
        error = None if interrupted else self.failure()
        salience = SALIENCE.get(self.tool, SALIENCE_OTHER)
        category = "general"
        metadata: dict[str, Any] = {"tool": self.tool}
        # The tool call's id ties the memory to its transcript entry; the event name and duration
        # were stored too once, but nothing read them.
        tool_use_id = self.data.get("tool_use_id")
        if isinstance(tool_use_id, (str, int)) and not isinstance(tool_use_id, bool):
            metadata["tool_use_id"] = tool_use_id
        if "\n" in self.lines[0]:
            metadata["multiline"] = True
        if interrupted:
            self.lines[0] += INTERRUPTED_MARK
            metadata["outcome"] = INTERRUPTED
        elif error is not None:
            self.lines[0] += FAILED_MARK
            shown = self.field(error)
            if not (error == response_text(self.response)  # the result itself, already shown by the formatter
                    and any(line.endswith("\n" + shown) for line in self.lines[1:])):
                self.lines.append("Error:\n" + shown)
            salience, category = SALIENCE_FAILURE, "gotcha"
            metadata["outcome"] = FAILED
        metadata.update(self.facts)
        content = cut("\n".join(line for line in self.lines if line), MAX_OBSERVATION_CHARS)
        return Observation(self.tool, content, self.files, category, salience, metadata)


def edit_scope(response: dict[str, Any], old_string: str) -> str:
    """The function or class an edit changed, e.g. ``Option.get_help_record``; "" when unknown.

    Found in the file as it was before the edit (``originalFile``): from the first
    changed line of the patch (or where ``old_string`` was), the nearest enclosing
    ``def``/``class``/``function``/``func``/``fn`` lines of decreasing indentation.
    A question about a function then finds the edits that changed it by name.
    """
    original = response.get("originalFile")
    if not isinstance(original, str) or not original or len(original) > MAX_SCOPE_SOURCE_CHARS:
        return ""
    line = 0
    patch = response.get("structuredPatch")
    if isinstance(patch, list) and patch and isinstance(patch[0], dict) and isinstance(patch[0].get("oldStart"), int):
        hunk_lines = lines if isinstance(lines := patch[0].get("lines"), list) else []
        leading = next((i for i, text in enumerate(hunk_lines) if isinstance(text, str) and text[:1] in "+-"), 0)
        line = patch[0]["oldStart"] + leading
    elif old_string and old_string in original:
        line = original.count("\n", 0, original.index(old_string)) + 1
    if line <= 0:
        return ""
    import re

    scopes: list[str] = []
    indent: int | None = None
    for text in reversed(original.split("\n", line)[:line]):
        found = re.match(r"(\s*)(?:export\s+)?(?:async\s+)?(?:def|class|function|func|fn)\s+([A-Za-z_$][\w$]*)", text)
        if found and (indent is None or len(found.group(1).expandtabs()) < indent):
            scopes.append(found.group(2))
            indent = len(found.group(1).expandtabs())
            if indent == 0:
                break
    return ".".join(reversed(scopes))


def _titled_links(response: Any) -> list[tuple[str, str]]:
    """(title, url) pairs anywhere in a WebSearch result, in order, without repeats."""
    found: list[tuple[str, str]] = []
    queue = deque([response])
    while queue and len(found) < 20:
        item = queue.popleft()
        if isinstance(item, dict):
            if isinstance(item.get("title"), str) and isinstance(item.get("url"), str):
                pair = (item["title"], item["url"])
                if pair not in found:
                    found.append(pair)
            queue.extend(v for v in item.values() if isinstance(v, (dict, list)))
        elif isinstance(item, list):
            queue.extend(v for v in item if isinstance(v, (dict, list)))
    return found


def from_payload(data: dict[str, Any], config: Config, *, cwd: str, root: str) -> Observation:
    """The observation of a PostToolUse (or PostToolUseFailure) payload; private spans and secrets removed.

    ``cwd`` resolves relative paths; files under ``root`` (the project) are shown relative to it.
    """
    return _Builder(data, config, root, cwd).build()


def store(db: Any, observation: Observation, *, project_id: int, session_id: str, tool_use_id: str | None,
          created_at: str | None) -> Any:
    """Store ``observation`` as the session's memory (see the module docstring) and return it.

    ``tool_use_id`` is the dedupe key: a call already stored for the session (a re-delivered payload,
    a backfill over a session captured live) returns the memory stored before and adds nothing.
    ``created_at`` is when the call happened (None: now).
    """
    from . import memories
    from .vocabulary import CAPTURE_SOURCE

    return memories.add(
        db, project_id=project_id, content=observation.content, sector="episodic", tier="session",
        category=observation.category, tags=[observation.tool], files=observation.files,
        importance=observation.salience, salience=observation.salience, session_id=session_id,
        source=CAPTURE_SOURCE, metadata=observation.metadata, dedupe_key=tool_use_id, created_at=created_at,
    )


def retime(db: Any, session_id: str, times: dict[str, str]) -> dict[str, str]:
    """Give the session's captured calls the times their transcript gives them (``tool_use_id`` -> when the
    result was written, :meth:`ccmemory.transcript.Session.call_times`); returns the times of the calls of
    ``times`` capture has not stored (their hook has not run yet, or capture skips them).

    The capture hook stamps a call when its hook process starts, and Claude Code may start one late (a
    subagent's call after the next call's hook, even after the turn's Stop): the transcript is the truth of
    when, and of the order, the one a backfill stores (the session's timeline, its summary and local
    context, neighbours in search all follow ``created_at``). A call the transcript does not name keeps its
    hook's time. One short transaction: Stop and SessionEnd run it before they read the session.
    """
    from .vocabulary import CAPTURE_SOURCE

    if not times:
        return {}
    stored = db.rows("SELECT seq, dedupe_key, created_at FROM memories WHERE session_id = ? AND source = ? "
                     "AND dedupe_key IS NOT NULL", (session_id, CAPTURE_SOURCE))
    moved = [(times[row["dedupe_key"]], row["seq"]) for row in stored
             if row["dedupe_key"] in times and times[row["dedupe_key"]] != row["created_at"]]
    if moved:
        with db.transaction():
            for moment, seq in moved:
                db.execute("UPDATE memories SET created_at = ? WHERE seq = ?", (moment, seq))
    found = {row["dedupe_key"] for row in stored}
    return {key: moment for key, moment in times.items() if key not in found}


def call_payload(call: ToolCall, *, session_id: str, transcript_path: str, cwd: str) -> dict[str, Any]:
    """The PostToolUse (or, for a result marked ``is_error``, PostToolUseFailure) payload of a call, rebuilt
    from its transcript record: ``tool_name``, ``tool_input`` and ``tool_use_id`` from the ``tool_use``
    block, ``tool_response`` from the result line's ``toolUseResult`` (the result's text when that line
    answers several calls at once), ``error`` from the result's text. A backfill stores it; Stop asks
    :func:`skip_reason` of it which calls capture will store."""
    data: dict[str, Any] = {"session_id": session_id, "transcript_path": transcript_path, "cwd": cwd,
                            "tool_name": call.tool_name, "tool_input": call.tool_input,
                            "tool_use_id": call.tool_use_id}
    if call.is_error:
        data["hook_event_name"] = "PostToolUseFailure"
        data["error"] = call.result_text or (call.tool_use_result if isinstance(call.tool_use_result, str) else "")
    else:
        data["hook_event_name"] = "PostToolUse"
        data["tool_response"] = call.tool_use_result if call.tool_use_result is not None else call.result_text
    return data


def _text(data: dict[str, Any], key: str) -> str | None:
    """A non-empty string field of a payload, or None (wrong types count as missing)."""
    value = data.get(key)
    return value if isinstance(value, str) and value.strip() else None


# -- reading an observation back from its memory ---------------------------------------------------------------


def metadata_of(column: str | None) -> dict[str, Any]:
    """A memory row's ``metadata`` column as a dict ({} when empty or not an object)."""
    try:
        value = json.loads(column or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def tool_of(metadata: dict[str, Any]) -> str:
    """The tool that was called; ``"tool"`` for a row that names none."""
    name = metadata.get("tool")
    return name if isinstance(name, str) and name else "tool"


def outcome(metadata: dict[str, Any]) -> str:
    """:data:`FAILED` or :data:`OK`."""
    return FAILED if metadata.get("outcome") == FAILED else OK


def failed(metadata: dict[str, Any]) -> bool:
    return metadata.get("outcome") == FAILED


def marked_on_first_line(metadata: dict[str, Any]) -> bool:
    """Whether the content's first line ends in :data:`FAILED_MARK` (a failure whose head is one line)."""
    return failed(metadata) and not metadata.get("multiline")


def shown_command(metadata: dict[str, Any], *, marked: bool = True) -> str:
    """A Bash call's command as its head's first line shows it ("" for another tool).

    That is the command's first line, followed, when the command is one line, by its
    description in parentheses and (with ``marked``) the failure mark: what session summaries
    and the local context list under "Commands".
    """
    command = metadata.get("command")
    if not isinstance(command, str):
        return ""
    description = metadata.get("description")
    shown = command + (f" ({description})" if isinstance(description, str) else "")
    if marked and failed(metadata):
        shown += FAILED_MARK
    elif marked and metadata.get("outcome") == INTERRUPTED:
        shown += INTERRUPTED_MARK
    return shown.split("\n", 1)[0]


_WRAPPERS = ("sudo", "env", "time", "nice", "npx")


def command_key_of(metadata: dict[str, Any]) -> str:
    """:func:`command_key` of a Bash call's command ("" for another tool), read from the command alone: the
    description Claude adds to a call ("make (Run it)") is not part of what the command does."""
    command = metadata.get("command")
    return command_key(command) if isinstance(command, str) else ""


def command_key(command: str) -> str:
    """What a shell command does, without its options and paths: ``pytest``, ``npm run build``, ``python -m pytest``."""
    import re

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
