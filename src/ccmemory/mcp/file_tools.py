"""The ``memory`` tool: Claude's memory tool (``memory_20250818``) over ccmemory's store.

Claude Code shows it to the model as ``mcp__plugin_ccmemory_memory__memory``. The
handler only hands the arguments to :func:`ccmemory.files.commands.execute`, which
the ``ccmemory files`` commands call too: that function checks them, in the
memory tool's own words, so they reach it as sent (with any it accepts beyond
the schema, such as ``content`` for ``file_text``). Its answers go to the model, so the file
text in them is quoted as data (``Call.quoted``).
"""

from typing import Annotated, Any

from ..files import commands
from ..parameters import Param
from ..vocabulary import MCP_SOURCE
from .registry import Annotations, ToolContext, tool

Sent = Param(as_sent=True)


@tool(Annotations("Memory files", read_only=False, destructive=True),
      "Memory files that persist across sessions (Anthropic's memory tool). /memories/... belongs to this "
      "project; /memories/user/... is shared by all your projects. View /memories before starting a task, and "
      "record progress, decisions and learnings as you go: your context may be reset at any moment. Commands: "
      "view (path; optional view_range [start, end], end -1 = last line), create (path, file_text), "
      "str_replace (path, old_str, new_str), insert (path, insert_line, insert_text), delete (path), rename "
      f"(old_path, new_path). Markdown (.md) files of at most {commands.MAX_FILE_BYTES // 1024} KB; secrets are "
      "redacted.")
def memory(
    ctx: ToolContext, /,
    command: Annotated[str, Param(choices=commands.COMMANDS, as_sent=True)],
    path: Annotated[str | None, Param("e.g. /memories/progress.md", as_sent=True)] = None,
    view_range: Annotated[list[int] | None, Sent] = None,
    file_text: Annotated[str | None, Sent] = None,
    old_str: Annotated[str | None, Sent] = None,
    new_str: Annotated[str | None, Sent] = None,
    insert_line: Annotated[int | None, Param("0 = before the first line", as_sent=True)] = None,
    insert_text: Annotated[str | None, Sent] = None,
    position: Annotated[str | None, Param("insert: instead of insert_line", choices=("start", "end"),
                                          as_sent=True)] = None,
    old_path: Annotated[str | None, Sent] = None,
    new_path: Annotated[str | None, Sent] = None,
    **undeclared: Any,
) -> str:
    arguments = {**undeclared, "command": command, "path": path, "view_range": view_range, "file_text": file_text,
                 "old_str": old_str, "new_str": new_str, "insert_line": insert_line, "insert_text": insert_text,
                 "position": position, "old_path": old_path, "new_path": new_path}
    return commands.execute(ctx.db, arguments, commands.Call(ctx.project_id, ctx.session_id, MCP_SOURCE, quoted=True))


TOOLS = [memory]
