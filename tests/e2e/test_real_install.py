"""The proof: ccmemory installed and used exactly as the README tells a user, in the real Claude Code CLI.

A throwaway HOME; a fresh ``git clone`` of this repository; ``claude plugin marketplace add`` and
``claude plugin install`` as the README says; **no ccmemory variable and no interpreter override
anywhere**, no uv on PATH, so the MCP server's runtime is built cold from PyPI by the plugin itself.
A fake Messages API on 127.0.0.1 scripts the model. Session 1 starts right after the install: the
memory tools must be offered at once, and the model runs a failing test, fixes the code with an
Edit and runs the test again. Session 2 comes once the runtime is built: its model asks
``memory_search``, in other words, how the failure was fixed, and must get session 1's fix back.
Afterwards there is exactly one database, in the user's data dir, and the project holds nothing
of ours. Runs on the oldest supported Claude Code and on the latest.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from testing.claude_code import claude_or_skip, ClaudeCode, VERSIONS
from testing.fake_anthropic import Block, FakeAnthropic, text, tool_results, tool_use

SEARCH_TOOL = "mcp__plugin_ccmemory_memory__memory_search"
BUILD_SECONDS = 900
MAX_WAITS = 60
MAX_SEARCHES = 5
FIRST_PROMPT = "The test for add() in calc.py fails; make it pass."
SECOND_PROMPT = "Remind me what we changed in the arithmetic helper last time."
PARAPHRASE = "how was the broken sum of two numbers repaired"
BUGGY = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
TEST = "from calc import add\n\nassert add(2, 3) == 5, f'add(2, 3) returned {add(2, 3)}'\nprint('1 passed')\n"


@dataclass
class Install:
    cc: ClaudeCode
    clone: Path
    project: Path
    first_requests: list[dict[str, Any]]
    second_requests: list[dict[str, Any]]
    build: dict[str, Any]


def offered(body: dict[str, Any]) -> bool:
    """The memory tools are in the request, directly or as deferred tools that ToolSearch can load."""
    return SEARCH_TOOL in json.dumps(body)


def callable_now(body: dict[str, Any]) -> bool:
    return any(tool.get("name") == SEARCH_TOOL for tool in body.get("tools") or [])


def first_session(project: Path):
    """Wait (bounded) until the memory tools are offered, then fail a test, read and fix the code, pass the test."""
    steps = [
        tool_use("Bash", command="python3 -B test_calc.py", description="Run the test"),
        tool_use("Read", file_path=str(project / "calc.py")),
        tool_use("Edit", file_path=str(project / "calc.py"), old_string="return a - b", new_string="return a + b"),
        tool_use("Bash", command="python3 -B test_calc.py", description="Run the test again"),
    ]

    def script(body: dict[str, Any]) -> list[Block]:
        done = [r for r in tool_results(body) if r["tool_use_id"].startswith("toolu_step")]
        waits = len(tool_results(body)) - len(done)
        if not done and not offered(body) and waits < MAX_WAITS:
            return [tool_use("Bash", command="sleep 0.5", description="Wait for the memory server")]
        if len(done) < len(steps):
            return [dict(steps[len(done)], id=f"toolu_step{len(done)}")]
        return [text("Fixed: add() subtracted instead of adding; the test passes now.")]

    return script


def searches(body: dict[str, Any]) -> list[Block]:
    return [r for r in tool_results(body) if r["tool_use_id"].startswith("toolu_search")]


def second_session(body: dict[str, Any]) -> list[Block]:
    """Search the memory with a paraphrase once the tool can be called (loading it via ToolSearch if deferred).

    Like a model that reads the tool's answer: when it says the model is still loading and to search
    again in a few seconds, wait a little and search again (bounded).
    """
    results = tool_results(body)
    done = searches(body)
    again = bool(done) and "search again in a few seconds" in json.dumps(done[-1]["content"])
    if (done and not again) or len(done) >= MAX_SEARCHES or len(results) > MAX_WAITS:
        return [text("Last time we fixed add() in calc.py.")]
    if again and results[-1]["tool_use_id"].startswith("toolu_search"):
        return [tool_use("Bash", command="sleep 2", description="Give the memory server a moment")]
    if callable_now(body):
        return [dict(tool_use(SEARCH_TOOL, query=PARAPHRASE), id=f"toolu_search{len(done)}")]
    if offered(body) and any(tool.get("name") == "ToolSearch" for tool in body.get("tools") or []):
        return [tool_use("ToolSearch", query=f"select:{SEARCH_TOOL}", max_results=1)]
    return [tool_use("Bash", command="sleep 0.5", description="Wait for the memory server")]


def wait_for_runtime(cc: ClaudeCode) -> dict[str, Any]:
    """The plugin's own build of the server runtime, then its embedding of what session 1 captured."""
    deadline = time.monotonic() + BUILD_SECONDS
    log = cc.plugin_data / "logs" / "runtime-install.log"
    while True:
        ready = sorted(cc.plugin_data.glob("venv-*/ccmemory-ready.json"))
        failed = sorted(cc.plugin_data.glob("venv-*.failed"))
        assert not failed, failed[0].read_text() + (log.read_text() if log.exists() else "")
        if ready and not list(cc.plugin_data.glob("*.lock")) and pending(cc.user_data / "ccmemory.db") == 0:
            return json.loads(ready[0].read_text())
        assert time.monotonic() < deadline, log.read_text() if log.exists() else "no install log"
        time.sleep(1)


