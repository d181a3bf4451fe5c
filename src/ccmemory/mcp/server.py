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

Tool calls run in worker threads, so the event loop keeps answering while a
call works; they share one connection, one call at a time, except that a
handler's long work without the database (docs_ingest's fetch and cutting, see
``ToolContext.unlocked``) lets the other calls through. The project is ``CLAUDE_PROJECT_DIR``,
else the working directory; the session is ``CLAUDE_CODE_SESSION_ID`` if set.
Stdin is read by :mod:`ccmemory.mcp.transport` (the SDK's stdio transport with its own reader): a line the
SDK cannot validate still gets a JSON-RPC error for its id, and a line over 8 MB is never held whole.
Logs go to stderr (level from ``CCMEMORY_LOG_LEVEL``), and so does every thread's
stack if native code crashes; stdout carries only the protocol. The server exits
quietly on stdin EOF and on SIGINT (how Claude Code stops its MCP servers) or SIGTERM.
"""

from __future__ import annotations

import faulthandler
import logging
import os
import signal
import sys
from typing import Any, NoReturn

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from .. import __version__, compat, vectors
from .registry import Tool, tool_listing
from .runtime import HANDOVER_ENV, INSTRUCTIONS, Runtime, collect_tools, load_tool_modules
from .transport import stdio_server

SERVER_NAME = "ccmemory"
START_GRACE_SECONDS = 3.0

log = logging.getLogger("ccmemory.mcp")


def build_server(runtime: Runtime, tools: dict[str, Tool]) -> Server:
    """The low-level SDK server answering ``tools/list`` and ``tools/call``; other methods get -32601."""
    listing = types.ListToolsResult(tools=[types.Tool.model_validate(entry) for entry in tool_listing(tools.values())])

    warned: list[bool] = []

    def check_client(ctx: Any) -> None:
        """Log once when the client is a Claude Code older than ccmemory supports."""
        if warned:
            return
        warned.append(True)
        client = getattr(getattr(ctx.session, "client_params", None), "client_info", None)
        warning = compat.claude_code_warning(getattr(client, "name", None), getattr(client, "version", None))
        if warning:
            log.warning("%s", warning)

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        runtime.start_background()
        check_client(ctx)
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
    faulthandler.enable()  # a crash in native code (SIGSEGV, SIGBUS, abort) leaves every thread's stack on stderr
    logging.basicConfig(stream=sys.stderr, level=os.environ.get("CCMEMORY_LOG_LEVEL", "WARNING").upper(),
                        format="ccmemory-mcp %(levelname)s %(name)s: %(message)s")
    modules = load_tool_modules()
    vectors.keep_in_memory = True  # a server searches many times: sign bits in memory beat sqlite-vec's KNN
    runtime = Runtime(modules, os.environ.get("CLAUDE_PROJECT_DIR") or os.getcwd(),
                      os.environ.get("CLAUDE_CODE_SESSION_ID") or None,
                      start_hooks=os.environ.pop(HANDOVER_ENV, "") != "1")
    exit_on_signal(runtime)
    anyio.run(serve, runtime, build_server(runtime, collect_tools(modules)))
    exit_now(runtime)


if __name__ == "__main__":
    main()
