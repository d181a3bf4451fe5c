"""Staleness against the code: a real Edit of a file marks the older memories about it in search and SessionStart.

Captures go through the real hook process (:func:`testing.hooks.run_hook`), search through the CLI and the
MCP server over stdio, SessionStart through its hook; the files really change on disk.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from testing.cli import invoke
from testing.hooks import assert_quiet_success, common, rows, run_hook, tool_call
from testing.mcp import running_server

from ccmemory import db as database, memories, staleness

PRICING = "def apply_discount(price, rate):\n    return price * (1 - rate)\n"
MOVED = "from .discounts import apply_discount\n\n__all__ = ['apply_discount']\n"
OTHER = "def apply_tax(price):\n    return price * 1.2\n"


def read_call(session: str, project: Path, name: str, tool_use_id: str) -> dict:
    path = project / name
    return tool_call(session, project, "Read", {"file_path": str(path)},
                     {"type": "text", "file": {"filePath": str(path), "content": path.read_text() if path.is_file()
                                               else "", "numLines": 2, "totalLines": 2}}, tool_use_id)


def seen_of(home: Path, tool_use_id: str) -> dict:
    row = rows(home, "SELECT metadata FROM memories WHERE dedupe_key = ?", (tool_use_id,))[0]
    return json.loads(row["metadata"]).get(staleness.SEEN_KEY, {})


def session_start(home: Path, project: Path) -> str:
    result = run_hook("session_start", common("s3", project, "SessionStart", source="startup", model="m"), home)
    assert result.returncode == 0, result.stderr.decode()
    return json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]


def cli_hits(home: Path, project: Path, query: str) -> list[dict]:
    result = invoke(home, project, "search", query, "--mode", "keyword", "--limit", "10", "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def first_line(hit: dict) -> str:
    return hit["memory"]["content"].split("\n", 1)[0]


def promote(home: Path, session: str) -> None:
    """What SessionEnd does to salient memories, for all of them: SessionStart lists the project tier."""
    db = database.connect(home / "ccmemory.db", vectors=False)
    try:
        memories.promote(db, session, 0.0)
    finally:
        db.close()


def test_an_edit_by_a_later_session_marks_the_older_memories_stale(home: Path, project_dir: Path) -> None:
    (project_dir / "pricing.py").write_text(PRICING)
    (project_dir / "other.py").write_text(OTHER)
    for payload in (read_call("s1", project_dir, "pricing.py", "t1"), read_call("s1", project_dir, "other.py", "t2")):
        assert_quiet_success(run_hook("post_tool_use", payload, home))
    assert seen_of(home, "t1") == {"pricing.py": [len(PRICING), (project_dir / "pricing.py").stat().st_mtime_ns]}
    promote(home, "s1")

    # Nothing changed yet: nothing is stale.
    assert all(hit["stale"] == [] for hit in cli_hits(home, project_dir, "apply_discount apply_tax"))

    # A later session edits pricing.py (the file really changes, then the hook sees the Edit).
    (project_dir / "pricing.py").write_text(MOVED)
    edit = tool_call("s2", project_dir, "Edit",
                     {"file_path": str(project_dir / "pricing.py"), "old_string": PRICING, "new_string": MOVED},
                     {"filePath": str(project_dir / "pricing.py"), "originalFile": PRICING,
                      "structuredPatch": []}, "t3")
    assert_quiet_success(run_hook("post_tool_use", edit, home))
    promote(home, "s2")
    # And reads it, alone in its session (no neighbour lends it a score): the same text as the first read.
    assert_quiet_success(run_hook("post_tool_use", read_call("s4", project_dir, "pricing.py", "t4"), home))
    promote(home, "s4")

    hits = cli_hits(home, project_dir, "apply_discount pricing")
    by_line = {(hit["memory"]["session_id"], first_line(hit)): hit for hit in hits}
    old, reread = by_line["s1", "Read pricing.py (2 of 2 lines)"], by_line["s4", "Read pricing.py (2 of 2 lines)"]
    new = next(hit for (_, line), hit in by_line.items() if line.startswith("Edited pricing.py"))
    assert [entry["file"] for entry in old["stale"]] == ["pricing.py"]
    assert old["stale"][0]["change"] == staleness.CHANGED and old["stale"][0]["since"] == old["memory"]["created_at"]
    assert new["stale"] == [] and reread["stale"] == [] and by_line["s1", "Read other.py (2 of 2 lines)"]["stale"] == []
    # The same text about the same file: without the staleness factor the older would come first (store order).
    assert hits.index(reread) < hits.index(old) and hits.index(new) < hits.index(old)

    text = invoke(home, project_dir, "search", "apply_discount pricing", "--mode", "keyword").stdout
    assert "STALE: pricing.py changed since — recorded today" in text

    with running_server(home, project_dir) as server:
        answer = server.call("memory_search", {"query": "apply_discount pricing", "mode": "keyword"}).text
        record = server.call("memory_get", {"ids": [old["memory"]["id"], new["memory"]["id"]]}).text
    assert record.count("STALE: pricing.py changed since — recorded today") == 1
    assert "STALE: pricing.py changed since — recorded today" in answer
    assert answer.count("STALE:") == 1, answer  # the edit and other.py are current

    context = session_start(home, project_dir)
    lines = [line for line in context.splitlines() if line.startswith("- [")]
    stale_lines = [line for line in lines if "STALE (" in line]
    assert len(stale_lines) == 1 and f"[{old['memory']['id'][:8]}]" in stale_lines[0]
    assert "pricing.py changed since" in stale_lines[0]
    current = [line for line in lines if "STALE" not in line]
    assert any("Read other.py" in line for line in current) and any("Edited pricing.py" in line for line in current)
    assert lines.index(stale_lines[0]) > max(lines.index(line) for line in current), "stale ones come last"

    # A deleted file shows as gone.
    (project_dir / "other.py").unlink()
    gone = {first_line(hit): hit for hit in cli_hits(home, project_dir, "other")}["Read other.py (2 of 2 lines)"]
    assert gone["stale"][0]["change"] == staleness.GONE and gone["stale"][0]["changed_at"] is None


def test_a_touched_file_with_the_same_content_is_not_stale(home: Path, project_dir: Path) -> None:
    target = project_dir / "pricing.py"
    target.write_text(PRICING)
    assert_quiet_success(run_hook("post_tool_use", read_call("s1", project_dir, "pricing.py", "t1"), home))
    assert cli_hits(home, project_dir, "pricing")[0]["stale"] == []  # the search fingerprints the file
    stamp = target.stat().st_mtime_ns + 5_000_000_000
    os.utime(target, ns=(stamp, stamp))
    assert cli_hits(home, project_dir, "pricing")[0]["stale"] == []
    target.write_text(PRICING.replace("rate", "pct"))  # same size, other content
    os.utime(target, ns=(stamp + 10**9, stamp + 10**9))
    assert cli_hits(home, project_dir, "pricing")[0]["stale"][0]["change"] == staleness.CHANGED


def test_paths_outside_the_project_and_symlinks_out_are_never_recorded_or_read(
        home: Path, project_dir: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("TOKEN = 1\n")
    (project_dir / "link.py").symlink_to(outside / "secret.py")
    (project_dir / "inside.py").write_text("x = 1\n")
    payload = tool_call("s1", project_dir, "Grep", {"pattern": "x"},
                        {"filenames": [str(outside / "secret.py"), "link.py", "inside.py"], "numFiles": 3}, "t1")
    assert_quiet_success(run_hook("post_tool_use", payload, home))
    assert list(seen_of(home, "t1")) == ["inside.py"]

    # A file recorded inside the project that later becomes a link out is not looked at (neither read nor judged).
    (project_dir / "inside.py").unlink()
    (project_dir / "inside.py").symlink_to(outside / "secret.py")
    db = database.connect(home / "ccmemory.db", vectors=False)
    try:
        memory = memories.list_memories(db, session_id="s1")[0]
        assert staleness.check(db, [memory]) == {}
        # Stored states are data (an import can carry any): a path that leaves the project is not looked at.
        secret = (outside / "secret.py").stat()
        crafted = memories.add(db, project_id=memory.project_id, content="crafted", metadata={staleness.SEEN_KEY: {
            "../outside/secret.py": [secret.st_size + 1, 0], str(outside / "secret.py"): [0, 0],
            "../outside/missing.py": [1, 1]}})
        assert staleness.check(db, [crafted]) == {}
        assert db.scalar("SELECT COUNT(*) FROM file_fingerprints") == 0
    finally:
        db.close()


def test_capture_records_no_state_for_a_backfilled_call(project_dir: Path) -> None:
    """Only the capture hook records file states: an observation built elsewhere (a backfill) has none."""
    from ccmemory.config import load
    from ccmemory.observations import from_payload

    (project_dir / "pricing.py").write_text(PRICING)
    observation = from_payload(read_call("s1", project_dir, "pricing.py", "t1"), load(), cwd=str(project_dir),
                               root=str(project_dir))
    assert staleness.SEEN_KEY not in observation.metadata
