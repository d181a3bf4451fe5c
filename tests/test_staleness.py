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


TWO = "def apply_discount(price, rate):\n    return price * (1 - rate)\n\n\ndef apply_tax(price):\n    return price * 1.2\n"


def edit_call(session: str, project: Path, old: str, new: str, tool_use_id: str) -> dict:
    """Change pricing.py on disk (replace ``old`` by ``new``), then the Edit payload Claude Code sends for it."""
    path = project / "pricing.py"
    before = path.read_text()
    path.write_text(before.replace(old, new))
    return tool_call(session, project, "Edit", {"file_path": str(path), "old_string": old, "new_string": new},
                     {"filePath": str(path), "originalFile": before, "structuredPatch": []}, tool_use_id)


def test_an_edit_of_a_function_supersedes_what_older_memories_said_about_that_function(
        home: Path, project_dir: Path) -> None:
    (project_dir / "pricing.py").write_text(TWO)
    for payload in (
            edit_call("s1", project_dir, "    return price * 1.2\n", "    return price * 1.25\n", "t1"),
            edit_call("s1", project_dir, "    return price * (1 - rate)\n", "    return price * (1 - rate) + 0\n", "t2"),
            tool_call("s1", project_dir, "Grep", {"pattern": "apply_tax"}, {"filenames": ["pricing.py"], "numFiles": 1},
                      "t3")):
        assert_quiet_success(run_hook("post_tool_use", payload, home))
    assert json.loads(rows(home, "SELECT metadata FROM memories WHERE dedupe_key = 't1'")[0]["metadata"])["scope"] \
        == "apply_tax"
    # A later session edits apply_discount again: the file really changes, then the hook sees the Edit.
    assert_quiet_success(run_hook("post_tool_use", edit_call(
        "s2", project_dir, "    return price * (1 - rate) + 0\n", "    return round(price * (1 - rate), 2)\n", "t4"), home))

    by_id = {hit["memory"]["metadata"]["tool_use_id"]: hit for hit in cli_hits(home, project_dir, "apply_discount apply_tax")}
    assert by_id["t4"]["stale"] == []
    # The older edit of apply_discount is stale for that function, and ranks below the newer one.
    assert [(e["file"], e["change"], e.get("function")) for e in by_id["t2"]["stale"]] == \
        [("pricing.py", staleness.CHANGED, "apply_discount")]
    ranked = cli_hits(home, project_dir, "apply_discount")
    order = [hit["memory"]["metadata"]["tool_use_id"] for hit in ranked]
    assert order.index("t4") < order.index("t2")
    # What was said about apply_tax (its edit, a search naming it) is not marked as apply_tax changed: the file
    # changed elsewhere, a soft mark that keeps more of the score.
    for untouched in ("t1", "t3"):
        [entry] = by_id[untouched]["stale"]
        assert "function" not in entry and entry["elsewhere"] == ["apply_discount"], entry
    text = invoke(home, project_dir, "search", "apply_discount apply_tax", "--mode", "keyword").stdout
    assert "STALE: apply_discount in pricing.py changed since — recorded today" in text
    assert "STALE: pricing.py changed elsewhere (apply_discount) — recorded today" in text
    assert "apply_tax in pricing.py changed" not in text
    promote(home, "s1")
    promote(home, "s2")
    context = session_start(home, project_dir)
    assert "apply_discount in pricing.py changed since" in context and "apply_tax in pricing.py" not in context

    # Changed again outside Claude Code, after the last edit: no longer accounted for, the file changed.
    (project_dir / "pricing.py").write_text(TWO + "\n# reformatted\n")
    [entry] = {hit["memory"]["metadata"]["tool_use_id"]: hit
               for hit in cli_hits(home, project_dir, "apply_tax")}["t1"]["stale"]
    assert "elsewhere" not in entry and "function" not in entry


def test_a_write_between_the_edits_leaves_the_file_level_mark(home: Path, project_dir: Path) -> None:
    """A Write names no function: what it changed is unknown, so a memory about apply_tax is marked as before."""
    path = project_dir / "pricing.py"
    path.write_text(TWO)
    assert_quiet_success(run_hook("post_tool_use", edit_call(
        "s1", project_dir, "    return price * 1.2\n", "    return price * 1.25\n", "t1"), home))
    path.write_text(path.read_text() + "\n\nRATE = 0.2\n")
    assert_quiet_success(run_hook("post_tool_use", tool_call(
        "s2", project_dir, "Write", {"file_path": str(path), "content": path.read_text()},
        {"type": "update", "filePath": str(path), "content": path.read_text()}, "t2"), home))
    assert_quiet_success(run_hook("post_tool_use", edit_call(
        "s2", project_dir, "    return price * (1 - rate)\n", "    return round(price * (1 - rate), 2)\n", "t3"), home))
    by_id = {hit["memory"]["metadata"]["tool_use_id"]: hit for hit in cli_hits(home, project_dir, "apply_tax pricing")}
    [entry] = by_id["t1"]["stale"]
    assert entry["change"] == staleness.CHANGED and "elsewhere" not in entry and "function" not in entry
