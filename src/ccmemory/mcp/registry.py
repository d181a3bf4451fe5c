"""How a module contributes MCP tools: a list of :class:`Tool` values named ``TOOLS``, each declared once.

The server collects ``TOOLS`` from every module in :data:`TOOL_MODULES` (all in
this package, each over the core functions of its domain), so the server itself
stays a thin transport. A tool is a function decorated with :func:`tool`: its
annotations and description in the decorator, its parameters (types, defaults,
ranges, descriptions) in its signature (:mod:`ccmemory.parameters`), from which
the ``inputSchema``, the checks of incoming arguments and the docs' tables all
come. The function receives checked values::

    @tool(reads("Search memories"), "Search this project's memories ...")
    def memory_search(ctx: ToolContext, query: ..., limit: Annotated[int, Param("Max hits", low=1, high=50)] = 5):
        ...

Nothing here imports the MCP SDK: the bootstrap server lists the same tools
without it.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from ..db import Database
from ..parameters import Parameters, declared

#: Modules whose ``TOOLS`` the server registers, in the order tools are listed.
TOOL_MODULES = (
    "ccmemory.mcp.memory_tools",
    "ccmemory.mcp.docs_tools",
    "ccmemory.mcp.file_tools",
    "ccmemory.mcp.docmem_tools",
)


@dataclass(frozen=True)
class Annotations:
    """MCP tool annotations: what a tool does, so a client can decide how to run it.

    Claude Code runs read-only tools in parallel and lets them through in plan
    mode. ``read_only`` means the tool changes no memory, document or tree; a
    search or read still counts the hits it returns (``reference_count``,
    ``last_accessed``), which is bookkeeping for ranking, not content.
    ``destructive`` means a call may overwrite or remove something (additive
    tools are not destructive); ``idempotent`` that repeating a call with the
    same arguments changes nothing more; ``open_world`` that the tool reaches
    outside the machine (only a URL ingest does).
    """

    title: str
    read_only: bool
    destructive: bool = False
    idempotent: bool = False
    open_world: bool = False

    def as_mcp(self) -> dict[str, Any]:
        """The ``annotations`` object of a ``tools/list`` entry."""
        return {"title": self.title, "readOnlyHint": self.read_only, "destructiveHint": self.destructive,
                "idempotentHint": self.idempotent, "openWorldHint": self.open_world}


def reads(title: str) -> Annotations:
    """Annotations of a tool that only reads (repeating it is harmless)."""
    return Annotations(title, read_only=True, idempotent=True)


@dataclass(frozen=True)
class Tool:
    """One MCP tool: its schema for ``tools/list`` and the function that answers ``tools/call``.

    ``handler(context, arguments)`` checks the arguments as sent and returns the
    text shown to Claude; it raises :class:`ccmemory.errors.ToolError` (or another
    :class:`ccmemory.errors.CCMemoryError`) for errors the caller can act on.
    Made by :func:`tool`, never by hand.
    """

    name: str
    description: str
    input_schema: dict[str, Any]
    handler: Callable[["ToolContext", dict[str, Any]], str]
    annotations: Annotations
    parameters: Parameters


def tool(annotations: Annotations, description: str) -> Callable[[Callable[..., str]], Tool]:
    """Declare the decorated function ``name(ctx, **parameters) -> str`` as the MCP tool of that name.

    The tool's handler reads the arguments of a call by the function's
    signature (:meth:`ccmemory.parameters.Parameters.read`) and calls it with
    the context first, then the checked values by name.
    """
    def declare(function: Callable[..., str]) -> Tool:
        parameters = declared(function)

        def handler(ctx: ToolContext, arguments: dict[str, Any]) -> str:
            return function(ctx, **parameters.read(arguments))

        return Tool(function.__name__, description, parameters.schema(), handler, annotations, parameters)

    return declare


def tool_listing(tools: Iterable[Tool]) -> list[dict[str, Any]]:
    """The ``tools/list`` entries, as JSON objects, for the SDK server and the bootstrap server alike."""
    return [{"name": t.name, "title": t.annotations.title, "description": t.description,
             "inputSchema": t.input_schema, "annotations": t.annotations.as_mcp()} for t in tools]


@dataclass
class ToolContext:
    """What every handler needs: the open database, the project and the session, if known.

    A handler runs holding the server's connection, so other calls wait for it.
    Long work that needs no database (fetching a page, cutting a document) runs
    inside ``with context.unlocked():``, where other calls proceed and ``db``
    must not be touched.
    """

    db: Database
    project_id: int
    project_dir: str
    session_id: str | None = None
    state: dict[str, Any] | None = None
    unlocked: Callable[[], AbstractContextManager[Any]] = field(default=nullcontext)
