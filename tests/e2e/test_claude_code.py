"""ccmemory inside the real Claude Code CLI, offline, as a user would install and use it.

A throwaway HOME adds this repository as a local marketplace and installs the plugin from it.
A fake Messages API on 127.0.0.1 scripts the model: session 1 runs a Bash command, a failing
Bash command, writes a file and edits it; session 2 searches the memory through the plugin's
MCP server, then answers. In between, the real hooks fill the database, and session 2 must
receive what session 1 left behind, both injected at its start and from the search.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from testing.claude_code import claude_or_skip, ClaudeCode, PLUGIN_ID, VERSIONS, store_rows as rows
from testing.fake_anthropic import Block, FakeAnthropic, offered_tools, text, tool_result, tool_results, tool_use

FIRST_PROMPT = "Set up the greeting module"
SECOND_PROMPT = "What did we do in this project before?"
MARKER = "ccmemory-e2e-marker"
DECISION = "We decided to keep the greeting in greeting.py because both tools share it."
SEARCH_TOOL = "mcp__plugin_ccmemory_memory__memory_search"
SETTLE_SECONDS = 60
MAX_WAITS_FOR_MCP = 40


@dataclass
class Sessions:
    cc: ClaudeCode
    project: Path
    target: Path
    db_path: Path
    first_id: str
    first_debug: str
    first_requests: list[dict[str, Any]]
    second_requests: list[dict[str, Any]]

    def hook_log(self) -> str:
        """The hooks' own log, for failure messages: hooks never speak to Claude Code."""
        log = self.cc.data / "logs" / "hooks.log"
        return f"\nhooks.log:\n{log.read_text()}" if log.exists() else "\n(no hooks.log)"


def first_session_script(target: Path) -> list[list[dict]]:
    return [
        [tool_use("Bash", command=f"echo {MARKER}", description="Print the marker")],
        [tool_use("Bash", command="ls does-not-exist-ccmemory", description="List a missing folder")],
        [tool_use("Write", file_path=str(target), content="GREETING = 'hello'\n")],
        [tool_use("Edit", file_path=str(target), old_string="'hello'", new_string="'hello, memory'")],
        [text(f"Done. {DECISION}")],
    ]


def second_session_script(body: dict[str, Any]) -> list[Block]:
    """Search the memory once the MCP server is offered (it connects in the background), then answer.

    `claude -p` may send its first request before the server has connected; a short Bash wait
    per turn lets it finish, bounded by MAX_WAITS_FOR_MCP turns.
    """
    results = tool_results(body)
    if len(results) > MAX_WAITS_FOR_MCP or any(r["tool_use_id"].startswith("toolu_search") for r in results):
        return [text("Picked up where we left off.")]
    if SEARCH_TOOL in offered_tools(body):
        return [dict(tool_use(SEARCH_TOOL, query="greeting"), id="toolu_search")]
    return [tool_use("Bash", command="sleep 0.25", description="Wait for the memory server")]



def wait_until_promoted(db_path: Path, session_id: str) -> None:
    """SessionEnd may finish in a detached worker after `claude -p` exits: wait for its result, bounded."""
    deadline = time.monotonic() + SETTLE_SECONDS
    while time.monotonic() < deadline:
        pending = rows(db_path, "SELECT count(*) AS n FROM memories WHERE session_id = ? AND tier = 'session' "
                                "AND salience > 0.7 AND is_deleted = 0", (session_id,))
        if pending[0]["n"] == 0:
            return
        time.sleep(0.2)


