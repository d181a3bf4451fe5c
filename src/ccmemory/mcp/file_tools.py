"""The ``memory`` tool: Claude's memory tool (``memory_20250818``) over ccmemory's store.

Claude Code shows it to the model as ``mcp__plugin_ccmemory_memory__memory``. The
handler only hands the arguments to :func:`ccmemory.files.commands.execute`, which
the ``ccmemory files`` commands call too.
"""

from __future__ import annotations

from typing import Any

from ..files import commands
from ..vocabulary import MCP_SOURCE
from .registry import Annotations, Tool, ToolContext


def memory(ctx: ToolContext, args: dict[str, Any]) -> str:
    return commands.execute(ctx.db, args, commands.Call(ctx.project_id, ctx.session_id, MCP_SOURCE))


_TEXT = {"type": "string"}

TOOLS = [
    Tool(
        "memory",
        "Memory files that persist across sessions (Anthropic's memory tool). /memories/... belongs to this "
        "project; /memories/user/... is shared by all your projects. View /memories before starting a task, and "
        "record progress, decisions and learnings as you go: your context may be reset at any moment. Commands: "
        "view (path; optional view_range [start, end], end -1 = last line), create (path, file_text), "
        "str_replace (path, old_str, new_str), insert (path, insert_line, insert_text), delete (path), rename "
        "(old_path, new_path). Markdown (.md) files of at most 100 KB; secrets are redacted.",
        {
            "type": "object",
            "properties": {
                "command": {"type": "string", "enum": list(commands.COMMANDS)},
                "path": {"type": "string", "description": "e.g. /memories/progress.md"},
                "view_range": {"type": "array", "items": {"type": "integer"}},
                "file_text": _TEXT,
                "old_str": _TEXT,
                "new_str": _TEXT,
                "insert_line": {"type": "integer", "description": "0 = before the first line"},
                "insert_text": _TEXT,
                "position": {"type": "string", "enum": ["start", "end"],
                             "description": "insert: instead of insert_line"},
                "old_path": _TEXT,
                "new_path": _TEXT,
            },
            "required": ["command"],
        },
        memory,
        Annotations("Memory files", read_only=False, destructive=True),
    ),
]
