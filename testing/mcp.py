"""Run the real ccmemory MCP server under the MCP SDK's stdio client, as Claude Code would.

Usage from a synchronous test::

    with running_server(home, project_dir) as server:
        answer = server.call("memory_add", {"content": "We deploy with make release"})
        assert not answer.is_error and "Memory created" in answer.text
        db = server.connect()          # a real connection to the same SQLite file

``running_server`` spawns ``python -m ccmemory.mcp.server`` with
``CCMEMORY_HOME=home`` (a private database) and ``CLAUDE_PROJECT_DIR=project_dir``,
connects the SDK ``Client`` and drives it from a blocking portal, so one server
can serve a whole test module. The default ``mode="auto"`` negotiates like Claude
Code 2.1.330: a ``server/discover`` probe, then the 2026-07-28 protocol;
``mode="legacy"`` is the ``initialize`` handshake of older clients.

The server's stderr (its log) goes to a file rather than pytest's output; when a
request fails at the protocol level (the server went away: "Connection closed",
or timed out), the exception carries that log's last lines, so the failure says
why the server is gone.
"""

from __future__ import annotations

import sys
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Awaitable, Callable, Iterator, TypeVar

from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from ccmemory import db as database
from ccmemory import paths, projects
from testing.env import isolated_env
from testing.repo import SOURCE

T = TypeVar("T")
#: How much of the server's stderr a failed request shows.
STDERR_TAIL_CHARS = 6000


def server_command() -> list[str]:
    """The command line Claude Code's ``.mcp.json`` boils down to."""
    return [sys.executable, "-m", "ccmemory.mcp.server"]


def server_env(home: Path, project_dir: Path | None, **extra: str) -> dict[str, str]:
    """The environment of a server process: this checkout on the path, a private data dir."""
    if project_dir is not None:
        extra = {"CLAUDE_PROJECT_DIR": str(project_dir), **extra}
    return isolated_env(home, PYTHONPATH=str(SOURCE), **extra)


@dataclass
class Answer:
    """A tool result as Claude sees it: the text and whether it is an error."""

    text: str
    is_error: bool


@dataclass
class RunningServer:
    """A live server and its connected client, driven synchronously."""

    portal: BlockingPortal
    client: Client
    home: Path
    project_dir: Path
    stderr: IO[str]

    def call(self, name: str, arguments: dict[str, Any] | None = None) -> Answer:
        result = self._ask(self.client.call_tool, name, arguments or {})
        return Answer("\n".join(block.text for block in result.content if block.type == "text"), result.is_error)

    def list_tools(self) -> list[Any]:
        return self._ask(self.client.list_tools).tools

    def stderr_text(self) -> str:
        """All the server wrote to stderr so far."""
        self.stderr.flush()
        return Path(self.stderr.name).read_text(encoding="utf-8", errors="replace")

    def _ask(self, request: Callable[..., Awaitable[T]], *args: Any) -> T:
        """One request; a protocol-level failure gets the server's stderr tail as a note."""
        try:
            return self.portal.call(request, *args)
        except Exception as exc:
            tail = self.stderr_text()[-STDERR_TAIL_CHARS:]
            exc.add_note(f"The MCP server's stderr (last {STDERR_TAIL_CHARS} characters):\n{tail or '(empty)'}")
            raise

    def connect(self) -> database.Database:
        """A stdlib connection to the server's database file (for setting up and checking data)."""
        return database.connect(paths.ensure_private_dir(self.home) / paths.DB_FILENAME)

    def project_id(self, db: database.Database) -> int:
        return projects.project_id(db, self.project_dir)


@contextmanager
def running_server(
    home: Path,
    project_dir: Path,
    *,
    cwd: Path | None = None,
    mode: str = "auto",
    timeout: float = 60.0,
    **env: str,
) -> Iterator[RunningServer]:
    """Spawn the server, connect, yield; the client closes stdin and reaps the process on exit.

    With ``cwd`` the server runs there without ``CLAUDE_PROJECT_DIR`` (the project is then the cwd's).
    """
    params = StdioServerParameters(command=server_command()[0], args=server_command()[1:],
                                   env=server_env(home, None if cwd else project_dir, **env),
                                   cwd=str(cwd or project_dir))
    with connected(params, home, project_dir, mode=mode, timeout=timeout) as running:
        yield running


@contextmanager
def connected(params: StdioServerParameters, home: Path, project_dir: Path, *, mode: str = "auto",
              timeout: float = 60.0) -> Iterator[RunningServer]:
    """Start the server ``params`` describe, its stderr kept in a file, and connect the SDK client to it."""
    with tempfile.NamedTemporaryFile("w+", encoding="utf-8", prefix="ccmemory-mcp-", suffix=".stderr") as stderr, \
            start_blocking_portal() as portal:
        transport = stdio_client(params, errlog=stderr)
        with portal.wrap_async_context_manager(Client(transport, mode=mode, read_timeout_seconds=timeout)) as client:
            yield RunningServer(portal, client, home, project_dir, stderr)


@contextmanager
def project_server(root: Path, session_id: str) -> Iterator[RunningServer]:
    """A server for a fresh git project ``root/project`` with its data under ``root/home``, in session ``session_id``."""
    project_dir = root / "project"
    (project_dir / ".git").mkdir(parents=True)
    with running_server(root / "home", project_dir, CLAUDE_CODE_SESSION_ID=session_id) as running:
        yield running
