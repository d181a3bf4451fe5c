"""The memory tool's six commands, with the result and error strings of Anthropic's ``memory_20250818``.

Claude has been trained on those strings, so they are kept word for word (see
``peers.md`` §4.7); ccmemory's own additions (the size limit, a redaction note,
the paging note of a long ``view``) come after them. Each command runs in one
``BEGIN IMMEDIATE`` transaction that reads, checks and writes, so two writers of
one file (two sessions, the CLI) are serialized and neither loses the other's
edit. Every command, failed or not, leaves one row in the audit log.

Answers to a model (``Call.quoted``: the MCP tool) quote the file text they show as data
(:mod:`ccmemory.quoting`): the lines ``view`` numbers, the listing of a directory and the lines
around an edit sit after the notice line, between fence lines, each line escaped. The line numbers
and Anthropic's strings are kept, and a line of plain text is shown exactly as stored, so text
copied from a view still matches in ``str_replace``; a line with ``&``, ``<``, ``>`` or a hidden
character shows it escaped, and ``str_replace`` says so when an escaped form was sent.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable
    from ..db import Database

from .. import quoting
from ..excerpts import clip
from ..vocabulary import MCP_SOURCE
from . import paths, store
from .paths import Location, MemoryFileError

COMMANDS = ("view", "create", "str_replace", "insert", "delete", "rename")
MAX_FILE_BYTES = 100 * 1024
MAX_FILES_PER_SCOPE = 1000
#: A ``view`` returns at most this many characters; Claude pages through the rest with view_range.
VIEW_MAX_CHARS = 16_000
VIEW_MAX_ENTRIES = 200
SNIPPET_CONTEXT_LINES = 4
_ECHO_CHARS = 1000
_REDACTED = "[REDACTED"


class Call:
    """Who is calling: the project whose ``/memories`` this is, the session, and the channel.

    ``quoted``: the answers go to a model, so the file text in them is quoted as data.
    """

    __slots__ = ("project_id", "session_id", "source", "quoted")

    def __init__(self, project_id: int, session_id: str | None = None, source: str = MCP_SOURCE, *,
                 quoted: bool = False) -> None:
        self.project_id = project_id
        self.session_id = session_id
        self.source = source
        self.quoted = quoted


def execute(db: Database, arguments: dict[str, Any], call: Call) -> str:
    """Run one memory-tool command; returns its result text or raises :class:`MemoryFileError`."""
    command = arguments.get("command")
    handler = _HANDLERS.get(command) if isinstance(command, str) else None
    renaming = command == "rename"

    def work() -> tuple[str, str]:
        if handler is None:
            raise MemoryFileError(f"Error: Unknown command {paths.shown(command, 40)!r}. "
                                  f"The memory tool's commands are: {', '.join(COMMANDS)}.")
        return handler(db, arguments, call)

    name = command if isinstance(command, str) else repr(command)
    return _audited(db, call, name[:40], arguments.get("old_path" if renaming else "path"),
                    arguments.get("new_path") if renaming else None, work)


def _audited(db: Database, call: Call, command: str, path: Any, new_path: Any,
             work: Callable[[], tuple[str, str]]) -> str:
    """Run ``work`` in one write transaction and log it; a failure is logged in its own transaction."""
    audit: dict[str, Any] = {"project_id": call.project_id, "session_id": call.session_id, "source": call.source,
                             "command": command, "path": paths.shown(path, 600) if path is not None else None,
                             "new_path": paths.shown(new_path, 600) if new_path is not None else None}
    try:
        with db.transaction():
            result, detail = work()
            store.log(db, ok=True, detail=detail, **audit)
        return result
    except MemoryFileError as exc:
        with db.transaction():
            store.log(db, ok=False, detail=str(exc).split("\n", 1)[0], **audit)
        raise


# -- arguments ---------------------------------------------------------------------------------------
def _required(arguments: dict[str, Any], name: str, command: str) -> Any:
    value = arguments.get(name)
    if value is None:
        raise MemoryFileError(f"Error: Parameter `{name}` is required for command: {command}")
    return value


def _text(arguments: dict[str, Any], name: str, command: str, *, alias: str | None = None,
          default: str | None = None) -> str:
    """A string argument (or its seed-003 ``alias``); missing is an error unless there is a ``default``."""
    value = arguments.get(name)
    if value is None and alias is not None:
        value = arguments.get(alias)
    if value is None:
        value = default if default is not None else _required(arguments, name, command)
    if not isinstance(value, str):
        raise MemoryFileError(f"Error: Parameter `{name}` of {command} must be a string, "
                              f"got {type(value).__name__}")
    return value


def _whole(value: Any, name: str) -> int:
    """An integer argument; models sometimes send "3" for 3."""
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    if (isinstance(value, bool) or not isinstance(value, (int, float)) or value != value  # NaN
            or value in (float("inf"), float("-inf")) or value != int(value)):
        raise MemoryFileError(f"Error: Parameter `{name}` must be an integer, got {paths.shown(repr(value), 60)}")
    return int(value)


def _echo(text: str, call: Call) -> str:
    echoed = clip(text, _ECHO_CHARS)
    return quoting.escape(echoed) if call.quoted else echoed


# -- content helpers ---------------------------------------------------------------------------------
def split_lines(content: str) -> list[str]:
    """The file's lines as ``view`` numbers them: a final newline ends the last line, it adds none."""
    if not content:
        return []
    lines = content.split("\n")
    return lines[:-1] if content.endswith("\n") else lines


