"""The plugin's files: consistent with each other and the package, and accepted by `claude plugin validate --strict`."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest

import ccmemory
from testing.claude_code import claude_or_skip, ClaudeCode, LATEST_VERSION, VERSIONS

ROOT = Path(__file__).resolve().parents[1]
EVENTS = {"SessionStart", "PostToolUse", "PostToolUseFailure", "Stop", "SessionEnd"}


def load(relative: str) -> dict:
    return json.loads((ROOT / relative).read_text())


def test_plugin_marketplace_and_package_agree() -> None:
    plugin = load(".claude-plugin/plugin.json")
    marketplace = load(".claude-plugin/marketplace.json")
    with open(ROOT / "pyproject.toml", "rb") as fh:
        project = tomllib.load(fh)["project"]
    assert plugin["name"] == project["name"] == "ccmemory"
    assert plugin["version"] == project["version"] == ccmemory.__version__
    assert [(p["name"], p["source"]) for p in marketplace["plugins"]] == [("ccmemory", "./")]


def test_mcp_server_env_never_overrides_what_claude_code_exports() -> None:
    """``"env": {"CLAUDE_PLUGIN_DATA": "${CLAUDE_PLUGIN_DATA}"}`` hands the server the literal placeholder.

    The one exception: plugin options, which Claude Code exports to hooks only, passed under the same
    names (``CLAUDE_PLUGIN_OPTION_<KEY>`` = ``${user_config.<key>}``) so the server reads them like hooks.
    """
    for name, server in load(".mcp.json")["mcpServers"].items():
        for key, value in server.get("env", {}).items():
            option = key.removeprefix("CLAUDE_PLUGIN_OPTION_")
            assert not key.startswith("CLAUDE_") or value == f"${{user_config.{option.lower()}}}", (name, key)
            assert "${CLAUDE_PLUGIN_DATA}" not in value, (name, key)


def test_every_hook_runs_an_existing_script_through_python() -> None:
    hooks = load(load(".claude-plugin/plugin.json")["hooks"])["hooks"]
    assert set(hooks) == EVENTS
    for event, groups in hooks.items():
        for group in groups:
            for handler in group["hooks"]:
                scripts = set(re.findall(r'"\$\{CLAUDE_PLUGIN_ROOT\}/([^"]+)"', handler["command"]))
                assert len(scripts) == 1, handler
                [script] = scripts
                assert (ROOT / script).is_file(), f"{event} runs {script}, which does not exist"
                assert handler["command"].startswith("python3 "), handler


def test_the_mcp_server_starts_through_the_stdlib_launcher() -> None:
    server = load(".mcp.json")["mcpServers"]["memory"]
    assert server["command"] == "python3"
    assert server["args"] == ["-I", "${CLAUDE_PLUGIN_ROOT}/scripts/mcp_launcher.py"]  # no PYTHON* variable
    launcher = (ROOT / "scripts/mcp_launcher.py").read_text()
    imports = set(re.findall(r"^(?:from|import) (\w+)", launcher, re.MULTILINE))
    assert imports <= {"__future__", "hashlib", "json", "os", "shutil", "subprocess", "sys", "time", "pathlib",
                       "ccmemory", "tomllib", "types"}


@pytest.fixture(scope="module", params=VERSIONS)
def claude(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> ClaudeCode:
    """The oldest supported Claude Code and the latest."""
    return ClaudeCode(claude_or_skip(request.param), tmp_path_factory.mktemp("claude-validate"))


@pytest.mark.parametrize("target", [".", ".claude-plugin/plugin.json"], ids=["marketplace", "plugin"])
def test_claude_plugin_validate_strict_passes(claude: ClaudeCode, target: str) -> None:
    result = claude.run("plugin", "validate", "--strict", target, cwd=ROOT, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Validation passed" in result.stdout


def test_claude_finds_every_part_of_the_plugin(claude: ClaudeCode) -> None:
    if claude.binary != claude_or_skip(LATEST_VERSION):
        pytest.skip("`claude plugin validate --json` came after the oldest supported release")
    result = claude.run("plugin", "validate", "--strict", "--json", ".claude-plugin/plugin.json", cwd=ROOT)
    report = json.loads(result.stdout)
    assert report["manifest"]["errors"] == [] and report["manifest"]["warnings"] == []
    provides = report["provides"]
    assert sorted(h["event"] for h in provides["hooks"]) == sorted(EVENTS)
    assert [(s["name"], s["type"]) for s in provides["mcpServers"]] == [("memory", "stdio")]
    assert {f"ccmemory:{name}" for name in ("memory-search", "remember", "recall", "forget", "memory-status")} <= set(
        provides["skills"])


def test_validate_fails_on_a_broken_manifest(claude: ClaudeCode, tmp_path: Path) -> None:
    """The check above has teeth: a keywords string is a load error."""
    broken = tmp_path / ".claude-plugin"
    broken.mkdir()
    (broken / "plugin.json").write_text(json.dumps({"name": "ccmemory", "keywords": "memory"}))
    result = claude.run("plugin", "validate", "--strict", str(broken / "plugin.json"), cwd=tmp_path, check=False)
    assert result.returncode == 1
