"""The first sessions after an install: the launcher serves MCP from the standard library, then hands over.

The real launcher of this repository runs under ``python -S`` (no site-packages: nothing but the
standard library and the plugin's own source), with a runtime home whose build lock is held by
this test, as when another session is already building. When the test then puts a ready runtime
in place (a venv whose ``python`` is this test's interpreter, which has the dependencies), the
SDK server must take over the same session.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

import pytest

from ccmemory.mcp.registry import tool_listing
from ccmemory.mcp.runtime import collect_tools, load_tool_modules
from testing.hooks import run_hook, tool_call
from testing.env import isolated_env

REPO_ROOT = Path(__file__).resolve().parents[1]
LAUNCHER = REPO_ROOT / "scripts" / "mcp_launcher.py"

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX process tree and shell-script venv")


def load_launcher() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mcp_launcher_under_test", LAUNCHER)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Session:
    """One session's MCP server, spoken to as Claude Code 2.1.330 does (discover probe, then initialize)."""

    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        self.process = subprocess.Popen([sys.executable, "-S", str(LAUNCHER)], env=env, cwd=cwd,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.next_id = 0
        probe = self.request("server/discover", {})
        assert probe["error"]["code"] == -32601
        self.initialized = self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                                       "clientInfo": {"name": "claude-code", "version": "2.1.330"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict) -> None:
        assert self.process.stdin
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def request(self, method: str, params: dict | None = None) -> dict:
        assert self.process.stdout
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params or {}})
        answer = json.loads(self.process.stdout.readline())
        assert answer.get("id") == self.next_id, answer
        return answer

    def call(self, tool: str, **arguments: object) -> str:
        answer = self.request("tools/call", {"name": tool, "arguments": arguments})
        assert "result" in answer, answer
        return answer["result"]["content"][0]["text"]

    def children(self) -> list[int]:
        task = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        return [int(pid) for pid in task.read_text().split()] if task.exists() else []

    def close(self) -> bytes:
        assert self.process.stdin and self.process.stderr
        self.process.stdin.close()
        self.process.wait(timeout=30)
        return self.process.stderr.read()


@pytest.fixture
def building(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, str], Path]:
    """The environment of a session whose runtime another session is building, and that runtime's dir."""
    plugin_data = tmp_path / "plugin-data"
    monkeypatch.setenv("CLAUDE_PLUGIN_DATA", str(plugin_data))
    launcher = load_launcher()
    venv = launcher.runtime_dir()
    venv.with_name(venv.name + ".lock").write_text(str(os.getpid()))
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    env = isolated_env(tmp_path / "home", CLAUDE_PLUGIN_DATA=str(plugin_data), CLAUDE_PROJECT_DIR=str(project))
    return env, venv


def finish_build(venv: Path) -> None:
    """What a finished build leaves: a venv whose python has the dependencies, and the ready marker."""
    python = venv / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    (venv / "ccmemory-ready.json").write_text(json.dumps({"installer": "test"}))


def test_tools_are_offered_at_once_and_work_on_keywords_while_the_runtime_builds(building, tmp_path) -> None:
    env, _ = building
    project = Path(env["CLAUDE_PROJECT_DIR"])
    home = Path(env["CCMEMORY_HOME"])
    captured = tool_call("s-1", project, "Bash", {"command": "pytest tests/test_billing.py"},
                         {"stdout": "FAILED test_invoice_rounding - assert 10.01 == 10.0", "stderr": ""}, "toolu_1")
    assert run_hook("post_tool_use", captured, home, cwd=project).returncode == 0

    session = Session(env, project)
    assert session.initialized["result"]["serverInfo"]["name"] == "ccmemory"
    listed = session.request("tools/list")["result"]["tools"]
    assert listed == tool_listing(collect_tools(load_tool_modules()).values())

    found = session.call("memory_search", query="invoice rounding")
    assert "test_invoice_rounding" in found
    assert "still being installed" in found and "keyword matches only" in found
    added = session.call("memory_add", content="Invoices round half-up to the cent")
    assert "Memory created" in added
    unknown = session.request("tools/call", {"name": "no_such_tool", "arguments": {}})
    assert unknown["error"]["code"] == -32602
    assert session.request("ping")["result"] == {}
    assert b"Traceback" not in session.close()
    assert sorted(p.name for p in project.iterdir()) == [".git"]
    assert (home / "ccmemory.db").exists()


def test_the_full_server_takes_over_the_session_when_the_runtime_is_ready(building) -> None:
    env, venv = building
    project = Path(env["CLAUDE_PROJECT_DIR"])
    session = Session(env, project)
    memory_id = session.call("memory_add", content="The staging database listens on port 6543").split()[2]
    finish_build(venv)

    deadline = time.monotonic() + 180
    while True:
        found = session.call("memory_search", query="which port does the staging database use")
        if "(hybrid)" in found:
            break
        assert time.monotonic() < deadline, found
        time.sleep(0.5)
    assert "6543" in found and "keyword matches only" not in found
    assert memory_id in session.call("memory_get", ids=[memory_id])
    [child] = session.children()

    os.kill(child, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while session.children():
        assert time.monotonic() < deadline
        time.sleep(0.1)
    after = session.call("memory_search", query="staging database port")
    assert "6543" in after
    assert "memory server stopped" in after
    session.close()
