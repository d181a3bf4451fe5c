"""What an MCP server process holds, whatever speaks the protocol: the tools, the database, the background.

Two transports share it: :mod:`ccmemory.mcp.server` (the MCP SDK, once the
plugin's Python runtime is installed) and :mod:`ccmemory.mcp.bootstrap` (the
standard library, while that runtime is still being built after an install).
Nothing here imports the SDK, sqlite-vec or the model.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import threading
from types import ModuleType
from typing import Any, Iterator

from .. import db as database, projects
from ..background import STATE_KEY, Background
from ..errors import CCMemoryError
from ..redaction import storable
from ..team.sync import Periodic
from .registry import TOOL_MODULES, Tool, ToolContext

log = logging.getLogger("ccmemory.mcp")

#: Set for a server that takes over a session the bootstrap server already started.
HANDOVER_ENV = "CCMEMORY_MCP_HANDOVER"
#: Claude Code warns above 25,000 tokens of tool output; no answer of ours needs more than this.
MAX_RESULT_CHARS = 100_000

INSTRUCTIONS = (
    "Persistent memory of this project across sessions. Look things up with memory_search (a compact index), "
    "then read chosen hits with memory_get or their context with memory_timeline. Save durable facts, "
    "decisions and preferences with memory_add; replace outdated ones with memory_supersede. Keep notes and "
    "progress as Markdown files with the memory tool (view /memories first; /memories/user is shared by all "
    "projects)."
)


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
    """What lives as long as the server: the connection, the project, the tools' shared state.

    ``vectors`` opens the database with sqlite-vec (the SDK server); the
    bootstrap server opens it with the standard library and searches by
    keywords. ``start_hooks`` runs each tool module's ``on_server_start`` once;
    a server that takes over from the bootstrap server in the same session
    skips them, as the session already started.
    """

    def __init__(self, modules: list[ModuleType], project_dir: str, session_id: str | None, *,
                 vectors: bool = True, start_hooks: bool = True, background: Background | None = None) -> None:
        self.modules = modules
        self.project_dir = project_dir
        self.session_id = session_id
        self.vectors = vectors
        self.start_hooks = start_hooks
        self.background = background or Background()
        self.sync_rounds = Periodic(vectors=vectors)
        self.state: dict[str, Any] = {STATE_KEY: self.background}
        self._lock = threading.Lock()
        self._context: ToolContext | None = None

    def _open(self) -> ToolContext:
        """The tool context, opening the database on first use (caller holds the lock)."""
        if self._context is None:
            db = database.connect(vectors=self.vectors)
            try:
                project_id = projects.project_id(db, self.project_dir)
            except BaseException:
                db.close()
                raise
            self._context = ToolContext(db, project_id, self.project_dir, self.session_id, self.state,
                                        unlocked=self._unlocked)
            if self.start_hooks:
                for module in self.modules:
                    hook = getattr(module, "on_server_start", None)
                    if hook is not None:
                        try:
                            hook(self._context)
                        except Exception:
                            log.exception("on_server_start of %s failed; its tools may still work", module.__name__)
        return self._context

    @contextlib.contextmanager
    def _unlocked(self) -> Iterator[None]:
        """Let other calls use the connection while the calling handler works without it."""
        self._lock.release()
        try:
            yield
        finally:
            self._lock.acquire()

    def open(self) -> None:
        """Open the database now (run first by the background thread)."""
        with self._lock:
            self._open()

    def start_background(self) -> None:
        self.background.start(open_db=lambda: database.connect(vectors=True), before=self.open)
        self.sync_rounds.start()

    def call(self, tool: Tool, arguments: dict[str, Any]) -> tuple[str, bool]:
        """Run one tool; returns its text and whether it is an error."""
        with self._lock:
            try:
                return bounded_result(tool.handler(self._open(), storable_arguments(arguments))), False
            except CCMemoryError as exc:  # ToolError among them
                return bounded_result(str(exc)), True  # an error may echo an argument of any size
            except Exception as exc:
                log.exception("Tool %s failed", tool.name)
                return (f"{tool.name} failed unexpectedly ({type(exc).__name__}: {exc}). The MCP server's stderr "
                        "log has the details; please report it with that log."), True

    def close(self, wait: float) -> None:
        """Stop the background work and close the database (if no call holds it for ``wait`` seconds)."""
        self.background.stop()
        self.sync_rounds.stop()
        if not self._lock.acquire(timeout=wait):
            return
        try:
            if self._context is not None:
                self._context.db.close()
                self._context = None
        finally:
            self._lock.release()


def storable_arguments(arguments: dict[str, Any]) -> dict[str, Any]:
    """Text arguments (and lists of text) with lone surrogates as their escapes: JSON may carry them, SQLite cannot."""
    def text(value: Any) -> Any:
        return storable(value) if isinstance(value, str) else value

    return {key: [text(item) for item in value] if isinstance(value, list) else text(value)
            for key, value in arguments.items()}


def bounded_result(text: str) -> str:
    """A tool's text as sent: valid UTF-8 (escaping may lengthen it), then at most :data:`MAX_RESULT_CHARS`."""
    text = storable(text)
    if len(text) > MAX_RESULT_CHARS:
        text = (text[:MAX_RESULT_CHARS] + f"\n[… {len(text) - MAX_RESULT_CHARS:,} more characters cut; "
                "ask for less: fewer ids, a lower limit or a narrower query]")
    return text
