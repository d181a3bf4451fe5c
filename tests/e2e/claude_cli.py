"""Run the real Claude Code CLI hermetically: a throwaway HOME, a dummy key, loopback traffic only.

The binary comes from ``CCMEMORY_CLAUDE_BIN``, else from the npm prefix that
``tests/e2e/install_claude.sh`` fills (``CCMEMORY_CLAUDE_PREFIX``, default
``~/.cache/ccmemory-test/claude-code``). Tests skip, saying why, when it is missing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
MARKETPLACE = "ccmemory"
PLUGIN_ID = f"ccmemory@{MARKETPLACE}"
INSTALL_HINT = "run `bash tests/e2e/install_claude.sh` (npm) or set CCMEMORY_CLAUDE_BIN"
#: What a fresh clone lacks. Claude Code copies a directory marketplace whole, ignored files included.
NOT_IN_A_CLONE = (".git", ".venv", "venv", "__pycache__", "*.egg-info", ".pytest_cache", ".hypothesis", "build", "dist")


#: The oldest Claude Code ccmemory supports; ``install_claude_oldest.sh`` puts it beside the latest.
OLDEST_VERSION = "2.1.197"
OLDEST_PREFIX = Path.home() / ".cache" / "ccmemory-test" / f"claude-code-{OLDEST_VERSION}"


def find_claude(prefix: Path | None = None) -> Path | None:
    explicit = os.environ.get("CCMEMORY_CLAUDE_BIN")
    if explicit and prefix is None:
        return Path(explicit) if Path(explicit).is_file() else None
    prefix = prefix or Path(os.environ.get("CCMEMORY_CLAUDE_PREFIX")
                            or Path.home() / ".cache" / "ccmemory-test" / "claude-code")
    for candidate in sorted(prefix.glob("node_modules/@anthropic-ai/claude-code-*/claude")):
        if os.access(candidate, os.X_OK):
            return candidate
    return None


def claude_or_skip() -> Path:
    binary = find_claude()
    if binary is None:
        pytest.skip(f"the Claude Code CLI is not installed: {INSTALL_HINT}")
    return binary


def oldest_claude_or_skip() -> Path:
    """Claude Code 2.1.197, the minimum version (prefix ``CCMEMORY_CLAUDE_OLDEST_PREFIX``)."""
    binary = find_claude(Path(os.environ.get("CCMEMORY_CLAUDE_OLDEST_PREFIX") or OLDEST_PREFIX))
    if binary is None:
        pytest.skip(f"Claude Code {OLDEST_VERSION} is not installed: run `bash tests/e2e/install_claude_oldest.sh`")
    return binary


class ClaudeCode:
    """One throwaway user of Claude Code: its HOME, its data dir, its environment."""

    def __init__(self, binary: Path, root: Path, api_url: str = "http://127.0.0.1:9") -> None:
        self.binary = binary
        self.home = root / "home"
        self.data = root / "ccmemory-data"
        self.bin_dir = root / "bin"
        for directory in (self.home, self.data, self.bin_dir):
            directory.mkdir(parents=True, exist_ok=True)
        claude_link = self.bin_dir / "claude"
        if not claude_link.exists():
            claude_link.symlink_to(binary)
        self.api_url = api_url

    def env(self) -> dict[str, str]:
        keep = {
            key: value for key, value in os.environ.items()
            if not key.startswith(("ANTHROPIC_", "CLAUDE", "MCP_", "CCMEMORY_", "OTEL_"))
            and key.upper() not in {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"}
        }
        keep.update({
            "HOME": str(self.home),
            "PATH": os.pathsep.join([str(self.bin_dir), os.environ.get("PATH", "")]),
            "ANTHROPIC_API_KEY": "sk-ant-fake-key-for-tests",
            "ANTHROPIC_BASE_URL": self.api_url,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            # Anything that is not the loopback fake goes to a closed loopback port and fails fast.
            "HTTPS_PROXY": "http://127.0.0.1:9",
            "HTTP_PROXY": "http://127.0.0.1:9",
            "NO_PROXY": "127.0.0.1,localhost",
            "CCMEMORY_HOME": str(self.data),
            # The test's interpreter has ccmemory's dependencies: the MCP launcher builds no venv.
            "CCMEMORY_PYTHON": sys.executable,
        })
        return keep

    def run(self, *args: str, cwd: Path, timeout: float = 120, check: bool = True,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        result = subprocess.run(
            [str(self.binary), *args], cwd=cwd, env={**self.env(), **(env or {})}, stdin=subprocess.DEVNULL,
            capture_output=True, text=True, timeout=timeout,
        )
        if check and result.returncode != 0:
            raise AssertionError(
                f"claude {' '.join(args)} exited {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"
            )
        return result

    def install_plugin(self, cwd: Path) -> Path:
        """Install the plugin as a user would from a clone of this repository; return the clone."""
        clone = self.home.parent / "ccmemory-clone"
        shutil.copytree(REPO_ROOT, clone, ignore=shutil.ignore_patterns(*NOT_IN_A_CLONE))
        self.run("plugin", "marketplace", "add", str(clone), cwd=cwd)
        self.run("plugin", "install", PLUGIN_ID, cwd=cwd)
        return clone
