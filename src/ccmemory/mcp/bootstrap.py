"""The MCP server while the plugin's Python runtime is being installed: standard library only.

Right after ``claude plugin install`` the server's dependencies (mcp, fastembed,
sqlite-vec, apsw) are not there yet, and building them takes 20 to 75 s. Claude
Code gives a server 30 s to connect, starts it once per session, and remembers a
failure for 15 minutes, so a server that waited for the build would leave the
first sessions without memory tools. Instead the launcher serves the session with
this module at once: JSON-RPC 2.0 over stdio, the same tools from the same
registry, run by the same handlers on the standard library's ``sqlite3``, with
search on keywords (every answer says why).

When the runtime becomes ready, a watcher thread starts the SDK server, opens it
with the client's own ``initialize`` parameters, and from then on every message
is relayed both ways unchanged, so the rest of the session has semantic search
without a reconnect. If that server dies, its unanswered requests get an error
and this process serves the session again.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import signal
import subprocess
import sys
import threading
from typing import IO, Any, Callable, NoReturn

from .. import __version__, compat
from ..background import Background
from .registry import tool_listing
from .runtime import HANDOVER_ENV, INSTRUCTIONS, Runtime, collect_tools, load_tool_modules

#: Protocol versions this server speaks, oldest first; the client's choice is echoed when known.
PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
POLL_SECONDS = 1.0
TAKEOVER_INIT_SECONDS = 60.0
TAKEOVER_ID = "ccmemory-takeover"
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
PARSE_ERROR = -32700
INTERNAL_ERROR = -32603
STOPPED = ("the full memory server stopped unexpectedly (Claude Code's MCP log has its error), "
           "so this session searches by keywords until the next one")

log = logging.getLogger("ccmemory.mcp.bootstrap")


class Output:
    """Our stdout: one JSON message per line, written whole by one thread at a time."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream
        self._lock = threading.Lock()

    def line(self, raw: bytes) -> None:
        with self._lock:
            self._stream.write(raw if raw.endswith(b"\n") else raw + b"\n")
            self._stream.flush()

    def send(self, message: dict[str, Any]) -> None:
        self.line(json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def result(request_id: Any, value: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": value}


def error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


class Relay:
    """The SDK server as a child process, opened with the client's ``initialize``; messages pass through.

    ``pending`` holds the ids of requests sent to the child and not answered
    yet, so they can be answered with an error if the child dies.
    """

    def __init__(self, command: list[str], env: dict[str, str], output: Output) -> None:
        self.command = command
        self.env = env
        self.output = output
        self.pending: set[Any] = set()
        self.alive = False
        self._lock = threading.Lock()
        self._child: subprocess.Popen[bytes] | None = None

    def start(self, init_params: dict[str, Any]) -> bool:
        """Start the child and complete its handshake; False (child stopped) when it does not answer."""
        child = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=self.env)
        assert child.stdin is not None and child.stdout is not None
        self._child = child
        lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=_read_lines, args=(child.stdout, lines), daemon=True,
                         name="ccmemory-takeover-reader").start()
        self._write({"jsonrpc": "2.0", "id": TAKEOVER_ID, "method": "initialize", "params": init_params})
        while True:
            try:
                raw = lines.get(timeout=TAKEOVER_INIT_SECONDS)
            except queue.Empty:
                raw = b""
            if not raw:
                log.warning("The full memory server did not complete its start; staying on keyword search")
                self.stop()
                return False
            message = _parse(raw)
            if isinstance(message, dict) and message.get("id") == TAKEOVER_ID:
                if "result" not in message:
                    log.warning("The full memory server refused initialize: %s", message.get("error"))
                    self.stop()
                    return False
                break
        self._write({"jsonrpc": "2.0", "method": "notifications/initialized"})
        self.alive = True
        threading.Thread(target=self._pump, args=(lines,), daemon=True, name="ccmemory-takeover-pump").start()
        return True

    def send(self, raw: bytes, message: Any) -> bool:
        """Forward one client message; False when the child is gone (the caller then serves it)."""
        with self._lock:
            if not self.alive:
                return False
            if isinstance(message, dict) and "method" in message and "id" in message:
                self.pending.add(message["id"])
            try:
                assert self._child is not None and self._child.stdin is not None
                self._child.stdin.write(raw if raw.endswith(b"\n") else raw + b"\n")
                self._child.stdin.flush()
                return True
            except (OSError, ValueError):
                self.pending.discard(message.get("id") if isinstance(message, dict) else None)
                self._died()
                return False

    def _write(self, message: dict[str, Any]) -> None:
        assert self._child is not None and self._child.stdin is not None
        self._child.stdin.write(json.dumps(message).encode("utf-8") + b"\n")
        self._child.stdin.flush()

    def _pump(self, lines: queue.Queue[bytes]) -> None:
        """Child's stdout to ours, until it ends."""
        while True:
            raw = lines.get()
            if not raw:
                break
            message = _parse(raw)
            if isinstance(message, dict) and "method" not in message:
                with self._lock:
                    self.pending.discard(message.get("id"))
            self.output.line(raw)
        with self._lock:
            self._died()
        if self._child is not None:
            self._child.wait()

    def _died(self) -> None:
        """Answer what the child left unanswered (caller holds the lock)."""
        if not self.alive:
            return
        self.alive = False
        log.warning("The full memory server stopped; serving on keyword search again")
        for request_id in sorted(self.pending, key=str):
            self.output.send(error(request_id, INTERNAL_ERROR,
                                   "The memory server stopped while answering; call the tool again."))
        self.pending.clear()

    def stop(self, wait: float = 3.0) -> None:
        """Close the child's stdin (its way to exit), then make sure it is gone."""
        with self._lock:
            self.alive = False
        child = self._child
        if child is None:
            return
        try:
            if child.stdin:
                child.stdin.close()
            child.wait(timeout=wait)
        except (OSError, subprocess.TimeoutExpired):
            child.kill()


