"""The server as a process: raw JSON-RPC as Claude Code sends it, shutdown, background embedding, eras."""

from __future__ import annotations

import json
import logging
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from ccmemory import memories
from ccmemory.mcp import runtime as mcp_runtime
from testing.mcp import running_server, server_command, server_env

INITIALIZE = {"protocolVersion": "2025-11-25", "capabilities": {"roots": {}},
              "clientInfo": {"name": "claude-code", "version": "2.1.330"}}


class RawServer:
    """The server process spoken to line by line, without any SDK in between."""

    def __init__(self, home: Path, project_dir: Path, **env: str) -> None:
        self.process = subprocess.Popen(server_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, env=server_env(home, project_dir, **env),
                                        cwd=project_dir)
        self.lines: list[bytes] = []

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        self.process.stdin.flush()

    def receive(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line, f"server closed stdout; stderr: {self.process.stderr.read().decode() if self.process.stderr else ''}"
        self.lines.append(line)
        return json.loads(line)

    def request(self, request_id: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.send({"id": request_id, "method": method, **({"params": params} if params is not None else {})})
        return self.receive()

    def handshake(self) -> None:
        assert "result" in self.request(1, "initialize", INITIALIZE)
        self.send({"method": "notifications/initialized"})

    def close_stdin(self) -> None:
        """EOF on the server's stdin, as when Claude Code closes the pipe."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.stdin = None

    def finish(self, timeout: float = 30) -> tuple[int, bytes, bytes]:
        """Wait for the exit; returns the exit code, the rest of stdout and stderr."""
        out, err = self.process.communicate(timeout=timeout)
        return self.process.returncode, out, err


@pytest.fixture
def raw(home: Path, project_dir: Path):
    server = RawServer(home, project_dir)
    yield server
    if server.process.poll() is None:
        server.process.kill()
        server.process.communicate()


def test_claude_code_probe_then_handshake_then_tools(raw: RawServer) -> None:
    """Claude Code 2.1.330 first sends server/discover; -32601 makes it fall back to initialize."""
    probe = raw.request(0, "server/discover", {})
    assert probe["id"] == 0 and probe["error"]["code"] == -32601
    raw.handshake()
    listed = raw.request(2, "tools/list")
    assert "memory_search" in [tool["name"] for tool in listed["result"]["tools"]]
    unknown = raw.request(3, "resources/unknown_method", {})
    assert unknown["id"] == 3 and unknown["error"]["code"] == -32601
    called = raw.request(4, "tools/call", {"name": "memory_add", "arguments": {"content": "Raw JSON-RPC works"}})
    assert called["result"]["isError"] is False and "Memory created" in called["result"]["content"][0]["text"]
    raw.close_stdin()
    code, rest, err = raw.finish()
    assert code == 0 and rest == b"", err.decode()
    assert b"Traceback" not in err


def test_claude_code_2_1_330_modern_probe_and_enveloped_calls(raw: RawServer) -> None:
    """What Claude Code 2.1.330 sent in `claude mcp list` (captured): a discover probe carrying the
    2026-07-28 envelope; once it is answered, every request carries the envelope and no initialize follows."""
    envelope = {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                          "io.modelcontextprotocol/clientInfo": {"name": "claude-code", "version": "2.1.330"},
                          "io.modelcontextprotocol/clientCapabilities": {"roots": {"listChanged": True}}}}
    raw.send({"id": "server-discover-probe-1", "method": "server/discover", "params": envelope})
    probe = raw.receive()
    assert probe["id"] == "server-discover-probe-1" and "2026-07-28" in probe["result"]["supportedVersions"]
    assert "memory_search" in probe["result"]["instructions"]
    listed = raw.request(0, "tools/list", envelope)
    assert "memory_timeline" in [tool["name"] for tool in listed["result"]["tools"]]
    called = raw.request(1, "tools/call", {**envelope, "name": "memory_list", "arguments": {}})
    assert called["result"]["isError"] is False and "No memories" in called["result"]["content"][0]["text"]
    unknown = raw.request(2, "no/such_method", envelope)
    assert unknown["error"]["code"] == -32601
    raw.close_stdin()
    code, rest, err = raw.finish()
    assert code == 0 and rest == b"" and b"Traceback" not in err


def test_exits_cleanly_on_sigint(raw: RawServer) -> None:
    raw.handshake()
    raw.request(2, "tools/list")
    raw.process.send_signal(signal.SIGINT)
    code, rest, err = raw.finish()
    assert code == 0 and rest == b""
    assert b"Traceback" not in err and b"KeyboardInterrupt" not in err


def test_exits_cleanly_on_sigint_during_a_session_with_work_done(raw: RawServer) -> None:
    raw.handshake()
    raw.request(2, "tools/call", {"name": "memory_search", "arguments": {"query": "anything"}})
    raw.process.send_signal(signal.SIGINT)
    code, _, err = raw.finish()
    assert code == 0 and b"Traceback" not in err


def test_exits_on_stdin_eof_before_any_request(raw: RawServer) -> None:
    raw.close_stdin()
    code, rest, err = raw.finish()
    assert code == 0 and rest == b"" and b"Traceback" not in err


def test_stdout_carries_only_protocol(raw: RawServer) -> None:
    raw.handshake()
    raw.request(2, "tools/list")
    raw.request(3, "tools/call", {"name": "memory_search", "arguments": {"query": "what did we decide"}})
    raw.request(4, "tools/call", {"name": "memory_add", "arguments": {}})
    raw.close_stdin()
    _, rest, _ = raw.finish()
    for line in [*raw.lines, *rest.splitlines()]:
        assert json.loads(line)["jsonrpc"] == "2.0"


def test_pending_embeddings_are_caught_up_in_the_background(home: Path, project_dir: Path, db, project) -> None:
    """Hooks store memories without vectors; the live server embeds them without being asked."""
    for i in range(30):
        memories.add(db, project_id=project, content=f"Captured tool observation number {i}", source="hook")
    with running_server(home, project_dir) as server:
        server.list_tools()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if db.scalar("SELECT COUNT(*) FROM memory_embeddings") == 30:
                break
            time.sleep(0.2)
        assert db.scalar("SELECT COUNT(*) FROM memory_embeddings") == 30


def test_search_falls_back_to_keywords_and_says_why_when_the_model_cannot_load(home: Path, project_dir: Path,
                                                                                 db, project) -> None:
    (home / "config.json").write_text(json.dumps({"embedding": {"model": "no/such-model",
                                                                "path": str(project_dir / "missing-model")}}))
    memories.add(db, project_id=project, content="The kiwi exporter writes CSV files")
    reason = "Note: semantic search is unavailable (Could not load embedding model 'no/such-model'"
    with running_server(home, project_dir) as server:
        deadline = time.monotonic() + 120
        while True:
            first = server.call("memory_search", {"query": "kiwi exporter"})
            assert not first.is_error and "(keyword)" in first.text and "kiwi exporter" in first.text
            if reason in first.text:
                break
            assert "the embedding model is still loading" in first.text
            assert time.monotonic() < deadline
            time.sleep(0.2)
        second = server.call("memory_search", {"query": "kiwi CSV", "mode": "semantic"})
    assert not second.is_error and "(keyword)" in second.text and "kiwi exporter" in second.text
    assert reason in second.text


def test_project_is_claude_project_dir_else_the_working_directory(home: Path, project_dir: Path, tmp_path: Path,
                                                                    db) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with running_server(home, project_dir) as server:
        by_env = server.call("memory_add", {"content": "Belongs to CLAUDE_PROJECT_DIR"}).text.split()[2]
    with running_server(home, project_dir, cwd=elsewhere) as server:
        by_cwd = server.call("memory_add", {"content": "Belongs to the working directory"}).text.split()[2]
    project_of = {row["path"]: row["id"] for row in db.rows("SELECT id, path FROM projects")}
    assert memories.get(db, by_env, project_id=None).project_id == project_of[str(project_dir.resolve())]
    assert memories.get(db, by_cwd, project_id=None).project_id == project_of[str(elsewhere.resolve())]


@pytest.mark.parametrize("mode, version", [("auto", "2026-07-28"), ("legacy", "2025-11-25")])
def test_both_protocol_eras_through_the_sdk_client(home: Path, project_dir: Path, mode: str, version: str) -> None:
    """Claude Code 2.1.330 negotiates the 2026-07-28 era via server/discover; older clients send initialize."""
    with running_server(home, project_dir, mode=mode) as server:
        assert server.client.protocol_version == version
        assert "memory_get" in [tool.name for tool in server.list_tools()]
        assert "Memory created" in server.call("memory_add", {"content": f"Call in the {version} era"}).text


def test_a_missing_tool_module_is_skipped_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        modules = mcp_runtime.load_tool_modules(("ccmemory.mcp.memory_tools", "ccmemory.not_written_yet.tools"))
    assert [module.__name__ for module in modules] == ["ccmemory.mcp.memory_tools"]
    assert "ccmemory.not_written_yet.tools is not installed" in caplog.text


def test_a_broken_tool_module_is_not_hidden(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "broken_tools.py").write_text("import no_such_dependency_for_ccmemory\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError, match="no_such_dependency_for_ccmemory"):
        mcp_runtime.load_tool_modules(("broken_tools",))
