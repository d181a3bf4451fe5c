"""``ccmemory consolidate``: dry run, merge, fold, decay, undo, and the storage budget, through the real CLI."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import zlib
from pathlib import Path
from typing import Any

import pytest

from ccmemory import clock, db as database, memories, session_summary
from testing.cli import MODULE, spawn
from testing.env import isolated_env
from testing.hooks import assert_quiet_success, bash_call, rows, run_hook

#: These tests compare every row a pass and its undo touch, and the fixtures' memories wait for vectors (or
#: carry a test model's): the worker ``consolidate`` starts would embed them meanwhile.
pytestmark = pytest.mark.usefixtures("idle_embedder")

OLD = "2024-01-%02dT10:00:00.000Z"
#: Recent enough not to be folded (consolidation.fold_after_days is 30).
RECENT = clock.now()
TEST_OUTPUT = "Ran: pytest -x (Run the tests)\n======== 212 passed in 3.41s ========\n" + "collected\n" * 40


def _observation(db: database.Database, project: int, session: str, content: str, metadata: dict[str, Any],
                 created_at: str, **extra: Any) -> memories.Memory:
    return memories.add(db, project_id=project, content=content, sector="episodic", tier="session",
                        tags=[metadata["tool"]], importance=extra.pop("salience", 0.45), session_id=session,
                        source="capture", metadata=metadata, created_at=created_at, **extra)


def _vector(db: database.Database, memory: memories.Memory) -> None:
    """A stored vector (any bytes do: the pass and its undo only move them)."""
    with db.transaction():
        db.execute("INSERT OR IGNORE INTO embedding_models(model_id) VALUES ('test-model')")
        db.execute("INSERT INTO memory_embeddings(item_seq, model, vector, indexed) VALUES (?, 1, ?, 1)",
                   (memory.seq, hashlib.sha384(memory.id.encode()).digest() * 8))
        db.execute("UPDATE memories SET needs_embedding = 0 WHERE seq = ?", (memory.seq,))


def _year_of_test_runs(db: database.Database, project: int, *, last_run: str = RECENT) -> dict[str, Any]:
    """Forty sessions each running the same tests (the last one at ``last_run``), reading files, editing one;
    some things that must stay."""
    made: dict[str, Any] = {"runs": [], "reads": [], "kept": []}
    for day in range(1, 41):
        session = f"session-{day:02d}"
        at = OLD % min(day, 28)
        run = _observation(db, project, session, TEST_OUTPUT.replace("3.41", f"{day}.0"),
                           {"tool": "Bash", "command": "pytest -x", "description": "Run the tests",
                            "tool_use_id": f"run-{day}"}, last_run if day == 40 else at)
        _vector(db, run)
        made["runs"].append(run.id)
        read = _observation(db, project, session, f"Read docs/notes_{day}.md (120 of 120 lines)\n# Notes {day}",
                            {"tool": "Read", "tool_use_id": f"read-{day}"}, at, files=[f"/p/docs/notes_{day}.md"],
                            salience=0.3)
        _vector(db, read)
        made["reads"].append(read.id)
        edit = _observation(db, project, session, f"Edited src/module_{day}.py in f{day}\n- old\n+ new",
                            {"tool": "Edit", "tool_use_id": f"edit-{day}", "scope": f"f{day}"}, at,
                            files=[f"/p/src/module_{day}.py"], salience=0.6)
        made["kept"].append(edit.id)
        session_summary.store_summary(db, project_id=project, session_id=session, method="extractive",
                                      text=f"Session summary ({at[:10]}; 3 tool calls)\nFiles changed: "
                                           f"src/module_{day}.py", files=[f"/p/src/module_{day}.py"])
    failure = _observation(db, project, "session-01", "Ran: make deploy (failed)\nerror: no target",
                           {"tool": "Bash", "command": "make deploy", "outcome": "failed", "tool_use_id": "f1"},
                           OLD % 1, category="gotcha", salience=0.75)
    recalled = _observation(db, project, "session-02", "Read docs/ARCH.md (10 of 10 lines)",
                            {"tool": "Read", "tool_use_id": "r2"}, OLD % 2, files=["/p/docs/ARCH.md"])
    memories.touch_references(db, [recalled.id], session_id="session-03")
    written = _observation(db, project, "session-04", "Wrote src/big.py (400 lines)\n" + "value = 1\n" * 400,
                           {"tool": "Write", "tool_use_id": "w4"}, OLD % 4, files=["/p/src/big.py"])
    _vector(db, written)
    made["written"] = written.id
    curated = memories.add(db, project_id=project, content="The deploy needs VPN access", created_at=OLD % 3)
    user_wide = memories.add(db, project_id=project, content="I prefer pytest -x", scope="user")
    made["kept"] += [failure.id, recalled.id, curated.id, user_wide.id]
    return made


def _snapshot(db: database.Database) -> dict[str, list[Any]]:
    """Every row a pass may touch, as stored (vectors as bytes)."""
    tables = {"memories": "seq", "memory_relationships": "id", "session_memories": "session_id, memory_id, usage_type",
              "sessions": "id", "memory_embeddings": "item_seq"}
    found = {}
    for table, order in tables.items():
        rows = db.rows(f"SELECT * FROM {table} ORDER BY {order}")
        if table == "memory_embeddings":
            rows = [{k: v for k, v in row.items() if k != "indexed"} for row in rows]
        found[table] = [json.dumps({k: v.hex() if isinstance(v, bytes) else v for k, v in row.items()}, sort_keys=True)
                        for row in rows]
    fts = db.rows("SELECT rowid FROM memories_fts WHERE memories_fts MATCH 'notes_7' ORDER BY rowid")
    found["fts"] = [row["rowid"] for row in fts]
    return found


def _file_digest(path: str) -> str:
    """The database file's and its WAL's sha256, read by another process: closing a descriptor of the file in
    this one would drop the POSIX locks this process's SQLite holds on it."""
    code = ("import hashlib, os, sys; p = sys.argv[1]; print(hashlib.sha256(b''.join(open(f, 'rb').read() "
            "for f in (p, p + '-wal') if os.path.exists(f))).hexdigest())")
    return subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True, check=True).stdout