def numbered(lines: list[str], first: int) -> str:
    """Lines as ``cat -n`` shows them: the number right-aligned in 6 columns, a tab, the line."""
    return "\n".join(f"{number:>6}\t{line}" for number, line in enumerate(lines, start=first))


def _shown_lines(content: str, call: Call) -> list[str]:
    """The file's lines as an answer shows them: escaped, one for one, when it goes to a model."""
    return split_lines(quoting.escape(content, lines=True) if call.quoted else content)


def _quoted(listing: str, what: str, call: Call) -> str:
    """``listing`` (already escaped) after the notice and between fence lines, when the answer goes to a model."""
    return quoting.quote_escaped(listing, what).rstrip("\n") if call.quoted else listing


def _frame(what: str, call: Call) -> int:
    """How many characters :func:`_quoted` adds to a listing."""
    return len(_quoted("", what, call))


def human_size(size: int) -> str:
    """Sizes as ``du -h`` prints them: 912, 5.5K, 1.2M."""
    if size < 1024:
        return str(size)
    if size < 1024 * 1024:
        return f"{size / 1024:.1f}K"
    return f"{size / (1024 * 1024):.1f}M"


def _redact(text: str) -> tuple[str, str]:
    """Content as stored (private spans and secrets removed) and the note that says so, if any."""
    from ..redaction import redact

    clean = redact(text)
    if clean == text:
        return text, ""
    added = clean.count(_REDACTED) - text.count(_REDACTED)
    what = f"{added} secret-looking value{'s' if added != 1 else ''} replaced with [REDACTED]" if added > 0 \
        else "private or secret-looking text removed"
    return clean, f"\nNote: {what} before saving; memory files never hold secrets."


def check_size(location: Location, content: str) -> None:
    """Refuse content over :data:`MAX_FILE_BYTES` (UTF-8) for the file at ``location``."""
    size = len(content.encode("utf-8"))
    if size > MAX_FILE_BYTES:
        raise MemoryFileError(
            f"Error: File {location.path} would be {size:,} bytes; a memory file holds at most "
            f"{MAX_FILE_BYTES:,} bytes (100 KB). Split it into several files or shorten it."
        )


def _checked(location: Location, content: str) -> tuple[str, str]:
    """Redact, then enforce the size limit on what would be stored."""
    clean, note = _redact(content)
    check_size(location, clean)
    return clean, note


def _missing(path: str) -> MemoryFileError:
    return MemoryFileError(f"Error: The path {path} does not exist", failed=True)


def _existing_file(db: Database, location: Location, call: Call) -> store.FileRow:
    """The file a command edits; a directory or nothing there counts as does-not-exist."""
    row = store.get(db, store.scope_of(location, call.project_id), location.rel) if location.is_file else None
    if row is None:
        raise _missing(location.path)
    return row


