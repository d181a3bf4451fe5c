"""Run the real Claude Code CLI hermetically: a throwaway HOME, a dummy key, loopback traffic only.

The binaries come from the npm prefix that ``tests/e2e/install_claude.sh`` fills
(``CCMEMORY_CLAUDE_PREFIX``, default ``~/.cache/ccmemory-test``): one per version in
:data:`VERSIONS`, the oldest ccmemory supports and the latest it was verified on.
``CCMEMORY_CLAUDE_BIN`` replaces the latest. Tests skip, saying why, when one is missing.

Two kinds of user: the default one runs the plugin with a test data dir and the test's
interpreter (``CCMEMORY_HOME``, ``CCMEMORY_PYTHON``) for fast tests; ``as_installed=True``
sets none of our variables and has no uv on PATH, exactly as a user who followed the README.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ccmemory.compat import MIN_CLAUDE_CODE
from testing.env import isolated_env, without_uv
from testing.repo import REPO_ROOT

PROXIES = {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"}
MARKETPLACE = "ccmemory"
PLUGIN_ID = f"ccmemory@{MARKETPLACE}"
INSTALL_HINT = "run `bash tests/e2e/install_claude.sh` (npm) or set CCMEMORY_CLAUDE_BIN"
MINIMUM_VERSION = ".".join(map(str, MIN_CLAUDE_CODE))
LATEST_VERSION = "2.1.330"
VERSIONS = (MINIMUM_VERSION, LATEST_VERSION)
#: What a fresh clone lacks. Claude Code copies a directory marketplace whole, ignored files included.
#: The commands of the README's "Use it in Claude Code" that :meth:`ClaudeCode.install_from_git_clone` runs.
README_INSTALL = (
    'git clone "$PWD" ~/.local/share/ccmemory-plugin',
    "claude plugin marketplace add ~/.local/share/ccmemory-plugin",
    "claude plugin install ccmemory@ccmemory",
)
NOT_IN_A_CLONE = (".git", ".venv", "venv", "__pycache__", "*.egg-info", ".pytest_cache", ".hypothesis", "build", "dist")


def find_claude(version: str = LATEST_VERSION) -> Path | None:
    explicit = os.environ.get("CCMEMORY_CLAUDE_BIN")
    if explicit and version == LATEST_VERSION:
        return Path(explicit) if Path(explicit).is_file() else None
    prefix = Path(os.environ.get("CCMEMORY_CLAUDE_PREFIX") or Path.home() / ".cache" / "ccmemory-test")
    for candidate in sorted(prefix.glob(f"claude-code-{version}/node_modules/@anthropic-ai/claude-code-*/claude")):
        if os.access(candidate, os.X_OK):
            return candidate
    return None


def claude_or_skip(version: str = LATEST_VERSION) -> Path:
    binary = find_claude(version)
    if binary is None:
        pytest.skip(f"the Claude Code CLI {version} is not installed: {INSTALL_HINT}")
    return binary


class ClaudeCode:
    """One throwaway user of Claude Code: its HOME, its data dir, its environment."""

    def __init__(self, binary: Path, root: Path, api_url: str = "http://127.0.0.1:9", *,
                 as_installed: bool = False) -> None:
        self.binary = binary
        self.as_installed = as_installed
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
        """:func:`~testing.env.isolated_env` with this user's HOME, a dummy key and traffic only to loopback."""
        keep = {key: value for key, value in isolated_env(None, user_home=self.home).items()
                if not key.startswith(("ANTHROPIC_", "OTEL_")) and key.upper() not in PROXIES}
        keep.update({
            "PATH": os.pathsep.join([str(self.bin_dir), os.environ.get("PATH", "")]),
            "ANTHROPIC_API_KEY": "sk-ant-fake-key-for-tests",
            "ANTHROPIC_BASE_URL": self.api_url,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            # Anything that is not the loopback fake goes to a closed loopback port and fails fast.
            "HTTPS_PROXY": "http://127.0.0.1:9",
            "HTTP_PROXY": "http://127.0.0.1:9",
            "NO_PROXY": "127.0.0.1,localhost",
        })
        if self.as_installed:
            # A user's plugin install downloads the server's runtime from the package index.
            for proxy in ("HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY"):
                keep.pop(proxy, None)
            keep["PATH"] = os.pathsep.join([str(self.bin_dir), without_uv(os.environ.get("PATH", ""))])
        else:
            keep.update({
                "CCMEMORY_HOME": str(self.data),
                # The test's interpreter has ccmemory's dependencies: the MCP launcher builds no venv.
                "CCMEMORY_PYTHON": sys.executable,
            })
        return keep

    @property
    def plugin_data(self) -> Path:
        """The plugin's data dir, where the launcher builds the server's runtime."""
        return self.home / ".claude" / "plugins" / "data" / f"ccmemory-{MARKETPLACE}"

    @property
    def user_data(self) -> Path:
        """Where a user's memory lives: the per-user data dir (Linux), or the test data dir."""
        return self.home / ".local" / "share" / "ccmemory" if self.as_installed else self.data

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

    def install_from_git_clone(self, cwd: Path) -> Path:
        """The README's steps (:data:`README_INSTALL`): a clean ``git clone`` kept in the user's home, added as a
        marketplace, the plugin installed from it."""
        clone = self.home / ".local" / "share" / "ccmemory-plugin"
        subprocess.run(["git", "clone", "--quiet", str(REPO_ROOT), str(clone)], check=True, capture_output=True,
                       timeout=300, cwd=REPO_ROOT)
        self.run("plugin", "marketplace", "add", str(clone), cwd=cwd)
        self.run("plugin", "install", PLUGIN_ID, cwd=cwd)
        return clone

    def install_plugin(self, cwd: Path) -> Path:
        """Install the plugin as a user would from a clone of this repository; return the clone."""
        clone = self.home.parent / "ccmemory-clone"
        shutil.copytree(REPO_ROOT, clone, ignore=shutil.ignore_patterns(*NOT_IN_A_CLONE))
        self.run("plugin", "marketplace", "add", str(clone), cwd=cwd)
        self.run("plugin", "install", PLUGIN_ID, cwd=cwd)
        return clone


def store_rows(db_path: Path, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    """Rows of a store a real session wrote, read-only (the session's detached hooks may still be writing)."""
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=10)
    db.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in db.execute(sql, params)]
    finally:
        db.close()