def pending(db_path: Path) -> int:
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=10)
    try:
        return db.execute("SELECT count(*) FROM memories WHERE needs_embedding = 1 AND is_deleted = 0").fetchone()[0]
    finally:
        db.close()


@pytest.fixture(scope="module", params=VERSIONS)
def install(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Install:
    binary = claude_or_skip(request.param)
    root = tmp_path_factory.mktemp(f"real-install-{request.param}")
    project = root / "project"
    project.mkdir()
    subprocess.run(["git", "init", "--quiet", str(project)], check=True)
    (project / "calc.py").write_text(BUGGY)
    (project / "test_calc.py").write_text(TEST)
    flags = ("--allowedTools", f"Bash Read Edit ToolSearch {SEARCH_TOOL}", "--output-format", "json")
    with FakeAnthropic(first_session(project)) as fake:
        cc = ClaudeCode(binary, root, fake.url, as_installed=True)
        clone = cc.install_from_git_clone(project)
        cc.run("-p", FIRST_PROMPT, *flags, cwd=project, timeout=300)
        first_requests = fake.agent_requests()
        build = wait_for_runtime(cc)

        fake.script = second_session
        fake.requests.clear()
        cc.run("-p", SECOND_PROMPT, *flags, cwd=project, timeout=300)
        second_requests = fake.agent_requests()
    return Install(cc, clone, project, first_requests, second_requests, build)


def test_the_first_session_is_offered_the_memory_tools(install: Install) -> None:
    assert any(offered(body) for body in install.first_requests), "no request of session 1 offered memory_search"
    assert (install.project / "calc.py").read_text() == FIXED


def test_the_runtime_was_built_by_the_plugin_from_pypi_without_uv_on_path(install: Install) -> None:
    assert install.build["installer"] in {"uv", "pip"}
    root = Path(install.build["plugin_root"]).resolve()
    cache = install.cc.home / ".claude" / "plugins" / "cache"
    assert root == install.clone.resolve() or root.is_relative_to(cache.resolve()), root


def test_the_second_session_finds_the_fix_by_a_paraphrase(install: Install) -> None:
    assert install.second_requests, "session 2 sent no request to the model"
    found = searches(install.second_requests[-1])
    assert found, "the model never got to call memory_search"
    result = found[-1]
    answer = json.dumps(result["content"])
    assert not result.get("is_error"), answer
    assert "calc.py" in answer and "a + b" in answer, answer
    assert "keyword matches only" not in answer, answer


def test_nothing_is_left_unembedded_after_the_sessions_end(install: Install) -> None:
    """The SessionEnd hook starts a detached embedding pass, so the next session's first search has every vector."""
    db_path = install.cc.user_data / "ccmemory.db"
    deadline = time.monotonic() + BUILD_SECONDS
    while pending(db_path):
        assert time.monotonic() < deadline, f"{pending(db_path)} memories are still not embedded"
        time.sleep(1)


def test_exactly_one_database_in_the_user_data_dir_and_nothing_in_the_project(install: Install) -> None:
    runtimes = install.cc.plugin_data.resolve()
    databases = sorted(str(p) for p in install.cc.home.parent.rglob("ccmemory*.db")
                       if not p.resolve().is_relative_to(runtimes))
    assert databases == [str(install.cc.user_data / "ccmemory.db")]
    tracked = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=install.project, capture_output=True,
                             text=True, check=True).stdout.split()
    assert sorted(set(tracked) - {"??", "M", "!!"}) == ["calc.py", "test_calc.py"], tracked
    assert sorted(p.name for p in install.project.iterdir()) == [".git", "calc.py", "test_calc.py"]


def test_the_plugin_cache_holds_no_build_output(install: Install) -> None:
    cache = install.cc.home / ".claude" / "plugins" / "cache"
    heavy = [p for p in cache.rglob("*") if p.name in {".venv", "site-packages"} or p.suffix == ".so"]
    assert heavy == []
