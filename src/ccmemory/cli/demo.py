"""`ccmemory demo`: a recorded coding session fed through the plugin's own hook entry points.

Each event of ``demo_data/session.json`` runs as a separate hook process, as
Claude Code would run it, against a throwaway data dir (unless ``--home``).
Then the captured memory is embedded and searched, and the SessionStart
context the next session would receive is printed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from importlib import resources
from pathlib import Path
from typing import Any

import click

from .. import db as database
from .. import embeddings, isolation, memories, projects, search, sessions
from .common import describe, echo, preview

DEMO_QUERIES = ("why did the webhook tests fail", "verify_signature")


def _hook(name: str, payload: dict[str, Any], env: dict[str, str], cwd: Path) -> tuple[float, str]:
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-P", "-c", f"from ccmemory.hooks.runner import main; main({name!r})"],
        input=json.dumps(payload), capture_output=True, text=True, cwd=cwd, timeout=120,
        env=isolation.child_env(env, python_path=[isolation.package_parent()]),
    )
    return (time.perf_counter() - started) * 1000, result.stdout


def _events(project: Path, session_id: str) -> list[dict[str, Any]]:
    raw = resources.files("ccmemory").joinpath("demo_data/session.json").read_text()
    events = json.loads(raw.replace("{project}", str(project)).replace("{session}", session_id))["events"]
    transcript = str(project / ".demo-transcript.jsonl")
    for event in events:
        event["payload"] = {"session_id": session_id, "transcript_path": transcript, "cwd": str(project),
                            **event["payload"]}
    return events


@click.command()
@click.option("--home", type=click.Path(file_okay=False), default=None,
              help="Data dir to use (default: a new temporary one, so your own memory is untouched).")
def demo(home: str | None) -> None:
    """Replay a recorded session through the hooks, then search it and show the next session's context."""
    home_dir = Path(home) if home else Path(tempfile.mkdtemp(prefix="ccmemory-demo-"))
    project = home_dir / "demo-project"
    (project / ".git").mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "CCMEMORY_HOME": str(home_dir), "CLAUDE_PROJECT_DIR": str(project)}
    os.environ["CCMEMORY_HOME"] = str(home_dir)
    session_id = str(uuid.uuid4())
    echo(f"Data dir: {home_dir}\nReplaying a recorded session ({session_id[:8]}) through the hooks:")
    for event in _events(project, session_id):
        elapsed, _ = _hook(event["hook"], event["payload"], env, project)
        what = event["payload"].get("tool_name") or event["payload"]["hook_event_name"]
        echo(f"  {event['hook']:<14} {what:<13} {elapsed:6.0f} ms")

    db = database.connect(vectors=True)
    project_id = projects.project_id(db, project)
    captured = memories.list_memories(db, project_id=project_id, limit=100)
    echo(f"\nStored {len(captured)} memories; the session summary:")
    echo("  " + (sessions.get(db, session_id).get("summary") or "(none)").replace("\n", "\n  "))
    embedder = None
    if db.vectors_loaded:
        embedder = embeddings.get_embedder()
        embeddings.embed_pending(db, embedder)
    for query in DEMO_QUERIES:
        result = search.search_with_info(db, query, project_id=project_id, embedder=embedder, limit=3)
        echo(f"\nSearch ({result.mode_used}): {query}")
        for number, hit in enumerate(result.hits, 1):
            echo(f"{number}. [{hit.score:.2f}{' weak match' if hit.weak else ''}] {describe(hit.memory)}")
            echo(f"   {preview(hit.memory)}")
    db.close()

    next_session = {"session_id": str(uuid.uuid4()), "transcript_path": str(project / ".next.jsonl"),
                    "cwd": str(project), "hook_event_name": "SessionStart", "source": "startup"}
    _, output = _hook("session_start", next_session, env, project)
    context = json.loads(output)["hookSpecificOutput"]["additionalContext"] if output.strip() else "(nothing)"
    echo("\nWhat the next session is given at start (SessionStart additionalContext):\n")
    echo(context)
    if home is None:
        shutil.rmtree(home_dir, ignore_errors=True)
        echo(f"\nRemoved the demo's temporary data dir {home_dir}; `ccmemory demo --home DIR` keeps one.")


COMMANDS = [demo]
