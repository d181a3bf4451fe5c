"""The stdio MCP server: ``python -m ccmemory.mcp.server``.

A thin transport over the tool modules named in
:data:`ccmemory.mcp.registry.TOOL_MODULES`, on the SDK's low-level server (so
unknown methods get -32601, and both the ``initialize`` handshake and the
2026-07-28 ``server/discover`` era Claude Code 2.1.330 negotiates are served).
``tools/list`` is answered from a list built at start, before the database,
sqlite-vec or the model are touched: those are opened and loaded in one
background thread, started by the first ``tools/list`` or ``tools/call`` (or a
few seconds after start), which then keeps embedding what the hooks captured
(see :mod:`ccmemory.mcp.background`).

Tool calls run one at a time in a worker thread on one connection, so the event
loop keeps answering while a call works. The project is ``CLAUDE_PROJECT_DIR``,
else the working directory; the session is ``CLAUDE_CODE_SESSION_ID`` if set.
Logs go to stderr (level from ``CCMEMORY_LOG_LEVEL``); stdout carries only the
protocol. The server exits quietly on stdin EOF and on SIGINT (how Claude Code
stops its MCP servers) or SIGTERM.
"""

from __future__ import annotations

import importlib
import logging
import os
import signal
import sys
import threading
from types import ModuleType
from typing import Any, NoReturn

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from .. import __version__, db as database, projects
from ..errors import CCMemoryError
from .background import STATE_KEY, Background
from .registry import TOOL_MODULES, Tool, ToolContext, ToolError, tool_listing

SERVER_NAME = "ccmemory"
START_GRACE_SECONDS = 3.0
INSTRUCTIONS = (
    "Persistent memory of this project across sessions. Look things up with memory_search (a compact index), "
    "then read chosen hits with memory_get or their context with memory_timeline. Save durable facts, "
    "decisions and preferences with memory_add; replace outdated ones with memory_supersede."
)

log = logging.getLogger("ccmemory.mcp")


def load_tool_modules(names: tuple[str, ...] = TOOL_MODULES) -> list[ModuleType]:
    """Import each tool module; one that does not exist (yet) is skipped with a warning."""
    modules = []
    for name in names:
        try:
            modules.append(importlib.import_module(name))
        except ModuleNotFoundError as exc:
            if exc.name is None or not (name == exc.name or name.startswith(exc.name + ".")):
                raise
            log.warning("Tool module %s is not installed; its tools are not offered", name)
    return modules


def collect_tools(modules: list[ModuleType]) -> dict[str, Tool]:
    """Every module's ``TOOLS`` by name, in registry order; a duplicate name is a programming error."""
    tools: dict[str, Tool] = {}
    for module in modules:
        for tool in module.TOOLS:
            if tool.name in tools:
                raise RuntimeError(f"Tool {tool.name!r} is defined twice (again in {module.__name__})")
            tools[tool.name] = tool
    return tools


