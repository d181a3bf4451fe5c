"""Replay the coding sessions of ``coderecall-dev.json.gz`` through the plugin's own hook entry point.

Follows the protocol of ``../shared/README.md``: a fresh ``git init`` project
P, transcripts in T, placeholders replaced at the start of strings, every
event run as ``python3 -S hooks/run.py <event>`` with the payload on stdin,
cwd P and the documented environment, each finished before the next. The data
is read from ``../shared/bench-data``; nothing of it is copied into the repository.

Used by the throughput and storage benchmarks; ``python bench/replay.py --home DIR``
replays into DIR and prints what it stored.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DATASET = REPO.parent.parent / "shared" / "bench-data" / "coderecall-dev.json.gz"
if not DATASET.exists():
    DATASET = Path("/work/shared/bench-data/coderecall-dev.json.gz")
HOOK = REPO / "hooks" / "run.py"
EVENT_ARGUMENT = {"SessionStart": "session_start", "PostToolUse": "post_tool_use",
                  "PostToolUseFailure": "post_tool_use", "Stop": "stop", "SessionEnd": "session_end"}


def load(path: Path = DATASET) -> dict[str, Any]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return json.load(handle)


def substitute(value: Any, project: str, transcripts: str) -> Any:
    """Replace the placeholders that open a string, in every string of a payload."""
    if isinstance(value, str):
        if value.startswith("{PROJECT}"):
            return project + value[len("{PROJECT}"):]
        if value.startswith("{TRANSCRIPTS}"):
            return transcripts + value[len("{TRANSCRIPTS}"):]
        return value
    if isinstance(value, list):
        return [substitute(item, project, transcripts) for item in value]
    if isinstance(value, dict):
        return {key: substitute(item, project, transcripts) for key, item in value.items()}
    return value


def make_project(root: Path) -> tuple[Path, Path]:
    """An empty git project P and a transcripts folder T beside it."""
    project, transcripts = root / "project", root / "transcripts"
    project.mkdir(parents=True, exist_ok=True)
    transcripts.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    return project, transcripts


def replay(data: dict[str, Any], home: Path, root: Path, *, sessions: int | None = None,
           python: str = sys.executable) -> dict[str, Any]:
    """Replay the first ``sessions`` sessions (all by default) into the data dir ``home``."""
    project, transcripts = make_project(root)
    started = time.perf_counter()
    calls = 0
    for session in data["sessions"][:sessions]:
        session = substitute(session, str(project), str(transcripts))
        with open(session["transcript_path"], "w", encoding="utf-8") as handle:
            for line in session["transcript"]:
                handle.write(json.dumps(line) + "\n")
        env = {**os.environ, "CCMEMORY_HOME": str(home), "CLAUDE_PROJECT_DIR": str(project),
               "CLAUDE_CODE_SESSION_ID": session["session_id"], "CLAUDECODE": "1"}
        for event in session["events"]:
            subprocess.run([python, "-S", str(HOOK), EVENT_ARGUMENT[event["hook"]]],
                           input=json.dumps(event["payload"]).encode(), cwd=project, env=env, check=True,
                           stdout=subprocess.DEVNULL)
            calls += event["hook"].startswith("PostToolUse")
    return {"project": str(project), "tool_calls": calls, "seconds": time.perf_counter() - started}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, default=None, help="data directory (default: a new temporary one)")
    parser.add_argument("--sessions", type=int, default=None)
    parser.add_argument("--python", default="/usr/bin/python3", help="interpreter of the hooks")
    args = parser.parse_args()
    home = args.home or Path(tempfile.mkdtemp(prefix="ccmemory-replay-"))
    outcome = replay(load(), home, Path(tempfile.mkdtemp(prefix="ccmemory-replay-root-")),
                     sessions=args.sessions, python=args.python)
    print(json.dumps({"home": str(home), **outcome}, indent=2))


if __name__ == "__main__":
    main()