def _cli(home: Path, project_dir: Path, *args: str) -> Any:
    result = spawn(home, project_dir, "consolidate", *args, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_dry_run_pass_and_undo(db: database.Database, project: int, project_dir: Path, home: Path) -> None:
    made = _year_of_test_runs(db, project)
    db.scalar("PRAGMA wal_checkpoint(TRUNCATE)")
    before, raw = _snapshot(db), _file_digest(db.path)

    dry = _cli(home, project_dir, "--dry-run")
    assert _file_digest(db.path) == raw, "a dry run leaves the file byte for byte as it was"
    assert dry["merged_groups"] == 1 and dry["merged_rows"] == 39
    assert dry["folded_rows"] == 40 and dry["folded_sessions"] == 40 and dry["thinned"] == 1
    assert dry["examples"]["merged"] == ["40× Ran: pytest -x (Run the tests)"]

    done = _cli(home, project_dir)
    assert (done["merged_rows"], done["folded_rows"]) == (39, 40) and done["pass_id"] == 1
    survivor = db.one("SELECT id, metadata FROM memories WHERE id = ?", (made["runs"][-1],))
    evidence = json.loads(survivor["metadata"])["evidence"]
    assert evidence["count"] == 40 and evidence["sessions"] == 40
    assert evidence["first_seen"] == OLD % 1 and evidence["last_seen"] == RECENT
    assert [entry[0] for entry in evidence["replaced"]] == made["runs"][29:39], "the newest ten it replaced"
    assert evidence["replaced"][-1][2] == "session-39"
    assert not db.scalar(f"SELECT COUNT(*) FROM memories WHERE id IN ({','.join('?' * 39)})", made["runs"][:-1]), \
        "merged-away runs are deleted"
    assert db.scalar("SELECT COUNT(*) FROM memory_embeddings") == 1, "only the survivor keeps a vector"
    thin = memories.get(db, made["written"], project_id=project)
    assert thin.content.startswith("Wrote src/big.py (400 lines)\nvalue = 1\n") and len(thin.content) < 400
    assert thin.content.endswith("characters of the file dropped by consolidation]")
    assert not db.scalar(f"SELECT COUNT(*) FROM memories WHERE id IN ({','.join('?' * 40)})", made["reads"])
    for kept in made["kept"]:
        assert not memories.get(db, kept, project_id=project).is_deleted
    found = spawn(home, project_dir, "search", "notes_7", "--limit", "5", "--mode", "keyword", "--json")
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)
    assert [(hit["memory"]["session_id"], hit["memory"]["source"]) for hit in hits] == [("session-07", "summary")], \
        "the folded read is still found through its session's summary"
    assert "Folded" in db.scalar("SELECT summary FROM sessions WHERE id = 'session-07'")

    undone = spawn(home, project_dir, "consolidate", "--undo")
    assert undone.returncode == 0 and "Undid consolidation pass 1" in undone.stdout, undone.stderr
    assert _snapshot(db) == before, "every row back as it was, vectors included"
    again = spawn(home, project_dir, "consolidate", "--undo")
    assert again.returncode != 0 and "No consolidation pass to undo" in again.stderr


