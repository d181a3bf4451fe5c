"""Running the real hook entry scripts as subprocesses, with the payloads Claude Code sends.

Payload shapes follow ``/work/shared/specs/claude-code.md`` §2.1 (captured from
Claude Code 2.1.330). Hooks run under the system ``python3`` when there is one,
as Claude Code would start them, with a fresh ``CCMEMORY_HOME`` (:func:`testing.env.isolated_env`).
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from testing.env import isolated_env
from testing.repo import HOOKS

HOOK_PYTHON = os.environ.get("CCMEMORY_TEST_HOOK_PYTHON") or (
    "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable
)
#: The oldest Python the hook entry script supports (``hooks/run.py``).
OLDEST_VERSION = (3, 9)


def find_python(version: tuple[int, int]) -> str | None:
    """An interpreter of exactly ``version``: ``$CCMEMORY_TEST_OLDEST_PYTHON``, else a pyenv install (under
    ``$PYENV_ROOT`` or the real user's ``~/.pyenv``: the run's HOME is a throwaway one), else ``pythonX.Y`` on
    PATH or in the usual prefixes. Each candidate is asked its version, so a stale shim does not count."""
    name = "python%d.%d" % version
    explicit = os.environ.get("CCMEMORY_TEST_OLDEST_PYTHON")
    roots = [os.environ.get("PYENV_ROOT"), os.path.join(pwd.getpwuid(os.getuid()).pw_dir, ".pyenv")]
    candidates = [explicit] if explicit else []
    for root in filter(None, roots):
        candidates += sorted(str(path) for path in Path(root, "versions").glob("%d.%d.*/bin/%s" % (*version, name)))
    candidates += [shutil.which(name), *(os.path.join(prefix, "bin", name) for prefix in ("/usr/local", "/usr"))]
    for candidate in filter(None, candidates):
        if os.access(candidate, os.X_OK) and _version_of(candidate) == version:
            return candidate
    return None


def _version_of(python: str) -> tuple[int, ...] | None:
    try:
        said = subprocess.run([python, "-c", "import sys; print(*sys.version_info[:2])"], capture_output=True,
                              text=True, timeout=30, env=isolated_env(None))
    except (OSError, subprocess.TimeoutExpired):
        return None
    return tuple(int(part) for part in said.stdout.split()) if said.returncode == 0 else None


OLDEST_PYTHON = find_python(OLDEST_VERSION)


def run_hook(name: str, payload: Any, home: Path, *, raw: bytes | None = None, python: str | None = None,
             cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess:
    """Run ``hooks/run.py <name>`` with ``payload`` (JSON-encoded unless ``raw`` bytes are given) on stdin."""
    data = raw if raw is not None else json.dumps(payload).encode()
    result = subprocess.run(
        [python or HOOK_PYTHON, "-S", str(HOOKS / "run.py"), name], input=data, capture_output=True,
        env=isolated_env(home, **env), cwd=str(cwd) if cwd else None, timeout=60,
    )
    wait_for_background_captures(home)
    return result


def wait_for_background_captures(home: Path, timeout: float = 60) -> None:
    """Capture stores its observation in a detached child after the hook exits: wait for those children."""
    folder = home / "inflight"
    deadline = time.monotonic() + timeout
    while folder.exists() and time.monotonic() < deadline:
        running = [marker for marker in folder.iterdir() if _alive(int(marker.name.rsplit(".", 1)[1]))]
        if not running:
            return
        time.sleep(0.01)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def common(session_id: str, project: Path, event: str, **fields: Any) -> dict[str, Any]:
    payload = {
        "session_id": session_id,
        "transcript_path": str(project / f"{session_id}.jsonl"),
        "cwd": str(project),
        "permission_mode": "default",
        "hook_event_name": event,
    }
    payload.update(fields)
    return payload


def tool_call(session_id: str, project: Path, tool: str, tool_input: dict[str, Any], response: Any,
              tool_use_id: str, *, event: str = "PostToolUse", **fields: Any) -> dict[str, Any]:
    return common(session_id, project, event, prompt_id="prompt-1", effort={"level": "medium"}, tool_name=tool,
                  tool_input=tool_input, tool_response=response, tool_use_id=tool_use_id, duration_ms=12, **fields)


def bash_call(session_id: str, project: Path, command: str, stdout: str, tool_use_id: str,
              stderr: str = "") -> dict[str, Any]:
    return tool_call(session_id, project, "Bash", {"command": command, "description": "Run it"},
                     {"stdout": stdout, "stderr": stderr, "interrupted": False, "isImage": False,
                      "noOutputExpected": False}, tool_use_id)


def rows(home: Path, sql: str, params: tuple = ()) -> list[dict[str, Any]]:
    """Query the hooks' database directly with the standard library."""
    path = home / "ccmemory.db"
    if not path.exists():
        return []
    conn = sqlite3.connect(str(path))
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute(sql, params).fetchall()]
    finally:
        conn.close()


def memories_of(home: Path, session_id: str) -> list[dict[str, Any]]:
    return rows(home, "SELECT * FROM memories WHERE session_id = ? ORDER BY seq", (session_id,))


def log_text(home: Path) -> str:
    path = home / "logs" / "hooks.log"
    return path.read_text() if path.exists() else ""


def assert_quiet_success(result: subprocess.CompletedProcess) -> None:
    """What every hook (except SessionStart with context) must do: exit 0, print nothing on stdout."""
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout == b"", result.stdout.decode()


def write_config(home: Path, config: dict[str, Any]) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.json").write_text(json.dumps(config))


def write_transcript(path: Path, prompts: list[str]) -> None:
    """A transcript JSONL like Claude Code's: user and assistant lines plus lines of other types."""
    lines = [{"type": "queue-operation", "operation": "enqueue"}]
    for index, prompt in enumerate(prompts):
        lines.append({"parentUuid": None, "isSidechain": False, "type": "user", "uuid": f"u{index}",
                      "message": {"role": "user", "content": prompt}, "timestamp": "2026-11-22T01:55:45.147Z"})
        lines.append({"type": "user", "isMeta": True, "message": {"role": "user", "content": "meta noise"}})
        lines.append({"type": "assistant", "uuid": f"a{index}",
                      "message": {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}})
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\nnot json at all\n")
