"""A hostile repository opened in the real Claude Code with the plugin: none of its code runs (issue 19, item 1).

The project of the session is the hostile repository of ``tests/hostile_helpers.py`` (top-level
``ccmemory/``, ``mcp/``, ``json.py``, ``encodings/``..., each recording when it runs), and its
``.claude/settings.json`` and the environment give a relative ``PYTHONPATH``. The plugin is installed
from a clone, its server runtime ready where the launcher looks (no ccmemory variable). The scripted
model runs a Bash command, then ``memory_search`` once the server is offered. The hooks, the MCP
server and the embedding pass SessionEnd starts all ran in the repository: nothing of it ran, and
the search answered.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from .claude_cli import VERSIONS, ClaudeCode, claude_or_skip
from .fake_anthropic import Block, FakeAnthropic, offered_tools, text, tool_result, tool_results, tool_use

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from hostile_helpers import make_hostile  # noqa: E402
from runtime_helpers import fake_ready_runtime  # noqa: E402

SEARCH_TOOL = "mcp__plugin_ccmemory_memory__memory_search"
MAX_WAITS_FOR_MCP = 40
NO_OVERRIDES = {"CCMEMORY_HOME": "", "CCMEMORY_PYTHON": "", "XDG_DATA_HOME": ""}
SETTLE_SECONDS = 90


def script(body: dict[str, Any]) -> list[Block]:
    """A Bash call; then memory_search once the server is offered (short Bash waits until then); then done."""
    results = {r["tool_use_id"]: r for r in tool_results(body)}
    if "toolu_bash" not in results:
        return [dict(tool_use("Bash", command="echo hostile-repo-ok", description="Print a word"), id="toolu_bash")]
    if "toolu_search" not in results:
        if SEARCH_TOOL in offered_tools(body) or len(results) > MAX_WAITS_FOR_MCP:
            return [dict(tool_use(SEARCH_TOOL, query="hostile-repo-ok"), id="toolu_search")]
        return [tool_use("Bash", command="sleep 0.25", description="Wait for the memory server")]
    return [text("Done.")]


def settle(log: Path, plugin_data: Path) -> None:
    """Let the detached work of SessionEnd (the launcher's --embed) finish, bounded; it may have nothing to do."""
    deadline = time.monotonic() + SETTLE_SECONDS
    while time.monotonic() < deadline and "-P -m ccmemory embed" not in (log.read_text() if log.exists() else ""):
        time.sleep(0.2)
    while time.monotonic() < deadline and (plugin_data / "embed.lock").exists():
        time.sleep(0.2)


@pytest.fixture(scope="module", params=VERSIONS)
def session(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    binary = claude_or_skip(request.param)
    root = tmp_path_factory.mktemp("hostile-e2e")
    hostile = make_hostile(root / "hostile", root / "markers")
    log = root / "runtime-uses.log"
    with FakeAnthropic(script) as fake:
        cc = ClaudeCode(binary, root, fake.url)
        clone = cc.install_plugin(hostile.root)
        fake_ready_runtime(cc.plugin_data, log, clone)
        done = cc.run("-p", "Look around this repository", "--allowedTools", f"Bash {SEARCH_TOOL}",
                      "--output-format", "json", cwd=hostile.root,
                      env={**NO_OVERRIDES, "PYTHONPATH": ".", "ENABLE_TOOL_SEARCH": "false"})
        requests = fake.agent_requests()
    settle(log, cc.plugin_data)
    return {"hostile": hostile, "requests": requests, "uses": log.read_text().splitlines() if log.exists() else [],
            "result": json.loads(done.stdout), "cc": cc}


def test_nothing_of_the_repository_ran(session):
    assert not session["result"].get("is_error"), session["result"]
    assert session["hostile"].ran() == []


def test_the_bash_call_ran_and_memory_search_answered(session):
    last = session["requests"][-1]
    ran = tool_result(last, "toolu_bash")
    assert "hostile-repo-ok" in json.dumps(ran["content"]), ran
    assert SEARCH_TOOL in offered_tools(last), "the plugin's MCP server never connected"
    found = tool_result(last, "toolu_search")
    assert not found.get("is_error"), found
    assert "-P -m ccmemory.mcp.server" in session["uses"]  # the server really ran, isolated from the repository
