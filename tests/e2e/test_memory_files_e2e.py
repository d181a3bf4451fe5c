"""Claude's memory tool inside the real Claude Code CLI, offline: the model writes a memory file in one
session and the next session is given it at SessionStart.

Session 1 (fake model on loopback): waits for the plugin's MCP server, views ``/memories``, creates
``/memories/progress.md`` through ``mcp__plugin_ccmemory_memory__memory``, then edits it and answers.
Session 2 sends nothing but a prompt: its first request to the model must already carry the file,
injected by the SessionStart hook ahead of the memory index, and the rolling local context of the
first session's turn.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from testing.claude_code import claude_or_skip, ClaudeCode, store_rows as rows
from testing.fake_anthropic import Block, FakeAnthropic, offered_tools, text, tool_results, tool_use

MEMORY_TOOL = "mcp__plugin_ccmemory_memory__memory"
FIRST_PROMPT = "Start the billing export and keep notes of the progress"
NOTE = "Billing export: CSV writer done; next: the PDF renderer (ccmemory-files-e2e)."
MAX_WAITS_FOR_MCP = 40


def first_session(body: dict[str, Any]) -> list[Block]:
    """Run one command, wait for the MCP server, then view, create and edit a memory file, then answer.

    The command comes first whatever the server's speed, so that a captured Bash call always
    sits beside the memory tool calls that must not be captured.
    """
    results = {r["tool_use_id"]: r for r in tool_results(body)}
    if "toolu_start" not in results:
        return [dict(tool_use("Bash", command="echo billing export started", description="Start"), id="toolu_start")]
    if len(results) > MAX_WAITS_FOR_MCP:
        return [text("The memory server never connected.")]
    if MEMORY_TOOL not in offered_tools(body):
        return [tool_use("Bash", command="sleep 0.25", description="Wait for the memory server")]
    for step, arguments in (
        ("toolu_view", {"command": "view", "path": "/memories"}),
        ("toolu_create", {"command": "create", "path": "/memories/progress.md",
                          "file_text": f"# Progress\n{NOTE}\n"}),
        ("toolu_insert", {"command": "insert", "path": "/memories/progress.md", "insert_line": 1,
                          "insert_text": "Owner: the billing team"}),
    ):
        if step not in results:
            return [dict(tool_use(MEMORY_TOOL, **arguments), id=step)]
    return [text("Noted the progress in /memories/progress.md.")]


@dataclass
class Run:
    first: list[dict[str, Any]]
    second: list[dict[str, Any]]
    db_path: Path



@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    binary = claude_or_skip()
    root = tmp_path_factory.mktemp("claude-files-e2e")
    project = root / "project"
    project.mkdir()
    with FakeAnthropic(first_session) as fake:
        cc = ClaudeCode(binary, root, fake.url)
        cc.install_plugin(project)
        cc.run("-p", FIRST_PROMPT, "--allowedTools", f"Bash {MEMORY_TOOL}", "--output-format", "json",
               cwd=project, env={"ENABLE_TOOL_SEARCH": "false"})
        first = fake.agent_requests()
        fake.script = [[text("Picking up the PDF renderer.")]]
        fake.requests.clear()
        cc.run("-p", "Continue", "--output-format", "json", cwd=project)
        second = fake.agent_requests()
    return Run(first, second, cc.data / "ccmemory.db")


def test_the_model_created_the_file_through_the_tool(run: Run) -> None:
    results = {r["tool_use_id"]: r for r in tool_results(run.first[-1])}
    for step in ("toolu_view", "toolu_create", "toolu_insert"):
        assert step in results and not results[step].get("is_error"), results.get(step)
    assert "File created successfully at: /memories/progress.md" in json.dumps(results["toolu_create"]["content"])
    [stored] = rows(run.db_path, "SELECT path, content, project_id FROM memory_files")
    assert stored["path"] == "progress.md" and stored["project_id"] is not None
    assert stored["content"] == f"# Progress\nOwner: the billing team\n{NOTE}\n"


def test_the_tool_calls_are_audited_and_not_captured_as_observations(run: Run) -> None:
    audit = rows(run.db_path, "SELECT command, ok, source FROM memory_file_log ORDER BY id")
    assert [(a["command"], a["ok"], a["source"]) for a in audit] == [
        ("view", 1, "mcp"), ("create", 1, "mcp"), ("insert", 1, "mcp")]
    tools = {r["tool"] for r in rows(run.db_path, "SELECT json_extract(metadata, '$.tool') AS tool FROM memories "
                                                   "WHERE source = 'capture'")}
    assert "Bash" in tools and MEMORY_TOOL not in tools


def test_the_next_session_receives_the_file_at_session_start(run: Run) -> None:
    assert run.second, "session 2 sent no request to the model"
    sent = json.dumps(run.second[0]["messages"])
    assert "SessionStart hook additional context" in sent
    assert '<file path=\\"/memories/progress.md\\"' in sent and NOTE in sent
    assert "Owner: the billing team" in sent
    assert sent.index("Memory files") < sent.index("Recent activity in this directory")
    assert FIRST_PROMPT in sent.split("Recent activity in this directory")[1]