def _files_at(db: Database, location: Location, call: Call) -> list[store.FileRow]:
    """The file at a location, or every file inside the directory there (empty: nothing there)."""
    scope = store.scope_of(location, call.project_id)
    if location.is_file:
        row = store.get(db, scope, location.rel)
        return [row] if row else []
    return store.under(db, scope, location.rel)


def _room_for(db: Database, location: Location, call: Call, added: int) -> None:
    """Refuse to let the scope of ``location`` grow past :data:`MAX_FILES_PER_SCOPE` files."""
    if store.count(db, store.scope_of(location, call.project_id)) + added > MAX_FILES_PER_SCOPE:
        where = paths.USER_ROOT if location.user else paths.ROOT
        raise MemoryFileError(f"Error: {where} would hold more than {MAX_FILES_PER_SCOPE:,} files, the most one "
                              "scope may hold. Merge or delete some files first.", failed=True)


def _save_new(db: Database, location: Location, content: str, call: Call) -> None:
    _room_for(db, location, call, 1)
    store.insert(db, store.scope_of(location, call.project_id), location.rel, content)


# -- commands ----------------------------------------------------------------------------------------
def view(db: Database, arguments: dict[str, Any], call: Call) -> tuple[str, str]:
    raw = arguments.get("path") if arguments.get("path") is not None else paths.ROOT
    location = paths.parse(raw)
    if location.is_file:
        row = store.get(db, store.scope_of(location, call.project_id), location.rel)
        if row is None:
            raise MemoryFileError(f"The path {location.path} does not exist. Please provide a valid path.",
                                  failed=True)
        return _view_file(location, row, arguments.get("view_range"), call), "file"
    files = _files_at(db, location, call)
    if location.path == paths.ROOT:
        files = files + store.under(db, None, "")
    if not files and not location.is_scope_root:
        raise MemoryFileError(f"The path {location.path} does not exist. Please provide a valid path.",
                                  failed=True)
    return _view_directory(location.path, files, call), f"directory, {len(files)} files"


def _view_file(location: Location, row: store.FileRow, view_range: Any, call: Call) -> str:
    lines = _shown_lines(row.content, call)
    first, last = 1, len(lines)
    if view_range is not None:
        first, last = _range(view_range, len(lines))
    header = f"Here's the content of {location.path} with line numbers:\n"
    what = f"the memory file {location.path}"
    shown: list[str] = []
    used = len(header) + _frame(what, call)
    number = first
    while number <= last:
        line = f"{number:>6}\t{lines[number - 1]}"
        if used + len(line) + 1 > VIEW_MAX_CHARS:
            if not shown:  # one line longer than the whole cap: show its start
                shown.append(line[: VIEW_MAX_CHARS - used - 60] + " [… line cut]")
                number += 1
            break
        shown.append(line)
        used += len(line) + 1
        number += 1
    text = header + _quoted("\n".join(shown), what, call)
    if number <= last:
        text += (f"\n[… lines {number}-{last} not shown: a view returns at most {VIEW_MAX_CHARS:,} characters. "
                 f"Call view with view_range [{number}, {last}] to read on.]")
    return text


def _range(view_range: Any, total: int) -> tuple[int, int]:
    if not isinstance(view_range, (list, tuple)) or len(view_range) != 2:
        raise MemoryFileError("Error: Invalid `view_range` parameter: it should be a list of two integers, "
                              "[start, end] (end -1 for the end of the file)")
    first, last = _whole(view_range[0], "view_range"), _whole(view_range[1], "view_range")
    if last == -1:
        last = total
    if not 1 <= first <= max(total, 1) or not first <= last <= total and not (total == 0 and last == 0):
        raise MemoryFileError(f"Error: Invalid `view_range` parameter: [{view_range[0]}, {view_range[1]}]. "
                              f"It should be within the range of lines of the file: [1, {total}]")
    return first, last