def test_decay_lowers_only_what_was_never_retrieved(db: database.Database, project: int, project_dir: Path,
                                                    home: Path) -> None:
    made = _year_of_test_runs(db, project)
    _cli(home, project_dir)
    survivor = memories.get(db, made["runs"][-1], project_id=project)
    assert survivor.salience == 0.45, "merged survivors keep their salience"
    curated = memories.get(db, made["kept"][-2], project_id=project)
    assert curated.salience == 0.5, "only captured observations decay"
    failure = memories.get(db, made["kept"][40], project_id=project)
    assert failure.salience < 0.75 and failure.salience >= 0.75 * 0.25 - 1e-9
    recalled = memories.get(db, made["kept"][41], project_id=project)
    assert recalled.salience == 0.45, "a recalled observation does not decay"


def test_budget_drops_oldest_least_salient_never_protected(db: database.Database, project: int, project_dir: Path,
                                                          home: Path) -> None:
    made = _year_of_test_runs(db, project)
    reinforced = _observation(db, project, "session-05", "Ran: ls\n" + "x" * 3000, {"tool": "Bash", "command": "ls",
                              "tool_use_id": "ls-1"}, OLD % 5)
    memories.reinforce(db, reinforced.id, project_id=project, session_id="session-06")
    for number in range(1500):  # about 2 MB of distinct recent observations
        _observation(db, project, f"bulk-{number // 100}", f"Ran: echo {number}\n" + f"line {number} " * 200,
                     {"tool": "Bash", "command": f"echo {number}", "tool_use_id": f"bulk-{number}"},
                     f"2030-01-01T00:{number // 60 % 60:02d}:{number % 60:02d}.000Z")
    (home / "config.json").write_text(json.dumps({"storage": {"budget_mb": 10, "project_budget_mb": 1}}))
    assert db.scalar("SELECT COUNT(*) FROM memories") > 1500
    done = _cli(home, project_dir)
    assert done["budget"]["dropped"] > 0
    assert done["usage"]["projects"][0]["bytes"] <= 1_050_000, "within its budget, give or take the estimate"
    for kept in [*made["kept"][-2:], reinforced.id]:  # curated, user-wide, reinforced
        assert not memories.get(db, kept, project_id=project).is_deleted, kept
    assert db.scalar("SELECT COUNT(*) FROM memories WHERE source = 'summary'") == 40
    newest = db.scalar("SELECT COUNT(*) FROM memories WHERE content LIKE 'Ran: echo 1499%'")
    oldest = db.scalar("SELECT COUNT(*) FROM memories WHERE content LIKE 'Ran: echo 0\n%'")
    assert (newest, oldest) == (1, 0), "the oldest go first"
    stats = spawn(home, project_dir, "stats")
    assert "Budget:" in stats.stdout, stats.stdout


