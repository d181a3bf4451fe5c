"""The ``memory`` tool through the real MCP server over stdio, two servers for two projects at once,
and the capture hook leaving the tool's own calls out of memory."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterator

import pytest
from testing.hooks import assert_quiet_success, memories_of, run_hook, tool_call

from testing.mcp import running_server, RunningServer

SESSION = "files-mcp-session"
TOOL_NAME_IN_CLAUDE_CODE = "mcp__plugin_ccmemory_memory__memory"


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunningServer, RunningServer]]:
    root = tmp_path_factory.mktemp("files-mcp")
    first, second = root / "first", root / "second"
    for folder in (first, second):
        (folder / ".git").mkdir(parents=True)
    with running_server(root / "home", first, CLAUDE_CODE_SESSION_ID=SESSION) as one:
        with running_server(root / "home", second) as two:
            yield one, two


def test_the_memory_tool_is_listed_with_its_commands(servers) -> None:
    [tool] = [t for t in servers[0].list_tools() if t.name == "memory"]
    assert tool.input_schema["properties"]["command"]["enum"] == ["view", "create", "str_replace", "insert",
                                                                   "delete", "rename"]
    assert tool.input_schema["required"] == ["command"] and "/memories/user" in tool.description


def test_create_edit_view_through_the_server(servers) -> None:
    one, _ = servers
    answer = one.call("memory", {"command": "create", "path": "/memories/progress.md", "file_text": "- [ ] a\n"})
    assert (answer.text, answer.is_error) == ("File created successfully at: /memories/progress.md", False)
    answer = one.call("memory", {"command": "str_replace", "path": "/memories/progress.md", "old_str": "[ ]",
                                 "new_str": "[x]"})
    assert unquoted(answer.text) == "The memory file has been edited.\n     1\t- [x] a" and not answer.is_error
    answer = one.call("memory", {"command": "view", "path": "/memories/progress.md", "view_range": [1, -1]})
    assert unquoted(answer.text) == "Here's the content of /memories/progress.md with line numbers:\n     1\t- [x] a"


def unquoted(text: str) -> str:
    """An answer without the notice line and the fence lines around the file text it quotes."""
    found = re.fullmatch(r"(.*\n)Text between <ccmemory-data-(\w{16})> and </ccmemory-data-\2> is [^\n]*\n"
                         r"<ccmemory-data-\2>\n(.*)\n</ccmemory-data-\2>(.*)", text, re.S)
    assert found, text
    return found[1] + found[3] + found[4]


def test_errors_are_tool_errors_with_anthropics_text(servers) -> None:
    one, _ = servers
    answer = one.call("memory", {"command": "delete", "path": "/memories/never.md"})
    assert (answer.text, answer.is_error) == ("Error: The path /memories/never.md does not exist", True)
    answer = one.call("memory", {"command": "view", "path": "/memories/..%2f..%2fetc/passwd"})
    assert answer.is_error and "is not allowed: percent-encoded characters are not allowed" in answer.text


def test_two_projects_see_their_own_files_and_share_the_user_scope(servers) -> None:
    one, two = servers
    one.call("memory", {"command": "create", "path": "/memories/only-first.md", "file_text": "first"})
    assert two.call("memory", {"command": "view", "path": "/memories/only-first.md"}).is_error
    assert "only-first" not in two.call("memory", {"command": "view"}).text
    assert not two.call("memory", {"command": "create", "path": "/memories/user/shared.md",
                                   "file_text": "shared by both"}).is_error
    assert "shared by both" in one.call("memory", {"command": "view", "path": "/memories/user/shared.md"}).text


def test_the_audit_log_names_the_session_and_the_channel(servers) -> None:
    one, _ = servers
    db = one.connect()
    try:
        rows = db.rows("SELECT session_id, source, command, ok FROM memory_file_log WHERE path = ?",
                       ("/memories/progress.md",))
    finally:
        db.close()
    assert {(r["session_id"], r["source"]) for r in rows} == {(SESSION, "mcp")}
    assert [r["command"] for r in rows] == ["create", "str_replace", "view"]


def test_capture_skips_the_memory_tools_own_calls(home: Path, project_dir: Path) -> None:
    payload = tool_call("cap1", project_dir, TOOL_NAME_IN_CLAUDE_CODE,
                        {"command": "create", "path": "/memories/x.md", "file_text": "x"},
                        [{"type": "text", "text": "File created successfully at: /memories/x.md"}], "t1")
    assert_quiet_success(run_hook("post_tool_use", payload, home))
    assert memories_of(home, "cap1") == []