def _read_lines(stream: IO[bytes], lines: queue.Queue[bytes]) -> None:
    for raw in iter(stream.readline, b""):
        lines.put(raw)
    lines.put(b"")


def _parse(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return None


class BootstrapServer:
    """Serves MCP from this process until :class:`Relay` to the full server takes over."""

    def __init__(self, runtime: Runtime, output: Output, full_server: Callable[[], list[str] | None],
                 status: Callable[[], str], server_env: dict[str, str]) -> None:
        self.runtime = runtime
        self.tools = collect_tools(runtime.modules)
        self.listing = tool_listing(self.tools.values())
        self.output = output
        self.full_server = full_server
        self.status = status
        self.server_env = server_env
        self.init_params: dict[str, Any] | None = None
        self.relay: Relay | None = None
        self._runtime_closed = False
        self._initialized = threading.Event()
        self._stop = threading.Event()

    def watch(self) -> None:
        """Start the watcher that hands the session over once the full server can run."""
        threading.Thread(target=self._watch, name="ccmemory-takeover", daemon=True).start()

    def _watch(self) -> None:
        self._initialized.wait()
        while not self._stop.wait(POLL_SECONDS):
            command = self.full_server()
            if command is None:
                continue
            relay = Relay(command, {**self.server_env, HANDOVER_ENV: "1"}, self.output)
            if relay.start(dict(self.init_params or {})):
                self.relay = relay
                log.info("The full memory server took over the session")
            return

    def serve(self, stream: IO[bytes]) -> None:
        """Read client messages until EOF."""
        for raw in iter(stream.readline, b""):
            if not raw.strip():
                continue
            message = _parse(raw)
            relay = self.relay
            if relay is not None and relay.alive:
                if not self._runtime_closed:
                    self.runtime.close(wait=1.0)
                    self._runtime_closed = True
                if relay.send(raw, message):
                    continue
            if isinstance(message, dict) and message.get("method") == "tools/call":
                # in its own thread, so a long call (docs_ingest's fetch) does not hold the others up
                threading.Thread(target=self.answer, args=(message,), name="ccmemory-call", daemon=True).start()
            else:
                self.answer(message)

    def answer(self, message: Any) -> None:
        """Handle one message and send its answer, if it has one."""
        answer = self.handle(message)
        if answer is not None:
            self.output.send(answer)

    def handle(self, message: Any) -> dict[str, Any] | None:
        """The answer to one message, or None for notifications and responses."""
        if not isinstance(message, dict):
            return error(None, PARSE_ERROR, "Parse error: expected one JSON-RPC object per line")
        method = message.get("method")
        if method is None or "id" not in message:
            if method == "notifications/initialized":
                self._initialized.set()
            return None
        request_id = message["id"]
        params = given if isinstance(given := message.get("params"), dict) else {}
        if method == "initialize":
            return result(request_id, self.initialize(params))
        if method == "ping":
            return result(request_id, {})
        if method == "tools/list":
            return result(request_id, {"tools": self.listing})
        if method == "tools/call":
            return self.call(request_id, params)
        return error(request_id, METHOD_NOT_FOUND, f"Method not found: {method}")

    def initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        self.init_params = params
        self._initialized.set()
        client = given if isinstance(given := params.get("clientInfo"), dict) else {}
        warning = compat.claude_code_warning(client.get("name"), client.get("version"))
        if warning:
            log.warning("%s", warning)
        asked = params.get("protocolVersion")
        return {
            "protocolVersion": asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[-1],
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "ccmemory", "version": __version__},
            "instructions": INSTRUCTIONS,
        }

    def call(self, request_id: Any, params: dict[str, Any]) -> dict[str, Any]:
        tool = self.tools.get(str(params.get("name")))
        if tool is None:
            return error(request_id, INVALID_PARAMS,
                         f"Unknown tool {params.get('name')!r}; this server offers: {', '.join(self.tools)}")
        arguments = given if isinstance(given := params.get("arguments"), dict) else {}
        self.runtime.background.error = (STOPPED if self.relay is not None else self.status())
        text, is_error = self.runtime.call(tool, dict(arguments))
        return result(request_id, {"content": [{"type": "text", "text": text}], "isError": is_error})

    def shutdown(self) -> NoReturn:
        """Leave at once: stop the full server if it runs, close the database."""
        self._stop.set()
        if self.relay is not None:
            self.relay.stop(wait=2.0)
        self.runtime.close(wait=1.0)
        logging.shutdown()
        sys.stderr.flush()
        os._exit(0)


def serve(full_server: Callable[[], list[str] | None], status: Callable[[], str],
          server_env: dict[str, str]) -> NoReturn:
    """Serve this session over stdio; ``full_server()`` gives the command of the SDK server once it can run.

    ``status()`` says why search is on keywords now (the build under way, or
    how it failed); ``server_env`` is the full server's environment.
    """
    logging.basicConfig(stream=sys.stderr, level=os.environ.get("CCMEMORY_LOG_LEVEL", "WARNING").upper(),
                        format="ccmemory-mcp %(levelname)s %(name)s: %(message)s")
    runtime = Runtime(load_tool_modules(), os.environ.get("CLAUDE_PROJECT_DIR") or os.getcwd(),
                      os.environ.get("CLAUDE_CODE_SESSION_ID") or None, vectors=False,
                      background=Background(unavailable=status()))
    server = BootstrapServer(runtime, Output(sys.stdout.buffer), full_server, status, server_env)
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: server.shutdown())
    server.watch()
    server.serve(sys.stdin.buffer)
    server.shutdown()