def test_an_old_merged_group_folds_into_its_session(db: database.Database, project: int, project_dir: Path,
                                                    home: Path) -> None:
    made = _year_of_test_runs(db, project, last_run=OLD % 28)
    done = _cli(home, project_dir)
    assert (done["merged_rows"], done["folded_rows"]) == (39, 41), "the survivor is old too: folded with the reads"
    assert not db.scalar(f"SELECT COUNT(*) FROM memories WHERE id IN ({','.join('?' * 40)})", made["runs"])
    assert "40× Ran: pytest -x (Run the tests)" in db.scalar("SELECT summary FROM sessions WHERE id = 'session-40'")
    assert db.scalar("SELECT COUNT(*) FROM memory_embeddings") == 0
    before = _snapshot(db)
    again = _cli(home, project_dir, "--dry-run")
    assert (again["merged_rows"], again["folded_rows"]) == (0, 0), "nothing left to do"
    assert _snapshot(db) == before


#: Commands run twice for the tests that stop a pass half way: hundreds of batches, so that the pass is
#: still running when the test, having seen its first batch, takes the write lock (even on a loaded machine).
GROUPS = 6000


def _repeats(db: database.Database, project: int, groups: int) -> None:
    """``groups`` commands each run twice: enough merge batches for a pass to be stopped half way."""
    with db.transaction():
        for group in range(groups):
            for run in range(2):
                _observation(db, project, f"bulk-{group % 50}", f"Ran: make step{group}\nok",
                             {"tool": "Bash", "command": f"make step{group}", "tool_use_id": f"b{group}-{run}"},
                             OLD % (run + 1))