def _view_directory(path: str, files: list[store.FileRow], call: Call) -> str:
    """``size<TAB>path`` for the directory and what lies up to 2 levels below it; sizes of directories add up."""
    sizes: dict[str, int] = {path: 0}
    depth = path.count("/") + 1
    for row in files:
        sizes[path] += row.size
        parts = row.display.split("/")
        for below in (1, 2):
            if len(parts) >= depth + below:
                entry = "/".join(parts[: depth + below])
                sizes[entry] = sizes.get(entry, 0) + row.size
    entries = sorted(sizes)
    listing = "\n".join(f"{human_size(sizes[entry])}\t{entry}" for entry in entries[: VIEW_MAX_ENTRIES + 1])
    if call.quoted:  # names are letters, digits, '.', '_' and '-' (paths.parse), but they are still stored text
        listing = quoting.escape(listing)
    text = (f"Here're the files and directories up to 2 levels deep in {path}, excluding hidden items and "
            "node_modules:\n" + _quoted(listing, f"the list of memory files in {path}", call))
    if len(entries) > VIEW_MAX_ENTRIES + 1:
        text += (f"\n[… {len(entries) - VIEW_MAX_ENTRIES - 1} more entries not shown: view a subdirectory "
                 "to see them.]")
    return text


def create(db: Database, arguments: dict[str, Any], call: Call) -> tuple[str, str]:
    location = paths.parse_file(_required(arguments, "path", "create"))
    text = _text(arguments, "file_text", "create", alias="content")
    if store.get(db, store.scope_of(location, call.project_id), location.rel) is not None:
        raise MemoryFileError(f"Error: File {location.path} already exists", failed=True)
    content, note = _checked(location, text)
    _save_new(db, location, content, call)
    return f"File created successfully at: {location.path}{note}", f"{len(content.encode())} bytes"


def str_replace(db: Database, arguments: dict[str, Any], call: Call) -> tuple[str, str]:
    location = paths.parse(_required(arguments, "path", "str_replace"))
    old = _text(arguments, "old_str", "str_replace")
    new = _text(arguments, "new_str", "str_replace", default="")
    row = _existing_file(db, location, call)
    occurrences = row.content.count(old) if old else 0
    if occurrences == 0:
        raise MemoryFileError(f"No replacement was performed, old_str `{_echo(old, call)}` did not appear verbatim "
                              f"in {location.path}.{_escaped_hint(old, row.content, call)}", failed=True)
    if occurrences > 1:
        starts, at = [], row.content.find(old)
        while at != -1:
            starts.append(str(row.content.count("\n", 0, at) + 1))
            at = row.content.find(old, at + len(old))
        raise MemoryFileError(f"No replacement was performed. Multiple occurrences of old_str `{_echo(old, call)}` "
                              f"in lines: {', '.join(starts)}. Please ensure it is unique", failed=True)
    at = row.content.find(old)
    content, note = _checked(location, row.content[:at] + new + row.content[at + len(old):])
    store.update(db, row, content)
    lines = _shown_lines(content, call)
    start = content.count("\n", 0, at)  # 0-based line of the change
    first = max(0, start - SNIPPET_CONTEXT_LINES)
    last = min(len(lines), start + new.count("\n") + SNIPPET_CONTEXT_LINES + 1)
    snippet = _quoted(numbered(lines[first:last], first + 1), f"part of the memory file {location.path}", call)
    return f"The memory file has been edited.\n{snippet}{note}", f"{len(content.encode())} bytes"


def _escaped_hint(old: str, content: str, call: Call) -> str:
    """Why ``old`` was not found when it was copied from an escaped view: what to send instead."""
    if not call.quoted or ("&" not in old and "\\" not in old) or old not in quoting.escape(content, lines=True):
        return ""
    return (" It matches the file as view shows it, escaped: send &, < and > as themselves (not &amp;, &lt;, "
            "&gt;) and each escape such as \\x1b or \\u202e as the character it stands for.")


