"""Bounded inputs: what hostile or careless inputs did before, and the limit that now holds.

Each test asserts a limit the code enforces (a cap, a file-type check, a deadline that
interrupts SQLite), never how long something took.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ccmemory import db as database, documents, memories, search
from ccmemory.docmem import query
from ccmemory.errors import ValidationError
from ccmemory.hooks import payload as payloads
from testing.hooks import assert_quiet_success, bash_call, common, memories_of, rows, run_hook, tool_call


def test_capture_limit_is_10000_characters_of_json(home: Path, project_dir: Path) -> None:
    fits = "é" * 9998  # 9,998 characters, 19,996 bytes: JSON with quotes is exactly 10,000 characters
    run_hook("post_tool_use", tool_call("s-lim", project_dir, "Read", {"file_path": "a"}, fits, "t-fit"), home)
    run_hook("post_tool_use", tool_call("s-lim", project_dir, "Read", {"file_path": "b"}, fits + "é", "t-over"),
             home)
    assert [json.loads(m["metadata"])["tool_use_id"] for m in memories_of(home, "s-lim")] == ["t-fit"]


def test_quadratic_write_payload_is_stored_and_redacted(home: Path, project_dir: Path) -> None:
    content = "a." * 100_000 + "://x@" + " password=Hunter2Hunter2"
    payload = tool_call("s-quad", project_dir, "Write", {"file_path": str(project_dir / "f.txt"),
                                                          "content": content}, {"type": "create"}, "t-q")
    assert_quiet_success(run_hook("post_tool_use", payload, home))
    [memory] = memories_of(home, "s-quad")
    assert "Hunter2Hunter2" not in memory["content"] and len(memory["content"]) <= memories.MAX_CONTENT_CHARS


def test_lone_surrogates_and_deep_nesting_are_stored_not_dropped(home: Path, project_dir: Path) -> None:
    surrogate = b'{"session_id": "s-odd", "cwd": "%s", "tool_name": "Bash", "tool_use_id": "t-s", ' \
                b'"tool_input": {"command": "echo \\ud800 done"}, "tool_response": {"stdout": "x\\udfff"}}' \
                % str(project_dir).encode()
    assert_quiet_success(run_hook("post_tool_use", None, home, raw=surrogate))
    deep = {"session_id": "s-odd", "cwd": str(project_dir), "tool_name": "mcp__db__tree", "tool_use_id": "t-d",
            "tool_input": {"q": "tree"}}
    raw = json.dumps(deep)[:-1] + ', "tool_response": ' + "[" * 50_000 + "]" * 50_000 + "}"
    assert_quiet_success(run_hook("post_tool_use", None, home, raw=raw.encode()))
    stored = {json.loads(m["metadata"])["tool_use_id"]: m["content"] for m in memories_of(home, "s-odd")}
    assert set(stored) == {"t-s", "t-d"}
    assert "\\ud800" in stored["t-s"] and payloads.DEEP_PLACEHOLDER in stored["t-d"]


@pytest.mark.parametrize("where,depth", [("tool_input", 500), ("tool_input", 990), ("tool_response", 989)])
def test_nesting_the_parser_takes_but_later_readers_would_not_is_flattened_too(home: Path, project_dir: Path,
                                                                              where: str, depth: int) -> None:
    payload = tool_call("s-mid", project_dir, "mcp__db__tree", {"q": "tree"}, {"ok": True}, f"t-{depth}")
    payload[where] = {"q": "tree", "deep": "DEEP"}
    raw = json.dumps(payload).replace('"DEEP"', "[" * depth + "]" * depth)
    assert_quiet_success(run_hook("post_tool_use", None, home, raw=raw.encode()))
    [memory] = memories_of(home, "s-mid")
    assert payloads.DEEP_PLACEHOLDER in memory["content"]


def test_a_payload_of_too_many_containers_is_refused_before_it_is_parsed(home: Path, project_dir: Path) -> None:
    payload = tool_call("s-many", project_dir, "mcp__db__rows", {"q": "all"}, "RESPONSE", "t-many")
    raw = json.dumps(payload).replace('"RESPONSE"', "[" + ",".join(["{}"] * (payloads.MAX_CONTAINERS + 1)) + "]")
    assert_quiet_success(run_hook("post_tool_use", None, home, raw=raw.encode()))
    assert memories_of(home, "s-many") == []
    assert "arrays and objects" in (home / "logs" / "hooks.log").read_text()


@pytest.mark.parametrize("field,value", [
    ("cwd", "/tmp/a\\u0000b"), ("cwd", "/" + "a/" * 5000), ("cwd", "/tmp/\\ud800"), ("tool_use_id", "t\\ud800"),
    ("tool_use_id", "t" * 10_000), ("transcript_path", "/tmp/t\\u0000.jsonl")
])
def test_an_id_or_path_field_that_cannot_be_used_is_ignored_and_the_call_kept(home: Path, project_dir: Path,
                                                                              field: str, value: str) -> None:
    payload = bash_call("s-field", project_dir, "echo kept", "kept", "t-field")
    raw = json.dumps(payload).replace(json.dumps(payload[field]), '"' + value + '"', 1)
    assert_quiet_success(run_hook("post_tool_use", None, home, raw=raw.encode(), CLAUDE_PROJECT_DIR=str(project_dir)))
    [memory] = memories_of(home, "s-field")
    assert "kept" in memory["content"] and len(memory["metadata"]) < 2000
    assert f"ignored {field}" in (home / "logs" / "hooks.log").read_text()


def test_a_session_id_that_cannot_be_used_stores_nothing_and_says_so(home: Path, project_dir: Path) -> None:
    raw = json.dumps(bash_call("SID", project_dir, "echo x", "x", "t-sid")).replace('"SID"', '"s\\ud800"')
    assert_quiet_success(run_hook("post_tool_use", None, home, raw=raw.encode()))
    assert rows(home, "SELECT * FROM memories") == [] and rows(home, "SELECT * FROM sessions") == []
    assert "ignored session_id" in (home / "logs" / "hooks.log").read_text()


def test_a_multi_edit_whose_edits_are_not_a_list_is_still_captured(home: Path, project_dir: Path) -> None:
    payload = tool_call("s-me", project_dir, "MultiEdit", {"file_path": "a.py", "edits": 5}, {"ok": True}, "t-me")
    assert_quiet_success(run_hook("post_tool_use", payload, home))
    [memory] = memories_of(home, "s-me")
    assert "Edited" in memory["content"] and "(0 edits)" in memory["content"]


def test_flatten_deep_keeps_strings_and_shallow_structure() -> None:
    text = json.dumps({"a": 'x[\\"{', "b": [[[[1]]]], "c": 2})
    assert json.loads(payloads.flatten_deep(text, 2)) == {"a": 'x[\\"{', "b": [payloads.DEEP_PLACEHOLDER], "c": 2}


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "directory", "missing"])
def test_stop_hook_reads_only_a_regular_transcript(home: Path, project_dir: Path, kind: str) -> None:
    transcript = {"fifo": project_dir / "t.jsonl", "dev-zero": Path("/dev/zero"), "directory": project_dir,
                  "missing": project_dir / "nope.jsonl"}[kind]
    if kind == "fifo":
        os.mkfifo(transcript)
    run_hook("post_tool_use", bash_call("s-t", project_dir, "make test", "ok", "t1"), home)
    payload = common("s-t", project_dir, "Stop", transcript_path=str(transcript),
                     last_assistant_message="All tests pass now.")
    assert_quiet_success(run_hook("stop", payload, home))  # returns (run_hook's guard is 60 s; a FIFO hung forever)
    summary = rows(home, "SELECT summary FROM sessions WHERE id = 's-t'")[0]["summary"]
    assert "All tests pass now." in summary


def test_docs_ingest_paths(db: database.Database, project: int, project_dir: Path, tmp_path: Path) -> None:
    inside = project_dir / "notes.md"
    inside.write_text("# Notes\n\nThe token is API_TOKEN=abcdef123456.\n")
    document = documents.ingest(db, project_id=project, path=str(inside), root=str(project_dir))
    assert document.chunk_count == 1
    chunk = db.scalar("SELECT content FROM chunks WHERE document_id = ?", (document.id,))
    assert "abcdef123456" not in chunk and "[REDACTED]" in chunk
    outside = tmp_path / "elsewhere.md"
    outside.write_text("secret notes")
    (project_dir / "link.md").symlink_to(outside)
    os.mkfifo(project_dir / "pipe.md")
    for path, message in ((str(outside), "outside the project"), ("/etc/hostname", "outside the project"),
                          (str(project_dir / "link.md"), "outside the project"),
                          (str(project_dir / "pipe.md"), "not a regular file"),
                          ("/dev/zero", "outside the project")):
        with pytest.raises(ValidationError, match=message):
            documents.ingest(db, project_id=project, path=path, root=str(project_dir))
    with pytest.raises(TypeError, match="root="):  # every door (the CLI too) names the project the file must be in
        documents.ingest(db, project_id=project, path=str(inside))
    for odd, message in ((str(project_dir / "a\0b.md"), "NUL byte"), (str(project_dir / "a\ud800.md"), "surrogate")):
        with pytest.raises(ValidationError, match=message):
            documents.ingest(db, project_id=project, path=odd, root=str(project_dir))
    with pytest.raises(ValidationError, match="limited to"):
        documents.ingest(db, project_id=project, content="x" * (documents.MAX_DOCUMENT_BYTES + 1))


def test_query_length_is_capped(db: database.Database, project: int) -> None:
    memories.add(db, project_id=project, content="the deploy script")
    with pytest.raises(ValidationError, match="at most 2,000"):
        search.search(db, "deploy " * 40_000, project_id=project, mode="keyword")
    assert search.search(db, "deploy " * 200, project_id=project, mode="keyword")


@pytest.mark.parametrize("sql,error", [
    ("SELECT printf('%.*c', 1000000000, 'x')", "ran longer than|exceed"),
    ("SELECT zeroblob(1000000000)", "exceed 1,000,000 bytes"),
    ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c", "ran longer than"),
    ("SELECT 1 " + " " * query.MAX_SQL_CHARS, "at most 10,000"),
])
def test_docmem_query_limits(db: database.Database, project: int, sql: str, error: str) -> None:
    with pytest.raises(ValidationError, match=error):
        query.run(db, project, sql, 10, deadline_seconds=0.5)


def test_docmem_query_answer_size_is_capped(db: database.Database, project: int) -> None:
    sql = ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 100) "
           "SELECT x, printf('%.*c', 900000, 'y') AS big, randomblob(64) AS blob FROM c")
    found, more = query.run(db, project, sql, 100)
    assert more and sum(len(str(v)) for row in found for v in row.values()) <= query.MAX_RESULT_CHARS + 1000
    assert found[0]["blob"] == "[blob, 64 bytes]"


def test_mcp_answers_are_capped() -> None:
    from ccmemory.mcp import runtime

    text = runtime.bounded_result("x" * (runtime.MAX_RESULT_CHARS * 3) + "\ud800")
    assert len(text) < runtime.MAX_RESULT_CHARS + 200 and "more characters cut" in text


def test_ids_longer_than_a_uuid_are_not_looked_up(db: database.Database, project: int) -> None:
    assert memories.get_many(db, ["f" * 10_000], project_id=project) == ([], ["f" * memories.MAX_ID_CHARS])
