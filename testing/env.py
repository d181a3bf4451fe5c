"""The one environment builder for every child process a test starts.

A child gets the test run's environment (its throwaway HOME, see ``home_guard``) minus every
variable that would change what ccmemory does: ccmemory's own (``CCMEMORY_*``), Claude Code's
(``CLAUDE*``), Python's (``PYTHON*``) and the XDG base directories. A developer who runs pytest
inside Claude Code (``CLAUDE_PROJECT_DIR``, ``CLAUDECODE``), with ``PYTHONPATH`` set or with
``XDG_DATA_HOME`` pointing at their real memory then starts the same children as CI does. What a
test wants set it passes in: ``CCMEMORY_HOME`` from ``home``, anything else as keywords.
"""

from __future__ import annotations

import os
from pathlib import Path

#: Variables that start with these are dropped: ccmemory's, Claude Code's (``MCP_TIMEOUT``...) and Python's.
DROPPED_PREFIXES = ("CCMEMORY_", "CLAUDE", "MCP_", "PYTHON")
#: The XDG base directories: ccmemory's default data dir and Claude Code's files then follow HOME.
DROPPED = ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME")
#: A commit author, so git works in a throwaway HOME that has no ``~/.gitconfig``.
GIT_IDENTITY = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
                "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}


def isolated_env(home: Path | None, *, user_home: Path | None = None, **extra: str) -> dict[str, str]:
    """The environment of a child process: ``CCMEMORY_HOME=home`` (unset when ``home`` is None, so the
    default data dir under HOME applies), ``HOME=user_home`` when given, then ``extra``."""
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(DROPPED_PREFIXES) and key not in DROPPED}
    env.update(GIT_IDENTITY)
    if home is not None:
        env["CCMEMORY_HOME"] = str(home)
    if user_home is not None:
        env["HOME"] = str(user_home)
    env.update(extra)
    return env


def without_uv(path: str) -> str:
    """``path`` (a PATH value) without the folders holding a ``uv``: the launcher then builds with pip, as on a
    machine without uv."""
    return os.pathsep.join(folder for folder in path.split(os.pathsep) if folder and not (Path(folder) / "uv").exists())


def launcher_env(data: Path, **extra: str) -> dict[str, str]:
    """A session starting the plugin's MCP launcher: no uv on PATH, pip kept off the network."""
    return isolated_env(data, PIP_NO_INDEX="1", PATH=without_uv(os.environ.get("PATH", "")), **extra)
