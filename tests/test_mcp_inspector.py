"""The MCP Inspector CLI (a client we did not write) against the server: tools/list and one tools/call.

The Inspector comes from ``tests/install_inspector.sh`` (npm); without it the
tests skip and say how to get it. It passes the server only the variables given
with ``-e``, so the data dir and the project are always set explicitly.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ccmemory import memories
from testing.repo import SOURCE
from testing.env import isolated_env

PREFIX = Path(os.environ.get("CCMEMORY_INSPECTOR_PREFIX") or Path.home() / ".cache" / "ccmemory-test" / "inspector")
INSPECTOR = PREFIX / "node_modules" / ".bin" / "mcp-inspector"


def inspector(home: Path, project_dir: Path, tmp_path: Path, *arguments: str) -> subprocess.CompletedProcess:
    if not os.access(INSPECTOR, os.X_OK):
        pytest.skip(f"the MCP Inspector is not installed at {INSPECTOR}: run `bash tests/install_inspector.sh` (npm)")
    command = [str(INSPECTOR), "--cli", "-e", f"CCMEMORY_HOME={home}", "-e", f"PYTHONPATH={SOURCE}",
               "-e", f"CLAUDE_PROJECT_DIR={project_dir}", "--cwd", str(project_dir),
               sys.executable, "-m", "ccmemory.mcp.server", *arguments]
    env = isolated_env(None, MCP_CATALOG_PATH=str(tmp_path / "inspector-catalog.json"))
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)


def test_inspector_lists_the_tools_with_portable_schemas(home: Path, project_dir: Path, tmp_path: Path) -> None:
    result = inspector(home, project_dir, tmp_path, "--method", "tools/list", "--strict")
    assert result.returncode == 0, f"stdout: {result.stdout}\nstderr: {result.stderr}"
    names = [tool["name"] for tool in json.loads(result.stdout)["tools"]]
    assert {"memory_search", "memory_get", "memory_list", "memory_add", "docs_ingest"} <= set(names)


def test_inspector_calls_a_tool(home: Path, project_dir: Path, tmp_path: Path, db, project) -> None:
    result = inspector(home, project_dir, tmp_path, "--method", "tools/call", "--tool-name", "memory_add",
                       "--tool-arg", "content=The Inspector can add memories", "--tool-arg", "importance=0.7")
    assert result.returncode == 0, f"stdout: {result.stdout}\nstderr: {result.stderr}"
    answer = json.loads(result.stdout)
    assert answer["isError"] is False and answer["content"][0]["text"].startswith("Memory created: ")
    stored = memories.list_memories(db, project_id=project)
    assert [m.content for m in stored] == ["The Inspector can add memories"]
    assert stored[0].importance == pytest.approx(0.7)