def insert(db: Database, arguments: dict[str, Any], call: Call) -> tuple[str, str]:
    location = paths.parse(_required(arguments, "path", "insert"))
    text = _text(arguments, "insert_text", "insert", alias="content")
    row = _existing_file(db, location, call)
    lines = split_lines(row.content)
    position = arguments.get("position")
    if arguments.get("insert_line") is not None:
        line = _whole(arguments["insert_line"], "insert_line")
    elif position in ("start", "end"):
        line = 0 if position == "start" else len(lines)
    elif position is not None:
        raise MemoryFileError(f"Error: Invalid `position` parameter: {paths.shown(position, 40)}. "
                              "It should be start or end")
    else:
        raise MemoryFileError("Error: Parameter `insert_line` is required for command: insert")
    if not 0 <= line <= len(lines):
        raise MemoryFileError(f"Error: Invalid `insert_line` parameter: {line}. It should be within the range of "
                              f"lines of the file: [0, {len(lines)}]")
    added = split_lines(text) or [""]
    merged = "\n".join(lines[:line] + added + lines[line:])
    if row.content.endswith("\n") or not row.content:
        merged += "\n"
    content, note = _checked(location, merged)
    store.update(db, row, content)
    return f"The file {location.path} has been edited.{note}", f"at line {line}, {len(content.encode())} bytes"


def _refuse_scope_root(location: Location, command: str) -> None:
    if location.is_scope_root:
        shared = " (it holds the memory every project shares)" if location.user else ""
        raise MemoryFileError(f"Error: Cannot {command} the {location.path} directory itself{shared}; "
                              "name the files or subdirectories inside it.")


def delete(db: Database, arguments: dict[str, Any], call: Call) -> tuple[str, str]:
    location = paths.parse(_required(arguments, "path", "delete"))
    _refuse_scope_root(location, "delete")
    files = _files_at(db, location, call)
    if not files:
        raise _missing(location.path)
    store.remove(db, files)
    return f"Successfully deleted {location.path}", f"{len(files)} files"


def rename(db: Database, arguments: dict[str, Any], call: Call) -> tuple[str, str]:
    source = paths.parse(_required(arguments, "old_path", "rename"))
    target = paths.parse(_required(arguments, "new_path", "rename"))
    _refuse_scope_root(source, "rename")
    _refuse_scope_root(target, "replace")
    files = _files_at(db, source, call)
    if not files:
        raise _missing(source.path)
    if source.is_file and not target.is_file:
        paths.parse_file(target.path)
    if not source.is_file and target.is_file:
        raise MemoryFileError(f"Error: {source.path} is a directory; its new name {target.path} cannot end in "
                              f"{paths.FILE_SUFFIX}.")
    if not source.is_file and (target.path + "/").startswith(source.path + "/"):
        raise MemoryFileError(f"Error: Cannot move the directory {source.path} into itself ({target.path}).")
    if _files_at(db, target, call):
        raise MemoryFileError(f"Error: The destination {target.path} already exists", failed=True)
    scope = store.scope_of(target, call.project_id)
    if store.scope_of(source, call.project_id) != scope:
        _room_for(db, target, call, len(files))
    for row in files:
        rel = target.rel if source.is_file else target.rel + row.path[len(source.rel):]
        if store.get(db, scope, rel) is not None:
            raise MemoryFileError(f"Error: The destination {paths.display(target.user, rel)} already exists",
                                      failed=True)
        store.move(db, row, scope, rel)
    return f"Successfully renamed {source.path} to {target.path}", f"{len(files)} files"


_HANDLERS: dict[str, Callable[[Any, dict[str, Any], Call], tuple[str, str]]] = {
    "view": view, "create": create, "str_replace": str_replace, "insert": insert, "delete": delete,
    "rename": rename,
}


def overwrite(db: Database, path: str, content: str, call: Call, *, expected_version: int | None) -> str:
    """Create or replace a whole file (the CLI's editor round trip), refusing if it changed since it was read.

    ``expected_version`` is the version the editor started from (None: the file did not exist then).
    """
    location = paths.parse_file(path)

    def work() -> tuple[str, str]:
        row = store.get(db, store.scope_of(location, call.project_id), location.rel)
        current = row.version if row else None
        if current != expected_version:
            raise MemoryFileError(
                f"Error: {location.path} changed while it was being edited (version {expected_version} -> "
                f"{current}); nothing was saved. Run the edit again to start from the new text.", failed=True
            )
        clean, note = _checked(location, content)
        if row is None:
            _save_new(db, location, clean, call)
        else:
            store.update(db, row, clean)
        return f"Saved {location.path}{note}", f"{len(clean.encode())} bytes"

    return _audited(db, call, "write", location.path, None, work)
