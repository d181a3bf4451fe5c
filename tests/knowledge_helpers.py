"""Fixture knowledge repositories built in temp directories, and the real CLI and git run on them."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

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


def env_for(home: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "CCMEMORY_HOME": str(home), "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com", **extra}
    env.pop("CLAUDE_PROJECT_DIR", None)
    return env


def ccmemory(home: Path, root: Path, *args: str, stdin: str = "", **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ccmemory", *args], cwd=root, env=env_for(home, **extra),
                          input=stdin, capture_output=True, text=True, timeout=180)


def on_terminal(home: Path, root: Path, *args: str, answer: str | None = None, wait_for: bytes = b"",
                program: list[str] | None = None, **extra: str) -> tuple[int, str]:
    """Run the CLI (``program``, default ``python -m ccmemory``) with a pseudo-terminal as stdin/stdout/stderr;
    type ``answer`` once ``wait_for`` shows."""
    leader, follower = pty.openpty()
    process = subprocess.Popen([*(program or [sys.executable, "-m", "ccmemory"]), *args], cwd=root,
                               env=env_for(home, **extra),
                               stdin=follower, stdout=follower, stderr=follower, close_fds=True)
    os.close(follower)
    output = b""
    answered = answer is None
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(leader, 4096)
            except OSError:
                break
            if not chunk:
                break
            output += chunk
            if not answered and wait_for in output:
                os.write(leader, answer.encode() + b"\n")
                answered = True
        elif process.poll() is not None:
            break
    if process.poll() is None:
        process.kill()
    process.wait(timeout=30)
    os.close(leader)
    return process.returncode, output.decode(errors="replace")


def git(home: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, env=env_for(home), capture_output=True, text=True, timeout=300)
