"""``bin/ccmemory``: the CLI of an installed plugin runs on the MCP server's runtime, found where the launcher keeps it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from testing.repo import REPO_ROOT
from testing.runtime import fake_ready_runtime
from testing.env import isolated_env

BIN = REPO_ROOT / "bin" / "ccmemory"

pytestmark = pytest.mark.skipif(os.name == "nt", reason="bin/ccmemory.cmd is the Windows entry point")


def run_bin(env: dict[str, str], *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def plain_env(tmp_path: Path) -> dict[str, str]:
    """A shell as Claude's Bash tool has it: no plugin variables, no override of the runtime."""
    return isolated_env(tmp_path / "data", user_home=tmp_path / "home")


def test_the_cli_runs_on_the_runtime_the_mcp_launcher_built(tmp_path, project_dir):
    log = tmp_path / "runtime-uses.log"
    fake_ready_runtime(tmp_path / "home" / ".claude" / "plugins" / "data" / "ccmemory-ccmemory", log)
    env = plain_env(tmp_path)
    added = run_bin(env, "add", "Deploys go out on Fridays", "--json", cwd=project_dir)
    assert added.returncode == 0, added.stderr
    memory = json.loads(added.stdout)
    found = run_bin(env, "search", "Fridays", "--mode", "keyword", cwd=project_dir)
    assert memory["id"][:8] in found.stdout
    assert log.read_text().splitlines() == ["-P -m ccmemory add Deploys go out on Fridays --json",
                                            "-P -m ccmemory search Fridays --mode keyword"]


def test_claude_config_dir_is_honoured_and_an_override_wins(tmp_path, project_dir):
    log = tmp_path / "runtime-uses.log"
    fake_ready_runtime(tmp_path / "elsewhere" / "plugins" / "data" / "ccmemory-market", log)
    env = {**plain_env(tmp_path), "CLAUDE_CONFIG_DIR": str(tmp_path / "elsewhere")}
    assert run_bin(env, "--version", cwd=project_dir).returncode == 0
    assert log.read_text().strip() == "-P -m ccmemory --version"
    import sys

    direct = run_bin({**env, "CCMEMORY_PYTHON": sys.executable}, "--version", cwd=project_dir)
    assert direct.returncode == 0 and "ccmemory" in direct.stdout
    assert log.read_text().count("\n") == 1


def test_the_windows_entry_point_calls_the_same_script():
    text = (REPO_ROOT / "bin" / "ccmemory.cmd").read_text()
    assert '"%~dp0ccmemory"' in text and "python" in text
    assert "set NoDefaultCurrentDirectoryInExePath=1" in text  # cmd would run a project's python3.exe first
