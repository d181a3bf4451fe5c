"""How a module contributes MCP tools: a list of :class:`Tool` values named ``TOOLS``.

The server collects ``TOOLS`` from every module in :data:`TOOL_MODULES`, so
memory, document and docmem tools live beside the code they expose and the
server itself stays a thin transport.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable

#: Modules whose ``TOOLS`` the server registers, in the order tools are listed.
TOOL_MODULES = (
    "ccmemory.mcp.memory_tools",
    "ccmemory.mcp.docs_tools",
    "ccmemory.mcp.file_tools",
    "ccmemory.docmem.tools",
)


class ToolError(Exception):
    """A tool failed in a way the caller can fix; the message becomes an MCP tool error."""


@dataclass(frozen=True)
class Tool:
    """One MCP tool: its schema for ``tools/list`` and the function that answers ``tools/call``.

    ``handler(context, arguments)`` returns the text shown to Claude; it raises
    :class:`ToolError` (or a :class:`ccmemory.errors.CCMemoryError`) for errors
    the caller can act on.
    """

    name: str
    description: str
    input_schema: dict[str, Any]
    handler: Callable[["ToolContext", dict[str, Any]], str]


def tool_listing(tools: Iterable[Tool]) -> list[dict[str, Any]]:
    """The ``tools/list`` entries, as JSON objects, for the SDK server and the bootstrap server alike."""
    return [{"name": t.name, "description": t.description, "inputSchema": t.input_schema} for t in tools]


@dataclass
class ToolContext:
    """What every handler needs: the open database, the project and the session, if known."""

    db: Any
    project_id: int
    project_dir: str
    session_id: str | None = None
    state: dict[str, Any] | None = None
