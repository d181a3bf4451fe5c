"""A capture the database cannot take is kept in ``<data dir>/spill/`` (redacted) and stored by the next capture.

Real hook processes against a real database file. The database is made unwritable for this version without
waiting: its schema is marked newer than this ccmemory understands (what a newer ccmemory leaves behind), or
its file cannot be opened. The hook raises for a write lock held past its retries the same way it does here
(:func:`ccmemory.db.unavailable`), only ~50 s later.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from testing.cli import invoke as run
from testing.hooks import assert_quiet_success, bash_call, common, log_text, memories_of, rows, run_hook, tool_call

from ccmemory import db as database, migrations, spill

SECRET = "Sw0rdfish-7e1c9a"
TOKEN = "ghp_0123456789abcdefghijklmnopqrstuvwxyz"


def set_schema_version(home: Path, version: int) -> None:
    store = database.connect(str(home / "ccmemory.db"), migrate=False)
    try:
        store.execute(f"PRAGMA user_version = {version}")
    finally:
        store.close()


def newer_schema(home: Path) -> None:
    """The store as a newer ccmemory leaves it: this one refuses to write it (StorageError), at once."""
    database.connect(str(home / "ccmemory.db")).close()
    set_schema_version(home, migrations.target_version() + 1)


def spilled(home: Path) -> list[Path]:
    return sorted((home / "spill").glob("*.json"))


def test_a_capture_the_database_refuses_is_kept_redacted_then_stored_by_the_next(home: Path,
                                                                                project_dir: Path) -> None:
    newer_schema(home)
    payload = bash_call("s-spill", project_dir, f"export DB_PASSWORD={SECRET}", f"token {TOKEN}\nok", "toolu_kept")
    assert_quiet_success(run_hook("post_tool_use", payload, home))
    assert rows(home, "SELECT id FROM memories") == []
    [kept] = spilled(home)
    if hasattr(os, "getuid"):
        assert stat.S_IMODE(kept.stat().st_mode) == 0o600
        assert stat.S_IMODE((home / "spill").stat().st_mode) == 0o700
    raw = kept.read_bytes()
    assert SECRET.encode() not in raw and TOKEN.encode() not in raw and b"0123456789abcdefghij" not in raw
    record = json.loads(raw)
    assert "DB_PASSWORD=[REDACTED]" in record["content"] and "[REDACTED]" in json.dumps(record["metadata"])
    assert (record["session_id"], record["tool_use_id"], record["root"]) == \
        ("s-spill", "toolu_kept", str(project_dir.resolve()))
    assert "is kept in" in log_text(home) and kept.name in log_text(home)
    doctor = run(home, project_dir, "doctor")
    assert "[note] spilled captures: 1 capture(s) the database could not take wait in" in doctor.stdout

    set_schema_version(home, migrations.target_version())  # the store can be written again
    assert_quiet_success(run_hook("post_tool_use", bash_call("s-spill", project_dir, "ls", "app.py", "toolu_next"),
                                  home))
    stored = memories_of(home, "s-spill")
    assert [m["dedupe_key"] for m in sorted(stored, key=lambda m: m["created_at"])] == ["toolu_kept", "toolu_next"]
    first = next(m for m in stored if m["dedupe_key"] == "toolu_kept")
    assert first["created_at"] == record["created_at"]  # the time its hook received the call, not the drain's
    assert first["content"] == record["content"]
    assert spilled(home) == [] and list((home / "spill").iterdir()) == []
    assert "stored 1 spilled capture(s)" in log_text(home)

    # The same capture spilled again (a drain that died between its commit and removing the file): stored once.
    (home / "spill" / kept.name).write_bytes(raw)
    assert_quiet_success(run_hook("post_tool_use", bash_call("s-spill", project_dir, "pwd", "/", "toolu_third"), home))
    assert sorted(m["dedupe_key"] for m in memories_of(home, "s-spill")) == ["toolu_kept", "toolu_next", "toolu_third"]
    assert spilled(home) == []


def test_a_database_file_that_cannot_be_opened_spills_too(home: Path, project_dir: Path) -> None:
    (home / "ccmemory.db").mkdir(parents=True)  # sqlite3: "unable to open database file"
    assert_quiet_success(run_hook("post_tool_use", bash_call("s-open", project_dir, "make", "done", "toolu_a"), home))
    assert len(spilled(home)) == 1
    (home / "ccmemory.db").rmdir()
    assert_quiet_success(run_hook("post_tool_use", bash_call("s-open", project_dir, "make", "done", "toolu_b"), home))
    assert sorted(m["dedupe_key"] for m in memories_of(home, "s-open")) == ["toolu_a", "toolu_b"]
    assert spilled(home) == []


def test_an_unreadable_spill_file_is_set_aside_not_retried(home: Path, project_dir: Path) -> None:
    folder = home / "spill"
    folder.mkdir(parents=True, mode=0o700)
    (folder / "00000000000000000001-broken.json").write_text('{"format": 1, "root": ')
    (folder / "00000000000000000002-wrong.json").write_text(json.dumps({"format": 1, "root": "/x"}))
    assert_quiet_success(run_hook("post_tool_use", bash_call("s-bad", project_dir, "ls", "a", "toolu_1"), home))
    assert [m["dedupe_key"] for m in memories_of(home, "s-bad")] == ["toolu_1"]
    assert spilled(home) == []
    assert sorted(path.name for path in (folder / "bad").iterdir()) == \
        ["00000000000000000001-broken.json", "00000000000000000002-wrong.json"]
    assert log_text(home).count("moved to") == 2
    assert_quiet_success(run_hook("post_tool_use", bash_call("s-bad", project_dir, "ls", "a", "toolu_2"), home))
    assert log_text(home).count("moved to") == 2


def test_a_full_spill_folder_drops_the_new_capture_and_says_so(home: Path, project_dir: Path) -> None:
    newer_schema(home)
    folder = home / "spill"
    folder.mkdir(mode=0o700)
    for index in range(spill.MAX_FILES):
        (folder / f"{index:020d}-waiting.json").write_text("{}")
    assert_quiet_success(run_hook("post_tool_use", bash_call("s-full", project_dir, "ls", "a", "toolu_1"), home))
    assert len(spilled(home)) == spill.MAX_FILES
    assert "is full" in log_text(home) and "this observation is lost" in log_text(home)


def test_a_symlinked_spill_folder_is_refused(home: Path, project_dir: Path, tmp_path: Path) -> None:
    newer_schema(home)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (home / "spill").symlink_to(elsewhere)
    assert_quiet_success(run_hook("post_tool_use", bash_call("s-link", project_dir, "ls", "a", "toolu_1"), home))
    assert list(elsewhere.iterdir()) == []
    assert "ccmemory keeps no capture there" in log_text(home)


def test_captures_draining_at_once_store_each_spilled_capture_once(home: Path, project_dir: Path) -> None:
    """Spilled calls without a ``tool_use_id`` have no dedupe key: only the claim keeps two drains apart. A claim
    whose capture died (``<name>.json.<pid>``) is given back and stored."""
    newer_schema(home)
    payload = bash_call("s-race", project_dir, "echo 0", "0", "unused")
    del payload["tool_use_id"]
    assert_quiet_success(run_hook("post_tool_use", payload, home))
    [kept] = spilled(home)
    record = json.loads(kept.read_text())
    for index in range(1, spill.DRAIN_PER_RUN):  # more of the same call, as if spilled one after another
        record["content"] = f"Ran: echo {index} (Run it)\nOutput:\n{index}"
        kept.with_name(f"{kept.stem}-{index:03d}.json").write_text(json.dumps(record))
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    kept.rename(kept.with_name(f"{kept.name}.{int(gone.stdout)}"))
    set_schema_version(home, migrations.target_version())
    payloads = [bash_call("s-race", project_dir, "ls", "a", f"toolu_{index}") for index in range(4)]
    with ThreadPoolExecutor(4) as pool:
        for result in pool.map(lambda payload: run_hook("post_tool_use", payload, home), payloads):
            assert_quiet_success(result)
    contents = sorted(m["content"] for m in memories_of(home, "s-race"))
    assert contents == sorted([f"Ran: echo {index} (Run it)\nOutput:\n{index}" for index in range(spill.DRAIN_PER_RUN)]
                              + ["Ran: ls (Run it)\nOutput:\na"] * 4)
    assert list((home / "spill").iterdir()) == []


def test_captures_spilled_for_a_session_that_ended_since_are_settled_and_promoted_when_stored(
        home: Path, project_dir: Path) -> None:
    """A spilled capture may be stored long after its session ended, by a capture of another session: the
    session it belongs to is then settled and promoted as its SessionEnd would have done with it."""
    failing = [tool_call("s-ended", project_dir, "Bash", {"command": command}, None, tool_use_id,
                         event="PostToolUseFailure", error="Exit code 1") for command, tool_use_id in
               (("pytest -q", "toolu_fails"), ("npm run build", "toolu_unfixed"))]
    assert_quiet_success(run_hook("post_tool_use", failing[0], home))
    set_schema_version(home, migrations.target_version() + 1)  # the store refuses the next two captures
    for payload in (bash_call("s-ended", project_dir, "pytest tests/", "3 passed", "toolu_fix"), failing[1]):
        assert_quiet_success(run_hook("post_tool_use", payload, home))
    assert len(spilled(home)) == 2
    set_schema_version(home, migrations.target_version())
    assert_quiet_success(run_hook("session_end", common("s-ended", project_dir, "SessionEnd", reason="other"), home))
    assert [(m["dedupe_key"], m["tier"]) for m in memories_of(home, "s-ended") if m["source"] == "capture"] == \
        [("toolu_fails", "project")]

    assert_quiet_success(run_hook("post_tool_use", bash_call("s-next", project_dir, "ls", "a", "toolu_next"), home))
    assert spilled(home) == []
    stored = {m["dedupe_key"]: m for m in memories_of(home, "s-ended") if m["source"] == "capture"}
    assert (stored["toolu_fails"]["category"], stored["toolu_fails"]["tier"]) == ("general", "session")
    assert json.loads(stored["toolu_fails"]["metadata"])["fixed_by"] == stored["toolu_fix"]["id"]
    assert (stored["toolu_unfixed"]["category"], stored["toolu_unfixed"]["tier"]) == ("gotcha", "project")
    assert [m["tier"] for m in memories_of(home, "s-next")] == ["session"]