@pytest.fixture(scope="module", params=VERSIONS)
def sessions(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Sessions:
    binary = claude_or_skip(request.param)
    root = tmp_path_factory.mktemp("claude-e2e")
    project = root / "project"
    project.mkdir()
    target = project / "greeting.py"
    agent_flags = ("--allowedTools", "Bash Write Edit", "--output-format", "json")
    with FakeAnthropic(first_session_script(target)) as fake:
        cc = ClaudeCode(binary, root, fake.url)
        cc.install_plugin(project)
        debug = root / "first-debug.txt"
        first = cc.run("-p", FIRST_PROMPT, *agent_flags, "--debug-file", str(debug), cwd=project)
        first_id = json.loads(first.stdout)["session_id"]
        db_path = cc.data / "ccmemory.db"
        wait_until_promoted(db_path, first_id)
        first_requests = fake.agent_requests()

        fake.script = second_session_script
        fake.requests.clear()
        cc.run("-p", SECOND_PROMPT, "--allowedTools", f"Bash Write Edit {SEARCH_TOOL}", "--output-format", "json",
               cwd=project, env={"ENABLE_TOOL_SEARCH": "false"})
        second_requests = fake.agent_requests()
    return Sessions(cc, project, target, db_path, first_id, debug.read_text(), first_requests, second_requests)


def test_the_scripted_turn_really_ran_its_tools(sessions: Sessions) -> None:
    assert sessions.target.read_text() == "GREETING = 'hello, memory'\n"
    assert len(sessions.first_requests) == 5


def test_the_plugin_is_installed_from_the_local_marketplace(sessions: Sessions) -> None:
    listed = json.loads(sessions.cc.run("plugin", "list", "--json", cwd=sessions.project).stdout)
    [plugin] = [p for p in listed if p["id"] == PLUGIN_ID]
    assert plugin["enabled"] is True


def test_each_hook_fires_once_per_event(sessions: Sessions) -> None:
    """hooks.json at the root, named by plugin.json, must load once: no double firing.

    A synchronous hook logs "finished with status 0"; an async one (capture) logs "moved to the background".
    """
    finished = [line for line in sessions.first_debug.splitlines()
                if "(plugin ccmemory@ccmemory) finished with status 0" in line
                or "(plugin ccmemory@ccmemory) moved to the background" in line]
    if not finished:  # releases before 2.1.330 log only how many hooks they registered
        assert "Registered 5 hooks from 1 plugins" in sessions.first_debug
        return
    count = {event: sum(f"Hooks: {event}" in line for line in finished)
             for event in ("SessionStart:", "PostToolUse:", "PostToolUseFailure:", "Stop ")}
    assert count == {"SessionStart:": 1, "PostToolUse:": 3, "PostToolUseFailure:": 1, "Stop ": 1}, finished


def test_observations_of_every_tool_call_are_stored(sessions: Sessions) -> None:
    # Async capture stores each call from a process of its own, stamped when that process has started: the
    # fake model answers at once, so calls may be stamped out of order (see docs/hooks.md).
    captured = rows(sessions.db_path, "SELECT content, files FROM memories WHERE session_id = ? AND source = 'capture' "
                                      "ORDER BY created_at, seq", (sessions.first_id,))
    assert len(captured) == 4, captured
    commands = [m for m in captured if m["content"].startswith("Ran")]
    assert len(commands) == 2 and MARKER in " ".join(m["content"] for m in commands)
    assert "does-not-exist-ccmemory" in " ".join(m["content"] for m in commands)
    assert all(str(sessions.target) in json.loads(m["files"]) for m in captured if m not in commands)


def test_the_session_and_its_summary_are_recorded(sessions: Sessions) -> None:
    [session] = rows(sessions.db_path, "SELECT * FROM sessions WHERE id = ?", (sessions.first_id,))
    assert session["transcript_path"].endswith(f"{sessions.first_id}.jsonl")
    assert FIRST_PROMPT in session["summary"]
    assert "greeting.py" in session["summary"]
    [project] = rows(sessions.db_path, "SELECT path FROM projects WHERE id = ?", (session["project_id"],))
    assert Path(project["path"]) == sessions.project.resolve()


def test_salient_observations_are_promoted_to_the_project_tier(sessions: Sessions) -> None:
    salient = rows(sessions.db_path, "SELECT tier, content FROM memories WHERE session_id = ? AND source = 'capture' "
                                     "AND salience > 0.7", (sessions.first_id,))
    assert salient, "the failing Bash call should have produced a salient observation" + sessions.hook_log()
    assert {m["tier"] for m in salient} == {"project"}, str(salient) + sessions.hook_log()


def test_the_next_session_receives_the_injected_context(sessions: Sessions) -> None:
    assert sessions.second_requests, "session 2 sent no request to the model"
    sent = json.dumps(sessions.second_requests[0]["messages"])
    assert "SessionStart hook additional context" in sent, sessions.hook_log()
    assert "greeting.py" in sent


def test_the_model_can_search_memory_through_the_plugin_mcp_server(sessions: Sessions) -> None:
    last = sessions.second_requests[-1]
    assert SEARCH_TOOL in offered_tools(last), "the plugin's MCP server never connected"
    result = tool_result(last, "toolu_search")
    assert not result.get("is_error"), result
    assert "greeting.py" in json.dumps(result["content"])


def test_claude_mcp_list_shows_the_memory_server_connected(sessions: Sessions) -> None:
    listing = sessions.cc.run("mcp", "list", cwd=sessions.project).stdout
    [line] = [line for line in listing.splitlines() if line.startswith("plugin:ccmemory:memory:")]
    assert "Connected" in line, listing
