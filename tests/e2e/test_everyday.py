"""Everyday use inside the real Claude Code CLI: a skill, the MCP tool it names, and the CLI from the plugin's bin/.

The plugin is installed from a clone, as a user would. Its MCP runtime sits where the
launcher builds it (``~/.claude/plugins/data/ccmemory-ccmemory/venv-<key>``); no
``CCMEMORY_PYTHON`` is set, so the launcher and ``bin/ccmemory`` must both find it.
The scripted model invokes ``/ccmemory:remember`` through the Skill tool, follows it
with ``memory_add``, then runs ``ccmemory search`` with Bash: the Bash tool finds the
command on the PATH Claude Code gives it, and the memory the MCP tool stored.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from testing.claude_code import claude_or_skip, ClaudeCode, MINIMUM_VERSION
from testing.fake_anthropic import Block, FakeAnthropic, offered_tools, text, tool_result, tool_results, tool_use

from testing.runtime import fake_ready_runtime

FACT = "Releases are cut from the main branch every Thursday"
ADD_TOOL = "mcp__plugin_ccmemory_memory__memory_add"
MAX_WAITS_FOR_MCP = 40


def script(body: dict[str, Any]) -> list[Block]:
    """Skill first; then memory_add once the server is offered (waiting with short Bash sleeps); then the CLI."""
    results = {r["tool_use_id"]: r for r in tool_results(body)}
    if "toolu_skill" not in results:
        return [dict(tool_use("Skill", skill="ccmemory:remember", args=FACT), id="toolu_skill")]
    if "toolu_add" not in results:
        if ADD_TOOL in offered_tools(body) or len(results) > MAX_WAITS_FOR_MCP:
            return [dict(tool_use(ADD_TOOL, content=FACT, category="pattern"), id="toolu_add")]
        return [tool_use("Bash", command="sleep 0.25", description="Wait for the memory server")]
    if "toolu_cli" not in results:
        return [dict(tool_use("Bash", command="ccmemory search Thursday --mode keyword",
                              description="Search memory from the command line"), id="toolu_cli")]
    return [text("Saved it.")]


@pytest.fixture(scope="module", params=["latest", "2.1.197"])
def session(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    binary = claude_or_skip() if request.param == "latest" else claude_or_skip(MINIMUM_VERSION)
    root = tmp_path_factory.mktemp(f"everyday-{request.param}")
    project = root / "project"
    project.mkdir()
    with FakeAnthropic(script) as fake:
        cc = ClaudeCode(binary, root, fake.url)
        clone = cc.install_plugin(project)
        runtime_log = root / "runtime-uses.log"
        fake_ready_runtime(cc.home / ".claude" / "plugins" / "data" / "ccmemory-ccmemory", runtime_log, clone)
        cc.run("-p", "Remember that releases are cut every Thursday", "--allowedTools", f"Bash Skill {ADD_TOOL}",
               "--output-format", "json", cwd=project, env={"CCMEMORY_PYTHON": "", "ENABLE_TOOL_SEARCH": "false"})
        requests = fake.agent_requests()
    return {"requests": requests, "log": runtime_log.read_text() if runtime_log.exists() else "", "cc": cc}


def result_of(session: dict[str, Any], tool_use_id: str) -> dict[str, Any]:
    return tool_result(session["requests"][-1], tool_use_id)


def test_the_skill_is_offered_and_launched_with_its_arguments(session):
    listing = json.dumps(session["requests"][0])
    assert "ccmemory:remember" in listing and "ccmemory:recall" in listing and "ccmemory:forget" in listing
    assert "Launching skill: ccmemory:remember" in json.dumps(result_of(session, "toolu_skill"))
    expanded = json.dumps(session["requests"][-1]["messages"])
    assert f"Save to ccmemory: {FACT}" in expanded and "memory_add" in expanded


def test_the_mcp_tool_the_skill_names_stores_the_memory(session):
    added = result_of(session, "toolu_add")
    assert not added.get("is_error"), added
    assert "Memory created" in json.dumps(added["content"])


def test_the_cli_from_bin_finds_it_on_the_servers_runtime(session):
    cli = result_of(session, "toolu_cli")
    assert not cli.get("is_error"), cli
    assert FACT in json.dumps(cli["content"])
    uses = session["log"].splitlines()
    assert "-P -m ccmemory.mcp.server" in uses
    assert "-P -m ccmemory search Thursday --mode keyword" in uses