def _start_pass(home: Path, project_dir: Path, db: database.Database) -> subprocess.Popen[bytes]:
    """A real ``ccmemory consolidate`` process, returned once it has written its first batch."""
    process = subprocess.Popen([*MODULE, "consolidate", "--json"], cwd=project_dir, env=isolated_env(home),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while not db.scalar("SELECT COUNT(*) FROM consolidation_undo"):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the pass wrote no batch"
        time.sleep(0.002)
    return process


def _logged(db: database.Database) -> dict[str, dict[str, Any]]:
    """Each memory the undo log holds, as it was before the pass first changed it."""
    found: dict[str, dict[str, Any]] = {}
    for step in db.rows("SELECT data FROM consolidation_undo ORDER BY step"):
        entry = json.loads(zlib.decompress(step["data"]))
        for row in entry["updated"] + entry["deleted"]:
            found.setdefault(row["id"], row)
    return found


def test_kill_9_half_way_loses_nothing_and_the_next_pass_finishes(db: database.Database, project: int,
                                                                  project_dir: Path, home: Path) -> None:
    _year_of_test_runs(db, project)
    _repeats(db, project, GROUPS)
    db.scalar("PRAGMA wal_checkpoint(TRUNCATE)")
    before = _snapshot(db)
    rows_before = {row["id"]: row for row in db.rows("SELECT * FROM memories")}

    process = _start_pass(home, project_dir, db)
    with db.transaction():  # its next batch waits for this write lock: it is killed in the middle of the pass
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
    assert process.returncode == -signal.SIGKILL
    assert db.scalar("PRAGMA integrity_check") == "ok"
    assert db.scalar("SELECT finished_at FROM consolidation_passes") is None, "killed before it finished"
    now = {row["id"]: row for row in db.rows("SELECT * FROM memories")}
    logged = _logged(db)
    assert 0 < len(set(rows_before) - set(now)) < GROUPS, "some groups merged, not all"
    for memory_id, row in rows_before.items():
        if now.get(memory_id) != row:
            assert logged.get(memory_id) == row, f"{memory_id} changed without its undo recorded"

    done = _cli(home, project_dir)
    assert done["resumed"] and done["pass_id"] == 1 and done["complete"]
    assert db.scalar("SELECT finished_at FROM consolidation_passes WHERE id = 1") is not None
    assert db.scalar("SELECT COUNT(*) FROM memories WHERE content LIKE 'Ran: make step%'") == GROUPS
    assert db.scalar("PRAGMA integrity_check") == "ok"
    assert _cli(home, project_dir, "--dry-run")["merged_rows"] == 0

    undone = spawn(home, project_dir, "consolidate", "--undo")
    assert undone.returncode == 0, undone.stderr
    assert _snapshot(db) == before, "one undo puts back both halves of the pass"


#: Hooks capturing during a pass: each must get its turn between two of the pass's batches.
HOOKS_DURING_A_PASS = 8


def _waits(db: database.Database, process: subprocess.Popen[bytes], threads: list[threading.Thread]) -> dict[int, int]:
    """While the hooks run: for each process that waited for the write lock (the pass aside), how many batches
    the pass wrote at least while it waited (counted only while it said it waited: a late look undercounts)."""
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    while any(thread.is_alive() for thread in threads):
        before = db.scalar("SELECT COUNT(*) FROM consolidation_undo")
        waiting = set(db.waiting_writers()) - {process.pid}
        after = db.scalar("SELECT COUNT(*) FROM consolidation_undo")
        for pid in waiting:
            first.setdefault(pid, after)
            last[pid] = before
        time.sleep(0.001)
    return {pid: last[pid] - first[pid] for pid in first}


def test_hooks_capturing_during_a_pass_lose_nothing(db: database.Database, project: int, project_dir: Path,
                                                    home: Path) -> None:
    """Hooks that find the write lock taken get it between two batches of the pass, not once it ends.

    SQLite's lock is not fair: a hook sleeping in its busy handler mostly missed the instants between the
    pass's back-to-back batches and waited for much of the pass (past its budget on a slow machine: its
    observation was lost). Counted while each hook said it waited, the pass writes a batch or two (the one
    under way, one begun as the hook came), never dozens (7 runs in 8 saw 13 to 282 without the give-way).
    """
    _repeats(db, project, GROUPS)
    process = _start_pass(home, project_dir, db)
    results: list[subprocess.CompletedProcess[bytes]] = []
    calls = [bash_call("s-live", project_dir, f"echo live-{n}", f"live-{n}", f"toolu_live{n}")
             for n in range(HOOKS_DURING_A_PASS)]
    threads = [threading.Thread(target=lambda call=call: results.append(run_hook("post_tool_use", call, home)))
               for call in calls]
    with db.transaction():  # the pass waits for this lock until a hook waits too: the hooks start during the pass
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 120
        while not set(db.waiting_writers()) - {process.pid}:
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "no hook came to write"
            time.sleep(0.002)
    waits = _waits(db, process, threads)
    out, err = process.communicate(timeout=180)
    assert process.returncode == 0, err
    assert json.loads(out)["merged_rows"] == GROUPS
    assert len(results) == HOOKS_DURING_A_PASS
    for result in results:
        assert_quiet_success(result)
    captured = rows(home, "SELECT content FROM memories WHERE session_id = 's-live' AND source = 'capture'")
    assert sorted(row["content"].split("\n")[0] for row in captured) == sorted(
        f"Ran: echo live-{n} (Run it)" for n in range(HOOKS_DURING_A_PASS))
    assert max(waits.values(), default=0) <= 2, f"batches the pass wrote while a hook waited (by pid): {waits}"
    assert db.scalar("PRAGMA integrity_check") == "ok"


def test_the_undo_log_is_kept_undo_days_then_dropped(db: database.Database, project: int, project_dir: Path,
                                                     home: Path) -> None:
    _year_of_test_runs(db, project)
    _cli(home, project_dir)
    assert db.scalar("SELECT COUNT(*) FROM consolidation_undo") > 0
    stats = spawn(home, project_dir, "stats")
    assert stats.returncode == 0 and ", kept until " in stats.stdout, stats.stdout
    # Eight days pass (the pass finished then): past consolidation.undo_days (7), the log goes.
    with db.transaction():
        db.execute("UPDATE consolidation_passes SET finished_at = '2020-01-01T00:00:00.000Z'")
    late = spawn(home, project_dir, "consolidate", "--undo")
    assert late.returncode != 0 and "within consolidation.undo_days (7) days" in late.stderr, late.stderr
    assert db.scalar("SELECT COUNT(*) FROM consolidation_undo") == 0
    assert ", kept until " not in spawn(home, project_dir, "stats").stdout
