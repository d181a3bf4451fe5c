"""Concurrency and crash loops: parallel captures stored exactly once, kill -9 never corrupts.

Each loop has a short form that always runs and a long form (marked ``long``; ``.ci/run`` sets
``CCMEMORY_LONG_TESTS=1`` to run it) with the sizes of the issue-11 probe: 1,600 parallel
captures, 100 kills of a writer, kills of ``ccmemory embed`` until it finishes. The assertions
are counts and SQLite's own integrity checks, never times.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from ccmemory import db as database, embeddings
from testing.cli import MODULE
from testing.env import isolated_env
from testing.hooks import HOOK_PYTHON, log_text, tool_call, wait_for_background_captures
from testing.repo import HOOKS, SOURCE



def _integrity(path: Path) -> None:
    db = database.connect(path)
    try:
        assert db.scalar("PRAGMA integrity_check") == "ok"
        assert db.scalar("PRAGMA foreign_key_check") is None
        db.execute("INSERT INTO memories_fts(memories_fts) VALUES ('integrity-check')")
        assert db.scalar("SELECT COUNT(*) FROM memories_fts") == db.scalar("SELECT COUNT(*) FROM memories")
    finally:
        db.close()


def _parallel_captures(home: Path, project_dir: Path, calls: int, workers: int) -> None:
    def capture(index: int) -> int:
        payload = tool_call(f"s-par-{index % 8}", project_dir, "Bash", {"command": f"echo {index}"},
                            {"stdout": str(index)}, f"toolu-{index}")
        data = json.dumps(payload).encode()
        return subprocess.run([HOOK_PYTHON, "-S", str(HOOKS / "run.py"), "post_tool_use"], input=data,
                              capture_output=True, env=isolated_env(home), timeout=300).returncode

    indexes = [i for i in range(calls)] * 2  # every payload delivered twice, as a retrying client would
    random.Random(11).shuffle(indexes)
    with ThreadPoolExecutor(workers) as pool:
        assert set(pool.map(capture, indexes)) == {0}
    wait_for_background_captures(home)  # each hook stores its observation in a child after it exits
    db = database.connect(home / "ccmemory.db")
    try:
        assert db.scalar("SELECT COUNT(*) FROM memories WHERE source = 'capture'") == calls
        assert db.scalar("SELECT COUNT(DISTINCT dedupe_key) FROM memories") == calls
    finally:
        db.close()
    assert "locked" not in log_text(home).lower() and "ERROR" not in log_text(home)
    _integrity(home / "ccmemory.db")


@pytest.mark.parametrize("calls", [60, pytest.param(1600, marks=pytest.mark.long)])
def test_parallel_captures_are_stored_exactly_once(home: Path, project_dir: Path, calls: int) -> None:
    _parallel_captures(home, project_dir, calls=calls, workers=16)


WRITER = """
import sys
from ccmemory import db as database, memories, projects
db = database.connect(sys.argv[1])
project = projects.project_id(db, sys.argv[2])
print("ready", flush=True)
i = 0
while True:
    memories.add(db, project_id=project, content=f"writer memory {i} " + "x" * (i % 500), session_id="s-kill")
    i += 1
"""


def _kill_writers(home: Path, project_dir: Path, kills: int) -> None:
    path = home / "ccmemory.db"
    database.connect(path).close()
    env = isolated_env(home, PYTHONPATH=str(SOURCE))
    rng = random.Random(109)
    for _ in range(kills):
        process = subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(project_dir)], env=env,
                                   stdout=subprocess.PIPE, text=True)
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.0, 0.15))  # kill at a random point of its write loop
        process.send_signal(signal.SIGKILL)
        process.wait()
    _integrity(path)
    db = database.connect(path)
    try:
        assert db.scalar("SELECT COUNT(*) FROM memories") > 0
        memories_linked = db.scalar("SELECT COUNT(*) FROM memories m JOIN sessions s ON s.id = m.session_id "
                                    "WHERE s.id = 's-kill'")  # a memory's session is its session_id
        assert memories_linked == db.scalar("SELECT COUNT(*) FROM memories"), "each add is one transaction"
    finally:
        db.close()


@pytest.mark.parametrize("kills", [8, pytest.param(100, marks=pytest.mark.long)])
def test_kill_9_of_writers_never_corrupts(home: Path, project_dir: Path, kills: int) -> None:
    _kill_writers(home, project_dir, kills=kills)


def _kill_embed(home: Path, project_dir: Path, kills: int) -> None:
    path = home / "ccmemory.db"
    db = database.connect(path)
    try:
        from ccmemory import memories, projects

        project = projects.project_id(db, project_dir)
        for i in range(400):
            memories.add(db, project_id=project, content=f"memory number {i} about topic {i % 17}")
    finally:
        db.close()
    env = isolated_env(home)
    command = [*MODULE, "embed", "--batch-size", "16"]
    model = embeddings.configured_spec().model_id
    pending = []
    for _ in range(kills):
        process = subprocess.Popen(command, env=env, cwd=project_dir, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
        db = database.connect(path)
        try:
            start = embeddings.pending_count(db, model)
            deadline = time.monotonic() + 120
            while embeddings.pending_count(db, model) == start and process.poll() is None \
                    and time.monotonic() < deadline:
                time.sleep(0.05)  # wait until it has committed at least one batch
            process.send_signal(signal.SIGKILL)
            process.wait()
            pending.append(embeddings.pending_count(db, model))
        finally:
            db.close()
    assert pending == sorted(pending, reverse=True), "every killed run kept what it committed"
    finished = subprocess.run(command, env=env, cwd=project_dir, capture_output=True, text=True, timeout=600)
    assert finished.returncode == 0, finished.stderr
    _integrity(path)
    db = database.connect(path, vectors=True)
    try:
        assert embeddings.pending_count(db, model) == 0
        assert db.scalar("SELECT COUNT(*) FROM memory_embeddings") == 400
    finally:
        db.close()


@pytest.mark.parametrize("kills", [2, pytest.param(9, marks=pytest.mark.long)])
def test_kill_9_of_embed_resumes(home: Path, project_dir: Path, kills: int) -> None:
    _kill_embed(home, project_dir, kills=kills)
