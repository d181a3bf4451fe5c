"""Fixture knowledge repositories built in temp directories, and git run on them."""

from __future__ import annotations

import subprocess
from pathlib import Path

from testing.env import isolated_env

GOTCHAS = """# Gotchas

## Time
### Dates are stored in UTC
<!-- keywords: time, UTC -->
All timestamps are stored in UTC and converted at the edges.

### Cron runs in server time
The scheduler uses the server's local clock.
"""

AUTH = """# Authentication
## JWT flow
### Token validation
JWT tokens are validated on each request by the auth middleware with the RS256 public key.
### Refresh
Refresh tokens rotate on every use.
"""


def write_files(root: Path, files: dict[str, str | bytes]) -> Path:
    """Write ``files`` (relative path -> text or bytes) under ``root``; returns ``root``."""
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


def make_repo(root: Path, files: dict[str, str | bytes]) -> Path:
    """A git project whose ``.claude/knowledge`` holds ``files``; returns the knowledge folder."""
    (root / ".git").mkdir(parents=True, exist_ok=True)
    knowledge = root / ".claude" / "knowledge"
    knowledge.mkdir(parents=True, exist_ok=True)
    return write_files(knowledge, files)


def git(home: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, env=isolated_env(home), capture_output=True, text=True, timeout=300)