class Runtime:
    """What lives as long as the server: the connection, the project, the tools' shared state."""

    def __init__(self, modules: list[ModuleType], project_dir: str, session_id: str | None) -> None:
        self.modules = modules
        self.project_dir = project_dir
        self.session_id = session_id
        self.background = Background()
        self.state: dict[str, Any] = {STATE_KEY: self.background}
        self._lock = threading.Lock()
        self._context: ToolContext | None = None

    def _open(self) -> ToolContext:
        """The tool context, opening the database on first use (caller holds the lock)."""
        if self._context is None:
            db = database.connect(vectors=True)
            try:
                project_id = projects.project_id(db, self.project_dir)
            except BaseException:
                db.close()
                raise
            self._context = ToolContext(db, project_id, self.project_dir, self.session_id, self.state)
            for module in self.modules:
                hook = getattr(module, "on_server_start", None)
                if hook is not None:
                    try:
                        hook(self._context)
                    except Exception:
                        log.exception("on_server_start of %s failed; its tools may still work", module.__name__)
        return self._context

    def open(self) -> None:
        """Open the database now (run first by the background thread)."""
        with self._lock:
            self._open()

    def start_background(self) -> None:
        self.background.start(open_db=lambda: database.connect(vectors=True), before=self.open)

    def call(self, tool: Tool, arguments: dict[str, Any]) -> tuple[str, bool]:
        """Run one tool; returns its text and whether it is an error."""
        with self._lock:
            try:
                return tool.handler(self._open(), arguments), False
            except (ToolError, CCMemoryError) as exc:
                return str(exc), True
            except Exception as exc:
                log.exception("Tool %s failed", tool.name)
                return (f"{tool.name} failed unexpectedly ({type(exc).__name__}: {exc}). The MCP server's stderr "
                        "log has the details; please report it with that log."), True

    def close(self, wait: float) -> None:
        """Stop the background work and close the database (if no call holds it for ``wait`` seconds)."""
        self.background.stop()
        if not self._lock.acquire(timeout=wait):
            return
        try:
            if self._context is not None:
                self._context.db.close()
                self._context = None
        finally:
            self._lock.release()


def build_server(runtime: Runtime, tools: dict[str, Tool]) -> Server:
    """The low-level SDK server answering ``tools/list`` and ``tools/call``; other methods get -32601."""
    listing = types.ListToolsResult(tools=[types.Tool.model_validate(entry) for entry in tool_listing(tools.values())])

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        runtime.start_background()
        return listing

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        runtime.start_background()
        tool = tools.get(params.name)
        if tool is None:
            raise MCPError(code=types.INVALID_PARAMS,
                           message=f"Unknown tool {params.name!r}; this server offers: {', '.join(tools)}")
        text, is_error = await anyio.to_thread.run_sync(runtime.call, tool, dict(params.arguments or {}))
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=is_error)

    return Server(SERVER_NAME, version=__version__, instructions=INSTRUCTIONS,
                  on_list_tools=list_tools, on_call_tool=call_tool)


async def serve(runtime: Runtime, server: Server) -> None:
    """Serve stdin/stdout until EOF; start the background work a little after start if nobody asked yet."""

    async def start_later() -> None:
        await anyio.sleep(START_GRACE_SECONDS)
        runtime.start_background()

    async with stdio_server() as (read_stream, write_stream):
        async with anyio.create_task_group() as group:
            group.start_soon(start_later)
            await server.run(read_stream, write_stream, server.create_initialization_options())
            group.cancel_scope.cancel()


def exit_now(runtime: Runtime, wait: float = 1.0) -> NoReturn:
    """Close what can be closed, then leave without interpreter finalization.

    Finalizing while onnxruntime's native threads still load or run the model
    aborts the process ("terminate called without an active exception"), and
    the SDK's stdin reader thread cannot be interrupted; ``os._exit`` avoids
    both. SQLite rolls back a write the exit cuts short.
    """
    runtime.close(wait=wait)
    logging.shutdown()
    sys.stderr.flush()
    os._exit(0)


def exit_on_signal(runtime: Runtime) -> None:
    """Exit at once, quietly, on SIGINT (Claude Code's way to stop the server) or SIGTERM."""

    def handler(signum: int, frame: Any) -> None:
        exit_now(runtime)

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)


def main() -> None:
    """Console entry point of the MCP server."""
    logging.basicConfig(stream=sys.stderr, level=os.environ.get("CCMEMORY_LOG_LEVEL", "WARNING").upper(),
                        format="ccmemory-mcp %(levelname)s %(name)s: %(message)s")
    modules = load_tool_modules()
    runtime = Runtime(modules, os.environ.get("CLAUDE_PROJECT_DIR") or os.getcwd(),
                      os.environ.get("CLAUDE_CODE_SESSION_ID") or None)
    exit_on_signal(runtime)
    anyio.run(serve, runtime, build_server(runtime, collect_tools(modules)))
    exit_now(runtime)


if __name__ == "__main__":
    main()
