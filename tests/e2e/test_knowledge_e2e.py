"""The knowledge tier inside the real Claude Code CLI: the skills `ccmemory init` writes, and a knowledge hit.

A project is set up the way seed 001 describes: ``ccmemory init`` (project skills,
``.claude/knowledge/``), a knowledge file, ``ccmemory index``. The plugin is installed from
a clone; no ccmemory variable points the CLI, the hooks or the server anywhere (both find
the per-user data dir under the throwaway HOME). The scripted model invokes the project's
``memory-query`` skill, then asks ``memory_search`` the question in other words: Claude Code
must list the three skills ``init`` wrote (so their front matter is valid to the real client),
launch the skill, and the search must answer with the section, marked ``file.md#anchor``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from testing.claude_code import claude_or_skip, ClaudeCode, MINIMUM_VERSION
from testing.fake_anthropic import Block, FakeAnthropic, offered_tools, text, tool_result, tool_results, tool_use

from testing.runtime import fake_ready_runtime

SEARCH_TOOL = "mcp__plugin_ccmemory_memory__memory_search"
QUESTION = "how are incoming JWTs checked on each request"
KNOWLEDGE = """# Authentication

## JWT flow
### Token validation
<!-- keywords: auth, jwt -->
Every request's bearer token is verified by the auth middleware against the RS256 public key
from the identity provider; an expired or tampered token gets a 401.

### Refresh
Refresh tokens rotate on every use and are revoked after 30 days.
"""
MAX_WAITS_FOR_MCP = 40
#: No ccmemory override: the CLI, the hooks and the MCP server all use the per-user data dir under HOME.
NO_OVERRIDES = {"CCMEMORY_HOME": "", "CCMEMORY_PYTHON": "", "XDG_DATA_HOME": ""}


def script(body: dict[str, Any]) -> list[Block]:
    """The project skill first; then memory_search once the server is offered (short Bash waits until then)."""
    results = {r["tool_use_id"]: r for r in tool_results(body)}
    if "toolu_skill" not in results:
        return [dict(tool_use("Skill", skill="memory-query", args=QUESTION), id="toolu_skill")]
    if "toolu_search" not in results:
        if SEARCH_TOOL in offered_tools(body) or len(results) > MAX_WAITS_FOR_MCP:
            return [dict(tool_use(SEARCH_TOOL, query=QUESTION), id="toolu_search")]
        return [tool_use("Bash", command="sleep 0.25", description="Wait for the memory server")]
    return [text("Based on project knowledge: the auth middleware verifies each token.")]


def cli(cc: ClaudeCode, project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "ccmemory", *args], cwd=project, env={**cc.env(), **NO_OVERRIDES},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"ccmemory {' '.join(args)}: {done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module", params=["latest", "2.1.197"])
def session(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    binary = claude_or_skip() if request.param == "latest" else claude_or_skip(MINIMUM_VERSION)
    root = tmp_path_factory.mktemp(f"knowledge-{request.param}")
    project = root / "project"
    project.mkdir()
    with FakeAnthropic(script) as fake:
        cc = ClaudeCode(binary, root, fake.url)
        subprocess.run(["git", "init", "-q"], cwd=project, check=True, env=cc.env())
        init = cli(cc, project, "init")
        (project / ".claude" / "knowledge" / "architecture" / "auth.md").write_text(KNOWLEDGE, encoding="utf-8")
        index = cli(cc, project, "index")
        clone = cc.install_plugin(project)
        fake_ready_runtime(cc.plugin_data, root / "runtime-uses.log", clone)
        cc.run("-p", "How does authentication work here?", "--allowedTools", f"Bash Skill {SEARCH_TOOL}",
               "--output-format", "json", cwd=project, env={**NO_OVERRIDES, "ENABLE_TOOL_SEARCH": "false"})
        requests = fake.agent_requests()
    return {"requests": requests, "init": init.stdout, "index": index.stdout, "cc": cc}


def result_of(session: dict[str, Any], tool_use_id: str) -> dict[str, Any]:
    return tool_result(session["requests"][-1], tool_use_id)


def test_claude_code_lists_the_skills_init_wrote_and_launches_one(session):
    assert "[x] .claude/skills/memory-query/SKILL.md" in session["init"]
    listing = json.dumps(session["requests"][0])
    for skill in ("memory-query", "memory-save", "memory-discover"):
        assert skill in listing, f"Claude Code does not list the project skill {skill}"
    launched = json.dumps(result_of(session, "toolu_skill"))
    assert "Launching skill: memory-query" in launched, launched
    expanded = json.dumps(session["requests"][-1]["messages"])
    assert "memory_search" in expanded  # the skill's instructions name our tool


def test_memory_search_through_claude_code_answers_with_the_knowledge_section(session):
    assert "Indexed 2 file(s)" in session["index"], session["index"]  # gotchas.md from init, and auth.md
    found = result_of(session, "toolu_search")
    assert not found.get("is_error"), found
    answer = json.dumps(found["content"])
    assert "architecture/auth.md#token-validation" in answer, answer
    assert "keyword matches only" not in answer
    data = session["cc"].home / ".local" / "share" / "ccmemory"
    assert (data / "ccmemory.db").is_file()  # the CLI's index and the server's search: one database
    assert not (session["cc"].data / "ccmemory.db").exists()  # the test's own data dir was never used
